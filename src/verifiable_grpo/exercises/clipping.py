"""Exercise (chapter 3): the clipped surrogate of one token, min(rho A, clip(rho) A).

The learner writes fn(ratio, advantage, epsilon) -> the per-token objective (to be
maximised), for float64 tensors of one shape. The checker compares the values and, through
autograd, the gradient with respect to rho: rho A's slope A where the unclipped branch is
the minimum, exactly 0 where the clipped branch is.
"""

from __future__ import annotations

import torch

from verifiable_grpo.exercises.checking import Case, compare_numbers, run_cases

RATIOS = [0.5, 0.7, 0.79, 0.9, 1.0, 1.1, 1.21, 1.3, 2.0]
CLIP_ALWAYS = (
    "looks like clip(rho) * A alone: without the min, a token that moved the wrong "
    "way loses its gradient too"
)
MAX_NOT_MIN = "looks like max instead of min: the objective must take the pessimistic branch"
CLIPPED_PRODUCT = (
    "looks like the product rho * A was clipped to [1 - eps, 1 + eps]: clip the "
    "ratio, then multiply by A"
)


def _objective(r: float, a: float, eps: float, kind: str = "right") -> float:
    clipped = min(max(r, 1 - eps), 1 + eps)
    if kind == "clip":
        return clipped * a
    if kind == "max":
        return max(r * a, clipped * a)
    if kind == "product":
        return min(max(r * a, 1 - eps), 1 + eps)
    return min(r * a, clipped * a)


def _slope(r: float, a: float, eps: float, kind: str = "right") -> float:
    """d objective / d rho, by hand: A on the selected unclipped branch, 0 on the clipped one."""
    clipped = min(max(r, 1 - eps), 1 + eps)
    inside = 1 - eps < r < 1 + eps
    if kind == "clip":
        return a if inside else 0.0
    if kind == "max":
        return a if r * a >= clipped * a and (inside or r * a > clipped * a) else 0.0
    return a if r * a <= clipped * a and (inside or r * a < clipped * a) else 0.0


def _values(fn, a, eps):
    ratio = torch.tensor(RATIOS, dtype=torch.float64)
    return fn(ratio, torch.full_like(ratio, a), eps)


def _gradient(fn, a, eps):
    ratio = torch.tensor(RATIOS, dtype=torch.float64, requires_grad=True)
    out = fn(ratio, torch.full_like(ratio, a), eps)
    if not isinstance(out, torch.Tensor) or not out.requires_grad:
        return None
    out.sum().backward()
    return ratio.grad


def _compare_gradient(got, expected, tolerance):
    if got is None:
        return (
            "no gradient reached rho: keep rho in the graph (no .item(), .detach() or "
            "numpy inside the function)"
        )
    return compare_numbers(got, expected, tolerance)


def cases() -> list[Case]:
    out = []
    for a, eps in ((1.0, 0.2), (-1.0, 0.2), (0.5, 0.15), (-2.0, 0.25)):
        where = f"A = {a:+g}, eps = {eps:g}, rho = {RATIOS}"
        out.append(
            Case(
                f"objective, {where}",
                lambda fn, a=a, eps=eps: _values(fn, a, eps),
                [_objective(r, a, eps) for r in RATIOS],
                tolerance=1e-12,
                mistakes={
                    hint: [_objective(r, a, eps, kind) for r in RATIOS]
                    for hint, kind in (
                        (CLIP_ALWAYS, "clip"),
                        (MAX_NOT_MIN, "max"),
                        (CLIPPED_PRODUCT, "product"),
                    )
                },
            )
        )
        out.append(
            Case(
                f"d objective / d rho, {where}",
                lambda fn, a=a, eps=eps: _gradient(fn, a, eps),
                [_slope(r, a, eps) for r in RATIOS],
                tolerance=1e-12,
                compare=_compare_gradient,
                mistakes={
                    CLIP_ALWAYS: [_slope(r, a, eps, "clip") for r in RATIOS],
                    MAX_NOT_MIN: [_slope(r, a, eps, "max") for r in RATIOS],
                },
            )
        )
    return out


def check_clipped_surrogate(fn, verbose: bool = True):
    """Run the hidden cases against fn(ratio, advantage, epsilon) -> per-token objective."""
    return run_cases("clipped surrogate", fn, cases(), verbose)
