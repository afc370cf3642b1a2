"""Exercise (chapter 6): the scalar GRPO loss of one rollout set.

The learner writes fn(current, old, advantages, mask, kl, group_size, epsilon, beta) ->
scalar loss to MINIMISE: per token -min(rho A, clip(rho, 1-eps, 1+eps) A) + beta * kl, then
the mean over each response's active tokens, over the responses of each prompt, over the
prompts. Responses are laid out prompt by prompt; current/old/kl/mask are float64/bool
[P*G, T], advantages [P*G]. The reference is written out with python floats.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from verifiable_grpo.exercises.checking import Case, run_cases

TOKEN_MEAN = (
    "looks like one mean over all tokens of the batch: average each response's tokens "
    "first, so a long response counts as much as a short one"
)
SIGN = "the loss is MINUS the surrogate (the optimiser minimises it), plus beta * KL"
KL_SIGN = "the KL is a penalty: + beta * KL in the loss"
NO_CLIP = "looks like rho * A without the clip: take min(rho A, clip(rho) A)"


@dataclass(frozen=True)
class Rollouts:
    """One rollout set in python floats: per response its token log-probs (current, old),
    mask and KL, and its advantage."""

    current: list
    old: list
    advantages: list
    mask: list
    kl: list


def _token_terms(rollouts: Rollouts, epsilon, beta, clip=True, kl_sign=1.0):
    rows = []
    r = rollouts
    for cur, o, a, m, k in zip(r.current, r.old, r.advantages, r.mask, r.kl):
        terms = []
        for c, b, on, kk in zip(cur, o, m, k):
            if not on:
                continue
            rho = math.exp(c - b)
            clipped = min(max(rho, 1 - epsilon), 1 + epsilon)
            surrogate = min(rho * a, clipped * a) if clip else rho * a
            terms.append(-surrogate + kl_sign * beta * kk)
        rows.append(terms)
    return rows


def _reduce(rows, group_size):
    means = [sum(r) / len(r) for r in rows]
    prompts = [means[i : i + group_size] for i in range(0, len(means), group_size)]
    return sum(sum(p) / len(p) for p in prompts) / len(prompts)


def _case(label, inputs, group_size, epsilon=0.2, beta=0.02):
    current, old, advantages, mask, kl = inputs
    rollouts = Rollouts(*inputs)
    rows = _token_terms(rollouts, epsilon, beta)
    flat = [t for r in rows for t in r]
    expected = _reduce(rows, group_size)
    mistakes = {
        TOKEN_MEAN: sum(flat) / len(flat),
        SIGN: -_reduce(_token_terms(rollouts, epsilon, -beta), group_size),
        KL_SIGN: _reduce(_token_terms(rollouts, epsilon, beta, kl_sign=-1.0), group_size),
        NO_CLIP: _reduce(_token_terms(rollouts, epsilon, beta, clip=False), group_size),
    }
    mistakes = {h: v for h, v in mistakes.items() if abs(v - expected) > 1e-9}

    def run(fn):
        tensors = [torch.tensor(x, dtype=torch.float64) for x in (current, old, advantages)]
        return fn(
            *tensors,
            torch.tensor(mask),
            torch.tensor(kl, dtype=torch.float64),
            group_size,
            epsilon,
            beta,
        )

    return Case(
        f"{label} (P={len(current) // group_size}, G={group_size}, eps={epsilon}, beta={beta})",
        run,
        expected,
        tolerance=1e-12,
        mistakes=mistakes,
    )


def cases() -> list[Case]:
    on_policy = (
        [[-1.0, -2.0, -0.5], [-0.3, -0.7, -9.0]],
        [[-1.0, -2.0, -0.5], [-0.3, -0.7, -9.0]],
        [1.0, -1.0],
        [[True, True, True], [True, True, False]],
        [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]],
    )
    moved = (
        [
            [-0.8, -2.0, -0.1, -1.0],
            [-0.3, -1.2, -5.0, -5.0],
            [-2.0, -0.1, -0.2, -5.0],
            [-0.4, -0.6, -0.9, -1.1],
        ],
        [
            [-1.0, -2.0, -0.5, -1.0],
            [-0.6, -0.7, -5.0, -5.0],
            [-1.5, -0.1, -0.4, -5.0],
            [-0.4, -0.5, -0.5, -1.5],
        ],
        [1.2, -0.8, 0.5, -0.9],
        [
            [True, True, True, True],
            [True, True, False, False],
            [True, True, True, False],
            [True, True, True, True],
        ],
        [
            [0.01, 0.02, 0.0, 0.03],
            [0.05, 0.0, 9.0, 9.0],
            [0.2, 0.01, 0.0, 9.0],
            [0.0, 0.1, 0.02, 0.04],
        ],
    )
    return [
        _case("first update: every ratio is 1", on_policy, group_size=2),
        _case(
            "second update: ratios moved, some clipped, responses of different lengths",
            moved,
            group_size=2,
        ),
        _case("the same set read as one prompt of four", moved, group_size=4),
        _case("a wider clip and a stronger KL", moved, group_size=2, epsilon=0.3, beta=0.5),
    ]


def check_grpo_loss(fn, verbose: bool = True):
    """Run the hidden cases against fn(current, old, advantages, mask, kl, group_size, epsilon, beta)."""
    return run_cases("GRPO loss", fn, cases(), verbose)
