"""Exercise (Part II, mismatch chapter): TRL's default correction, sequence-level masked IS.

The learner writes fn(train, sample, mask, cap) -> per-token weights [B, T] for float64
log-probs [B, T] and a bool mask: each row's ratio is exp(sum over its active tokens of
log p_train - log p_sample); a row whose ratio exceeds `cap` gets weight 0 on every token,
any other row gets its ratio on its active tokens; inactive tokens get 0. The expected
values come from training.mismatch.importance_weights(..., "sequence_mask", cap).
"""

from __future__ import annotations

import torch

from verifiable_grpo.exercises.checking import Case, compare_numbers, run_cases
from verifiable_grpo.training.mismatch import importance_weights

PER_TOKEN = (
    "looks like one ratio per token: the sequence modes share the product of the row's token ratios"
)
TRUNCATED = (
    "looks like the ratio was clamped to the cap: masking drops the whole row (weight 0) instead"
)
INVERTED = "looks like exp(log p_sample - log p_train): the ratio is train over sample"
PADDING_LEAK = "inactive tokens must get weight 0 and must not enter the row's sum"


def _inputs(seed: int):
    generator = torch.Generator().manual_seed(seed)
    sample = -torch.rand((4, 5), dtype=torch.float64, generator=generator) * 3
    shift = (torch.rand((4, 5), dtype=torch.float64, generator=generator) - 0.5) * 1.2
    train = sample + shift
    lengths = torch.tensor([5, 3, 1, 4])
    mask = torch.arange(5)[None, :] < lengths[:, None]
    # garbage where inactive: a leak shows up
    train = torch.where(mask, train, torch.full_like(train, 7.0))
    return train, sample, mask


def _call(fn, seed, cap):
    train, sample, mask = _inputs(seed)
    return fn(train.clone(), sample.clone(), mask.clone(), cap)


def cases() -> list[Case]:
    out = []
    for seed, cap in ((0, 3.0), (1, 3.0), (2, 1.5), (3, 2.0)):
        train, sample, mask = _inputs(seed)
        mistakes = {
            PER_TOKEN: importance_weights(train, sample, mask, "token_mask", cap),
            TRUNCATED: importance_weights(train, sample, mask, "sequence_truncate", cap),
            INVERTED: importance_weights(sample, train, mask, "sequence_mask", cap),
            PADDING_LEAK: importance_weights(
                train, sample, torch.ones_like(mask), "sequence_mask", cap
            ),
        }
        out.append(
            Case(
                f"random log-probs (seed {seed}), ragged rows, cap {cap:g}",
                lambda fn, seed=seed, cap=cap: _call(fn, seed, cap),
                importance_weights(train, sample, mask, "sequence_mask", cap),
                tolerance=1e-12,
                mistakes=mistakes,
                compare=compare_numbers,
            )
        )
    return out


def check_sequence_mask(fn, verbose: bool = True):
    """Run the hidden cases against fn(train, sample, mask, cap) -> weights [B, T]."""
    return run_cases("sequence-level masked importance sampling", fn, cases(), verbose)
