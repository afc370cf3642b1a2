"""Exercise (Part II, KL estimators): k3 with TRL's bias correction, as a per-token loss.

The learner writes fn(current_logprobs, reference_logprobs) -> per-token loss, for float64
log-probabilities [B, T] of tokens sampled from the current policy, on-policy (the old
log-probs are the current ones, detached). The value must be k3 = exp(q - p) - (q - p) - 1
and the gradient w.r.t. current_logprobs must be log p - log q, the per-sample gradient whose
expectation is grad KL(p || q). Forgetting the weight, or detaching it, gives k3's own
gradient 1 - exp(q - p), whose expectation is grad KL(q || p).
"""

from __future__ import annotations

import torch

from verifiable_grpo.exercises.checking import Case, gradient_comparison, gradient_of, run_cases

NO_WEIGHT = (
    "this is plain k3's gradient (the expected gradient of the forward KL): multiply "
    "k3 by the on-policy ratio exp(log p - log p.detach()) and keep it in the graph"
)
WRONG_SIGN = "the KL term has the wrong sign or direction: k3 uses log r = log q - log p"


def _logprobs(seed: int, shape=(2, 5)) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return -torch.rand(shape, generator=generator, dtype=torch.float64) * 3 - 0.01


def _k3(current, reference):
    log_r = reference - current
    return torch.expm1(log_r) - log_r


_compare_gradient = gradient_comparison("current_logprobs")


def cases() -> list[Case]:
    out = []
    for seed in (0, 1):
        current, reference = _logprobs(2 * seed), _logprobs(2 * seed + 1)
        out.append(
            Case(
                f"value, seed {seed} (B=2, T=5)",
                lambda fn, c=current, r=reference: fn(c.clone(), r.clone()),
                _k3(current, reference),
                tolerance=1e-12,
                mistakes={WRONG_SIGN: _k3(reference, current)},
            )
        )
        out.append(
            Case(
                f"gradient w.r.t. current_logprobs, seed {seed}",
                lambda fn, c=current, r=reference: gradient_of(fn, c, r),
                current - reference,
                tolerance=1e-12,
                compare=_compare_gradient,
                mistakes={NO_WEIGHT: -torch.expm1(reference - current)},
            )
        )
    same = _logprobs(7)
    out.append(
        Case(
            "current equals reference: value and gradient are 0",
            lambda fn: gradient_of(fn, same, same),
            torch.zeros_like(same),
            tolerance=0.0,
            compare=_compare_gradient,
        )
    )
    return out


def check_bias_corrected_k3(fn, verbose: bool = True):
    """Run the hidden cases against fn(current_logprobs[B, T], reference_logprobs[B, T])."""
    return run_cases("bias-corrected k3", fn, cases(), verbose)
