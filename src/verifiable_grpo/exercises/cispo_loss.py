"""Exercise (Part II, newer objectives): CISPO's per-token loss.

The learner writes fn(current, old, advantages, cap) -> per-token loss [B, T] for float64
log-probs current and old [B, T] (every token active) and advantages [B]: the importance
weight min(exp(current - old), cap), held constant (stop-gradient), times -A log p. Its
value and its gradient (min(rho, cap) x -A on every token) are checked against
training.surrogates.cispo_tokens; the usual slips (no stop-gradient, PPO's clip instead of
a cap, a missing log p) each get a hint.
"""

from __future__ import annotations

import torch

from verifiable_grpo.exercises.checking import Case, gradient_comparison, gradient_of, run_cases
from verifiable_grpo.training import losses, surrogates

NO_STOP_GRADIENT = (
    "the weight carries a gradient of its own: detach min(rho, cap) so that "
    "only log p is differentiated"
)
PPO_CLIP = (
    "this is PPO's clipped surrogate: CISPO never drops a token, it caps the weight and "
    "multiplies -A log p"
)
NO_LOG_PROB = "the loss needs log p itself: -sg(w) * A * log p, not -w * A"


def _inputs(seed: int):
    generator = torch.Generator().manual_seed(seed)
    old = -0.1 - 2 * torch.rand(2, 4, dtype=torch.float64, generator=generator)
    current = old + 0.8 * torch.randn(2, 4, dtype=torch.float64, generator=generator)
    current[0, 0] = old[0, 0] + 2.0  # a ratio of 7.4, above the cap
    advantages = torch.tensor([0.9, -0.6], dtype=torch.float64)
    return current, old, advantages


def _reference(current, old, advantages, cap):
    mask = torch.ones_like(current, dtype=torch.bool)
    batch = losses.TokenLogProbs(current, old, mask)
    return surrogates.cispo_tokens(batch, advantages, cap)[0]


def _mistakes(current, old, advantages, cap):
    ratio = torch.exp(current - old)
    a = advantages[:, None]
    ppo = -torch.minimum(ratio * a, ratio.clamp(0.8, 1.2) * a)
    return ratio.clamp(max=cap), ppo, -ratio.clamp(max=cap) * a


_compare_gradient = gradient_comparison("current")


def cases(cap: float = 5.0) -> list[Case]:
    out = []
    for seed in (0, 1):
        current, old, advantages = _inputs(seed)
        weight, ppo, no_log = _mistakes(current, old, advantages, cap)
        a = advantages[:, None]
        out.append(
            Case(
                f"value, seed {seed} (B=2, T=4, cap {cap:g})",
                lambda fn, c=current, o=old, adv=advantages: fn(c.clone(), o, adv, cap),
                _reference(current, old, advantages, cap),
                tolerance=1e-12,
                mistakes={PPO_CLIP: ppo, NO_LOG_PROB: no_log},
            )
        )
        out.append(
            Case(
                f"gradient w.r.t. current, seed {seed}",
                lambda fn, c=current, o=old, adv=advantages: gradient_of(
                    lambda x, *r: fn(x, *r), c, o, adv, cap
                ),
                -weight * a,
                tolerance=1e-12,
                compare=_compare_gradient,
                mistakes={
                    NO_STOP_GRADIENT: -weight * a * (1 + current * (torch.exp(current - old) < cap))
                },
            )
        )
    return out


def check_cispo_loss(fn, verbose: bool = True):
    """Run the hidden cases against fn(current[B, T], old[B, T], advantages[B], cap)."""
    return run_cases("CISPO per-token loss", fn, cases(), verbose)
