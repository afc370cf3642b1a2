"""Exercises (Part III, reward model and DPO): the two pairwise losses.

Bradley-Terry: fn(chosen, rejected) -> scalar, float64 [N] rewards of the preferred and the
other response; the mean of -log sigmoid(chosen - rejected), finite even for margins of
hundreds. DPO: fn(policy_chosen, policy_rejected, ref_chosen, ref_rejected, beta) ->
scalar, float64 [N] sequence log-probabilities; the mean of -log sigmoid(beta * h) with
h = (policy_chosen - ref_chosen) - (policy_rejected - ref_rejected). References are
written out by hand here (log1p of exp, in float64).
"""

from __future__ import annotations

import math

import torch

from verifiable_grpo.exercises.checking import Case, run_cases

SIGN = "looks like the margin's sign is flipped: the loss is small when chosen beats rejected"
SUM = "looks like a sum over pairs: take the mean"
UNSTABLE = (
    "a large negative margin gives inf or nan: log(sigmoid(m)) underflows; use "
    "torch.nn.functional.logsigmoid (or softplus(-m))"
)
NO_REFERENCE = "looks like the reference log-probabilities are missing: h uses log-ratios"
NO_BETA = "looks like beta is missing: the sigmoid's argument is beta * h"


def _neg_logsigmoid(m: float) -> float:
    # softplus(-m) = log(1 + e^{-m}), stable on both sides
    return max(-m, 0.0) + math.log1p(math.exp(-abs(m)))


def _mean_loss(margins) -> float:
    return sum(_neg_logsigmoid(m) for m in margins) / len(margins)


def _bt_case(label, chosen, rejected):
    margins = [c - r for c, r in zip(chosen, rejected)]
    mistakes = {SIGN: _mean_loss([-m for m in margins]), SUM: _mean_loss(margins) * len(margins)}
    if min(margins) < -50:
        mistakes[UNSTABLE] = float("inf")
    return Case(
        f"{label}: chosen {chosen}, rejected {rejected}",
        lambda fn: fn(
            torch.tensor(chosen, dtype=torch.float64), torch.tensor(rejected, dtype=torch.float64)
        ),
        _mean_loss(margins),
        tolerance=1e-12,
        mistakes=mistakes,
    )


def bradley_terry_cases() -> list[Case]:
    return [
        _bt_case("one pair", [1.0], [0.0]),
        _bt_case("three pairs, one reversed", [2.0, 0.5, -1.0], [0.0, 1.0, -3.0]),
        _bt_case("a margin of -800", [0.0, 1.0], [800.0, 0.0]),
    ]


def _dpo_case(label, pc, pr, rc, rr, beta):
    h = [(a - c) - (b - d) for a, b, c, d in zip(pc, pr, rc, rr)]
    no_ref = [a - b for a, b in zip(pc, pr)]
    tensors = [torch.tensor(v, dtype=torch.float64) for v in (pc, pr, rc, rr)]
    return Case(
        f"{label}: policy {pc} / {pr}, reference {rc} / {rr}, beta {beta:g}",
        lambda fn: fn(*(t.clone() for t in tensors), beta),
        _mean_loss([beta * x for x in h]),
        tolerance=1e-12,
        mistakes={
            NO_REFERENCE: _mean_loss([beta * x for x in no_ref]),
            NO_BETA: _mean_loss(h),
            SIGN: _mean_loss([-beta * x for x in h]),
        },
    )


def dpo_cases() -> list[Case]:
    return [
        _dpo_case("one pair", [-4.0], [-6.0], [-5.0], [-5.5], 0.5),
        _dpo_case(
            "two pairs, beta 0.1",
            [-10.0, -3.0],
            [-12.0, -2.0],
            [-11.0, -2.5],
            [-11.0, -2.5],
            0.1,
        ),
        _dpo_case("the reference prefers the rejected", [-2.0], [-3.0], [-4.0], [-1.0], 2.0),
    ]


def check_bradley_terry_loss(fn, verbose: bool = True):
    """Run the hidden cases against fn(chosen[N], rejected[N]) -> scalar loss."""
    return run_cases("Bradley-Terry loss", fn, bradley_terry_cases(), verbose)


def check_dpo_loss(fn, verbose: bool = True):
    """Run the hidden cases against fn(policy_chosen, policy_rejected, ref_chosen,
    ref_rejected, beta) -> scalar loss."""
    return run_cases("DPO loss", fn, dpo_cases(), verbose)
