"""Exercise (chapter 4): the exact KL(p_cur || p_ref) at each visited prefix, block by block.

The learner writes fn(current_logits, reference_logits, block_size) -> KL per prefix, for
float64 logits [T, V]; the vocabulary must be walked in blocks of block_size, each block
normalised with the logsumexp of the FULL row. The checker compares values (float64
references from log_softmax over the whole row) and the gradient with respect to the
current logits, which must be p (log p - log q - KL) at every vocabulary entry.
"""

from __future__ import annotations

import torch

from verifiable_grpo.exercises.checking import Case, gradient_comparison, gradient_of, run_cases

PER_BLOCK = (
    "looks like each block was normalised on its own (a softmax inside the block): "
    "normalise every block with the logsumexp of the whole row"
)
REVERSED = "looks like KL(p_ref || p_cur): the expectation is under the current policy"
NAN_AT_ZERO = (
    "a token with logit -inf has probability 0 and contributes 0, not 0 * (-inf) = NaN: "
    "skip entries where p = 0"
)


def _logits(seed: int, rows: int, vocab: int, scale: float = 2.0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(rows, vocab, generator=generator, dtype=torch.float64) * scale


def reference_kl(current: torch.Tensor, reference: torch.Tensor) -> torch.Tensor:
    log_p, log_q = torch.log_softmax(current, -1), torch.log_softmax(reference, -1)
    p = log_p.exp()
    return torch.where(p > 0, p * (log_p - log_q), torch.zeros_like(p)).sum(-1)


def reference_gradient(current: torch.Tensor, reference: torch.Tensor) -> torch.Tensor:
    """d KL / d z_j = p_j (log p_j - log q_j - KL), written out (the identity chapter 4 derives)."""
    log_p, log_q = torch.log_softmax(current, -1), torch.log_softmax(reference, -1)
    p = log_p.exp()
    difference = torch.where(p > 0, log_p - log_q, torch.zeros_like(p))
    return p * (difference - reference_kl(current, reference).unsqueeze(-1))


def _per_block(current, reference, block_size):
    total = torch.zeros(current.shape[0], dtype=torch.float64)
    for start in range(0, current.shape[-1], block_size):
        total = total + reference_kl(
            current[:, start : start + block_size], reference[:, start : start + block_size]
        )
    return total


def _value_case(label, current, reference, block_size):
    mistakes = {REVERSED: reference_kl(reference, current)}
    if block_size < current.shape[-1]:
        mistakes[PER_BLOCK] = _per_block(current, reference, block_size)
    return Case(
        f"{label} (T={current.shape[0]}, V={current.shape[1]}, block_size={block_size})",
        lambda fn: fn(current.clone(), reference.clone(), block_size),
        reference_kl(current, reference),
        tolerance=1e-10,
        mistakes=mistakes,
    )


_compare_gradient = gradient_comparison("the current logits")


def cases() -> list[Case]:
    current, reference = _logits(0, 3, 10), _logits(1, 3, 10)
    with_zero = current.clone()
    with_zero[:, 3] = float("-inf")
    big = _logits(2, 2, 7, scale=1.0) + 1e4
    out = [
        _value_case("one block", current, reference, 10),
        _value_case("blocks that divide the vocabulary", current, reference, 5),
        _value_case("blocks that do not divide it", current, reference, 4),
        _value_case("blocks of one entry", current, reference, 1),
        _value_case(
            "logits near 1e4 (a softmax without its max shift overflows)", big, big.flip(-1), 3
        ),
        Case(
            "KL(p, p) is exactly 0 (T=3, V=10, block_size=4)",
            lambda fn: fn(current.clone(), current.clone(), 4),
            torch.zeros(3),
            tolerance=0.0,
        ),
    ]
    zero_case = _value_case(
        "a token the current policy never emits (logit -inf)", with_zero, reference, 4
    )
    zero_case.mistakes[NAN_AT_ZERO] = torch.full((3,), float("nan"))
    out.append(zero_case)
    out.append(
        Case(
            "gradient w.r.t. the current logits (T=3, V=10, block_size=4)",
            lambda fn: gradient_of(fn, current, reference, 4),
            reference_gradient(current, reference),
            tolerance=1e-10,
            compare=_compare_gradient,
        )
    )
    return out


def check_exact_kl(fn, verbose: bool = True):
    """Run the hidden cases against fn(current_logits[T, V], reference_logits[T, V], block_size)."""
    return run_cases("exact KL", fn, cases(), verbose)
