"""Advantages other than the group std (that one is losses.group_advantages): the mean
baseline (centred), a Beta posterior for one-rollout groups, the leave-one-out baseline
(RLOO), a group baseline scaled by the batch's spread (REINFORCE++), and no baseline at
all (plain REINFORCE). Each takes rewards [P, G], one group per row, and returns
detached tensors; a constant group gets exactly 0 from every rule that has a baseline.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import torch

from verifiable_grpo.training import losses


def _check_rewards(rewards) -> torch.Tensor:
    rewards = torch.as_tensor(rewards).detach()
    if not rewards.is_floating_point():
        rewards = rewards.to(torch.get_default_dtype())
    if rewards.dim() != 2 or 0 in rewards.shape:
        raise ValueError(
            f"rewards must be a non-empty 2-D [prompts, group], got shape {tuple(rewards.shape)}"
        )
    if not torch.isfinite(rewards).all():
        raise ValueError("rewards must be finite")
    return rewards


def centred_advantages(rewards):
    """A = r - group mean, no scaling (Dr. GRPO's "no std"). rewards [P, G];
    returns (advantages[P, G], mean[P, 1]). A constant group gives exactly 0.0."""
    rewards = _check_rewards(rewards)
    mean = rewards.mean(dim=1, keepdim=True)
    constant = (rewards == rewards[:, :1]).all(dim=1, keepdim=True)
    mean = torch.where(constant, rewards[:, :1], mean)  # exact zeros, as in group_advantages
    return rewards - mean, mean


def posterior_advantages(rewards, successes, observations, prior=(1.0, 1.0), epsilon: float = 1e-4):
    """One-rollout groups scored against a Beta posterior of the prompt's success rate.

    rewards [P, 1] binary (the one kept rollout of each prompt); successes and
    observations [P] count EVERY rollout generated for the prompt (kept or not).
    p = (successes + a) / (observations + a + b) for prior Beta(a, b), and
    A = (r - p) / (sqrt(p (1 - p)) + epsilon). Returns (advantages[P, 1], p[P, 1],
    sqrt(p (1 - p))[P, 1]). E.g. 3/3 correct: p = 0.8, A = +0.2 / 0.4001.
    """
    rewards = _check_rewards(rewards)
    if rewards.shape[1] != 1:
        raise ValueError(
            f"the posterior rule scores one-rollout groups, got {rewards.shape[1]} "
            "rollouts per prompt"
        )
    if not ((rewards == 0) | (rewards == 1)).all():
        raise ValueError("the posterior rule needs binary rewards (0 or 1)")
    successes = torch.as_tensor(successes, dtype=rewards.dtype).reshape(-1, 1)
    observations = torch.as_tensor(observations, dtype=rewards.dtype).reshape(-1, 1)
    if successes.shape != rewards.shape or observations.shape != rewards.shape:
        raise ValueError(
            f"successes and observations need one count per prompt "
            f"({rewards.shape[0]}), got {successes.numel()} and {observations.numel()}"
        )
    if not (
        (observations >= 1).all() and (successes >= 0).all() and (successes <= observations).all()
    ):
        raise ValueError("counts must satisfy 0 <= successes <= observations, observations >= 1")
    if not (successes >= rewards).all() or not (observations - successes >= 1 - rewards).all():
        raise ValueError("the kept rollout must be among the counted observations")
    a, b = (float(x) for x in prior)
    if not (a > 0 and b > 0):
        raise ValueError(f"the Beta prior needs positive parameters, got {prior!r}")
    if not epsilon > 0:
        raise ValueError(f"epsilon must be positive, got {epsilon!r}")
    p = (successes + a) / (observations + a + b)
    scale = (p * (1 - p)).sqrt()
    return (rewards - p) / (scale + epsilon), p, scale


def _exact_group_mean(rewards: torch.Tensor) -> torch.Tensor:
    """The group mean [P, 1], exactly the common value for a constant group."""
    mean = rewards.mean(dim=1, keepdim=True)
    constant = (rewards == rewards[:, :1]).all(dim=1, keepdim=True)
    return torch.where(constant, rewards[:, :1], mean)


def leave_one_out_advantages(rewards):
    """RLOO: A_i = r_i - mean_{j != i} r_j = G / (G - 1) (r_i - mean). Returns
    (advantages[P, G], mean[P, 1]); needs G >= 2."""
    rewards = _check_rewards(rewards)
    group = rewards.shape[1]
    if group < 2:
        raise ValueError("the leave-one-out baseline needs a group of at least 2 responses")
    mean = _exact_group_mean(rewards)
    others = (rewards.sum(dim=1, keepdim=True) - rewards) / (group - 1)
    constant = (rewards == rewards[:, :1]).all(dim=1, keepdim=True)
    return torch.where(constant, torch.zeros_like(rewards), rewards - others), mean


def batch_normalised_advantages(rewards, epsilon: float = 1e-8, correction: int = 0):
    """REINFORCE++ with a group baseline: c = r - group mean, then c / (std(c over every
    response of the batch) + epsilon), std with `correction` (0 population, 1 sample).
    Returns (advantages[P, G], mean[P, 1], batch std as [P, 1])."""
    rewards = _check_rewards(rewards)
    if correction not in (0, 1):
        raise ValueError(
            f"correction must be 0 (population std) or 1 (sample std), got {correction!r}"
        )
    if correction == 1 and rewards.numel() < 2:
        raise ValueError("the sample std (correction=1) needs at least 2 responses")
    if not epsilon > 0:
        raise ValueError(f"epsilon must be positive, got {epsilon!r}")
    mean = _exact_group_mean(rewards)
    centred = rewards - mean
    std = (centred.square().sum() / (centred.numel() - correction)).sqrt()
    return centred / (std + epsilon), mean, std.expand(rewards.shape[0], 1)


def no_baseline_advantages(rewards):
    """Plain REINFORCE: A = r. Returns (advantages[P, G], a zero centre [P, 1])."""
    rewards = _check_rewards(rewards)
    return rewards.clone(), torch.zeros_like(rewards[:, :1])


# --------------------------------------------------------------------------- the registry
class Baseline(NamedTuple):
    function: Callable  # (objective, rewards, successes, observations) -> (A, mean, std|None)
    scaled: bool  # divides by a spread: the rule takes a correction and an epsilon
    batch_level: bool  # one group's advantages depend on the other groups of the batch


# Advantage rule kind -> its function, in registration order (AdvantageRule checks kinds
# against it). Adding a rule is one decorated function here plus a registry entry.
BASELINES: dict[str, Baseline] = {}


def register_baseline(kind: str, scaled: bool = False, batch_level: bool = False):
    """Register `function(objective, rewards [P, G], successes, observations)` ->
    (advantages [P, G], centre [P, 1], spread [P, 1] or None) as the advantage rule
    `kind` (the style of verl's register_policy_loss); `objective.advantages` holds its
    settings, `successes` / `observations` are only given for the posterior rule."""

    def register(function):
        if kind in BASELINES:
            raise ValueError(f"advantage rule {kind!r} is registered twice")
        BASELINES[kind] = Baseline(function, scaled, batch_level)
        return function

    return register


@register_baseline("group_std", scaled=True)
def _group_std(objective, rewards, successes=None, observations=None):
    rule = objective.advantages
    return losses.group_advantages(rewards, rule.epsilon, rule.correction)


@register_baseline("centred")
def _centred(objective, rewards, successes=None, observations=None):
    return (*centred_advantages(rewards), None)


@register_baseline("posterior", scaled=True)
def _posterior(objective, rewards, successes=None, observations=None):
    """Groups of two or more as group_std; one-rollout groups against the Beta posterior."""
    rule = objective.advantages
    if torch.as_tensor(rewards).shape[-1:] != (1,):
        return _group_std(objective, rewards)
    if successes is None or observations is None:
        raise ValueError(
            f"objective {objective.name}: one-rollout groups need the "
            "prompt's successes and observations for the posterior"
        )
    return posterior_advantages(rewards, successes, observations, rule.prior, rule.epsilon)


@register_baseline("leave_one_out")
def _leave_one_out(objective, rewards, successes=None, observations=None):
    return (*leave_one_out_advantages(rewards), None)


@register_baseline("batch_normalised", scaled=True, batch_level=True)
def _batch_normalised(objective, rewards, successes=None, observations=None):
    rule = objective.advantages
    return batch_normalised_advantages(rewards, rule.epsilon, rule.correction)


@register_baseline("none")
def _no_baseline(objective, rewards, successes=None, observations=None):
    return (*no_baseline_advantages(rewards), None)


KINDS = tuple(BASELINES)
