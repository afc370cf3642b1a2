"""The learning-rate schedule shared by SFT and GRPO: linear warm-up, then linear decay.

With `step` the 0-based index of an update (its rate is used by that update), N updates,
peak P, warm-up fraction w and final fraction f:

    W = max(1, floor(w * N + 0.5))                       (round half up: 48 -> 4.8 -> 5)
    lr(step) = P * (step + 1) / W                        for step < W   (update W-1 at P)
    q = (step - W) / (N - 1 - W)                         for step >= W  (q = 1 when N-1 <= W)
    lr(step) = P * ((1 - q) + q * f)                     (update W at P, update N-1 at f*P)

So update W-1 and update W both run at the peak, and the last update runs at exactly f*P
(the interpolation form keeps both ends exact in floating point). When N <= W the run is
all warm-up (a single update runs at P).
Examples, N = 48, w = 0.1, f = 0.1: W = 5; rates / P = 0.2, 0.4, 0.6, 0.8, 1.0, 1.0, ...,
0.55 at step 26, ..., 0.1 at step 47. N = 218: W = 22. N = 200: W = 20.
"""

from __future__ import annotations

import math

import torch


def warmup_steps(total_steps: int, warmup_fraction: float) -> int:
    return max(1, math.floor(warmup_fraction * total_steps + 0.5))


def learning_rate(
    step: int, total_steps: int, peak: float, warmup_fraction: float, final_fraction: float
) -> float:
    if total_steps < 1:
        raise ValueError(f"total_steps must be >= 1, got {total_steps}")
    if not 0 <= step < total_steps:
        raise ValueError(f"step {step} outside 0..{total_steps - 1}")
    if not 0 <= warmup_fraction <= 1 or not 0 <= final_fraction <= 1:
        raise ValueError("warmup_fraction and final_fraction must be in [0, 1]")
    warm = warmup_steps(total_steps, warmup_fraction)
    if step < warm:
        return peak * (step + 1) / warm
    span = total_steps - 1 - warm
    progress = 1.0 if span <= 0 else (step - warm) / span
    return peak * ((1.0 - progress) + progress * final_fraction)


class WarmupLinearDecay:
    """LambdaLR factor (rate / peak). A callable object, so its settings go into the
    scheduler's state_dict and a resume with another schedule is visible."""

    def __init__(self, total_steps: int, warmup_fraction: float, final_fraction: float):
        self.total_steps = int(total_steps)
        self.warmup_fraction = float(warmup_fraction)
        self.final_fraction = float(final_fraction)

    def __call__(self, step: int) -> float:
        # LambdaLR asks for the factor after the last update too; hold the final value.
        step = min(step, self.total_steps - 1)
        return learning_rate(step, self.total_steps, 1.0, self.warmup_fraction, self.final_fraction)


def make_scheduler(
    optimizer, total: int, warmup_fraction: float, final_fraction: float
) -> torch.optim.lr_scheduler.LambdaLR:
    """A LambdaLR over the optimizer's peak rate (a section's warmup_fraction and
    final_lr_fraction).

    Call scheduler.step() after each optimizer.step(); param_groups' lr is then the rate of
    the next update.
    """
    factor = WarmupLinearDecay(total, warmup_fraction, final_fraction)
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda=factor)
