"""Exercise (Part III, LoRA): the forward pass of one adapted linear layer.

The learner writes fn(x, weight, a, b, alpha) -> y for float64 tensors: x [N, in],
weight [out, in] (frozen), a [r, in] and b [out, r] (the adapter, rank r = a.shape[0]);
y = x W^T + (alpha / r) x A^T B^T. References are written out by hand here.
"""

from __future__ import annotations

import torch

from verifiable_grpo.exercises.checking import Case, run_cases

NO_SCALE = "looks like the adapter is added unscaled: multiply it by alpha / r"
ALPHA_ONLY = "looks like the adapter is scaled by alpha: the scale is alpha / r (r = a.shape[0])"
NO_BASE = "looks like only the adapter's output: add the frozen layer's x W^T"


def _by_hand(x, weight, a, b, alpha):
    r = a.shape[0]
    return x @ weight.T + (alpha / r) * (x @ a.T @ b.T)


def _case(label, x, weight, a, b, alpha):
    adapter = x @ a.T @ b.T
    r = a.shape[0]
    return Case(
        f"{label}: x {x.tolist()}, rank {r}, alpha {alpha:g}",
        lambda fn: fn(x.clone(), weight.clone(), a.clone(), b.clone(), alpha),
        _by_hand(x, weight, a, b, alpha),
        tolerance=1e-12,
        mistakes={
            NO_SCALE: x @ weight.T + adapter,
            ALPHA_ONLY: x @ weight.T + alpha * adapter,
            NO_BASE: (alpha / r) * adapter,
        },
    )


def cases() -> list[Case]:
    g = torch.Generator().manual_seed(0)

    def rand(*shape):
        return torch.randn(*shape, generator=g, dtype=torch.float64)

    x, weight = rand(3, 4), rand(5, 4)
    return [
        _case(
            "B = 0, as at initialisation",
            x,
            weight,
            rand(2, 4),
            torch.zeros(5, 2, dtype=torch.float64),
            4.0,
        ),
        _case("rank 2, alpha 4", x, weight, rand(2, 4), rand(5, 2), 4.0),
        _case(
            "rank 4, alpha 8",
            x,
            weight,
            rand(4, 4),
            rand(5, 4),
            8.0,
        ),
    ]


def check_lora_forward(fn, verbose: bool = True):
    """Run the hidden cases against fn(x, weight, a, b, alpha) -> y [N, out]."""
    return run_cases("LoRA forward", fn, cases(), verbose)
