"""The policy term per token, one function per surrogate kind, and the weights that correct
for the sampler's own log-probs (truncated or masked importance sampling).

Every surrogate takes current and old log-probs [B, T], advantages [B] and a mask [B, T],
returns (per_token [B, T] with 0.0 on inactive tokens, audit) and is differentiable with
respect to `current` only. Their gradients, d(-loss)/d log p per token:
  clipped_ratio  rho A, or 0 where the clip binds (PPO; losses.clipped_surrogate_tokens)
  cispo          min(rho, cap) A on every token (the weight is a constant, stop-gradient)
  gmpo           A s / |o| with s the response's geometric-mean ratio, 0 on a token whose
                 log-ratio the log-space clip binds
  sapo           4 sigma(1 - sigma) rho A, sigma = sigmoid(tau (rho - 1)): 1 at rho = 1,
                 fading smoothly instead of dropping to 0
  reinforce      A, whatever the ratio
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import torch

from verifiable_grpo.training import losses

CORRECTION_MODES = ("token_truncate", "token_mask", "sequence_truncate", "sequence_mask")


class Registered(NamedTuple):
    function: Callable  # (objective, batch: TokenLogProbs, advantages) -> (per_token, audit)
    own_ratio: bool  # builds its own ratio (or none): the objective's ratio level is token


# Surrogate kind -> its function, in registration order (Surrogate checks kinds against
# it). Adding a surrogate is one decorated function here plus a registry entry.
SURROGATES: dict[str, Registered] = {}


def register_surrogate(kind: str, own_ratio: bool = False):
    """Register `function(objective, batch, advantages)` -> (per_token [B, T], audit) as the
    surrogate `kind` (the style of verl's register_policy_loss); `batch` is the
    losses.TokenLogProbs of the responses (current, old, mask). It reads its settings from
    the objective (surrogate, clip, ratio level), returns 0.0 on inactive tokens and is
    differentiable with respect to `batch.current` only."""

    def register(function):
        if kind in SURROGATES:
            raise ValueError(f"surrogate {kind!r} is registered twice")
        SURROGATES[kind] = Registered(function, own_ratio)
        return function

    return register


def _interval(objective) -> tuple[float, float]:
    """The clip interval as ratios (reported by surrogates that do not clip)."""
    return (1.0 - objective.clip.low, 1.0 + objective.clip.high)


@register_surrogate("clipped_ratio")
def _clipped_ratio(objective, batch: losses.TokenLogProbs, advantages):
    clip = objective.clip
    return losses.clipped_surrogate_tokens(
        batch, advantages, losses.ClipRange(clip.low, clip.high), objective.ratio
    )


@register_surrogate("cispo")
def _cispo(objective, batch: losses.TokenLogProbs, advantages):
    return cispo_tokens(batch, advantages, objective.surrogate.cap, objective.ratio)


@register_surrogate("gmpo", own_ratio=True)
def _gmpo(objective, batch: losses.TokenLogProbs, advantages):
    clip = objective.clip
    return gmpo_tokens(batch, advantages, clip.low, clip.high)


@register_surrogate("sapo")
def _sapo(objective, batch: losses.TokenLogProbs, advantages):
    s = objective.surrogate
    return sapo_tokens(
        batch,
        advantages,
        s.temperature_positive,
        s.temperature_negative,
        objective.ratio,
        _interval(objective),
    )


@register_surrogate("reinforce", own_ratio=True)
def _reinforce(objective, batch: losses.TokenLogProbs, advantages):
    return reinforce_tokens(batch, advantages, _interval(objective))


KINDS = tuple(SURROGATES)


def _masked(values, mask):
    return torch.where(mask, values, torch.zeros_like(values))


def cispo_tokens(batch: losses.TokenLogProbs, advantages, cap: float, ratio_level: str = "token"):
    """-sg(min(rho, cap)) A log p (CISPO): the ratio only weighs the token."""
    current = batch.current
    old, adv, mask = _inputs(current, batch.old, advantages, batch.mask)
    ratio = losses.importance_ratio(current, old, mask, ratio_level)
    weight = torch.clamp(ratio, max=cap).detach()
    per_token = _masked(-weight * adv * current, mask)
    audit = losses.ratio_audit(ratio, adv, mask, (0.0, cap), ratio_level, clips=False)
    audit["capped_fraction"] = float(((ratio.detach() > cap) & mask).sum() / mask.sum())
    return per_token, audit


def gmpo_tokens(batch: losses.TokenLogProbs, advantages, clip_low: float, clip_high: float):
    """-A exp(mean_t clip_log(log rho_t)) (GMPO), the clip in log space [-low, high] and
    pessimistic: a token's clipped log-ratio is used only where it lowers sign(A) x value."""
    current = batch.current
    old, adv, mask = _inputs(current, batch.old, advantages, batch.mask)
    log_ratio = _masked(current - old, mask)
    clamped = torch.clamp(log_ratio, -clip_low, clip_high)
    sign = torch.where(adv >= 0, 1.0, -1.0).to(current.dtype)
    pessimistic = sign * torch.minimum(sign * log_ratio, sign * clamped)
    geometric = torch.exp(losses.masked_token_mean(pessimistic, mask)).unsqueeze(1)
    per_token = _masked(-adv * geometric.expand_as(current), mask)
    ratio = torch.exp(log_ratio)
    bounds = (math.exp(-clip_low), math.exp(clip_high))
    audit = losses.ratio_audit(ratio, adv, mask, bounds, "token")
    audit["geometric_ratio_per_response"] = geometric.detach()[:, 0]
    return per_token, audit


def sapo_tokens(
    batch: losses.TokenLogProbs,
    advantages,
    temperature_positive: float,
    temperature_negative: float,
    ratio_level: str = "token",
    clip_interval: tuple[float, float] = (0.8, 1.2),
):
    """-(4 / tau) sigmoid(tau (rho - 1)) A (SAPO), tau by the sign of A (A > 0: positive;
    as TRL 1.16, A = 0 takes the negative one), rho from the batch's current and old
    log-probs. The clip interval is only reported."""
    current = batch.current
    old, adv, mask = _inputs(current, batch.old, advantages, batch.mask)
    ratio = losses.importance_ratio(current, old, mask, ratio_level)
    # Built in the log-probs' dtype: torch.where on two python floats would round tau to
    # float32 (1.05 -> 1.0499999523), which TRL 1.16 does.
    tau = torch.where(
        adv > 0,
        torch.tensor(temperature_positive, dtype=current.dtype),
        torch.tensor(temperature_negative, dtype=current.dtype),
    )
    gate = torch.sigmoid(tau * (ratio - 1)) * 4 / tau
    per_token = _masked(-gate * adv, mask)
    return per_token, losses.ratio_audit(ratio, adv, mask, clip_interval, ratio_level, clips=False)


def reinforce_tokens(
    batch: losses.TokenLogProbs, advantages, clip_interval: tuple[float, float] = (0.8, 1.2)
):
    """-A log p (REINFORCE): no ratio in the loss; the token ratio is only reported."""
    current = batch.current
    old, adv, mask = _inputs(current, batch.old, advantages, batch.mask)
    per_token = _masked(-adv * current, mask)
    ratio = losses.importance_ratio(current, old, mask, "token")
    return per_token, losses.ratio_audit(ratio, adv, mask, clip_interval, "token", clips=False)


def _inputs(current, old, advantages, mask):
    old, advantages, _, mask = losses.check_surrogate_inputs(
        current, old, advantages, mask, 0.2, None
    )
    return old.detach().to(current.dtype), advantages.detach().to(current.dtype).unsqueeze(1), mask


# --------------------------------------------------------------------------- corrections
def behaviour_weights(
    trainer,
    sampler,
    mask,
    mode: str = "sequence_mask",
    clip_min: float | None = None,
    clip_max: float | None = 3.0,
):
    """Per-token weights [B, T] for the sampler/trainer gap, as TRL 1.16 builds its
    importance_sampling_ratio: exp(log p_trainer - log p_sampler) per token, or per
    sequence (the summed log-ratio, shared by its tokens); *_truncate clamps it to
    [clip_min, clip_max] (TIS), *_mask sets it to 0 outside (MIS). Detached; 0 on
    inactive tokens, which may hold any value (NaN included)."""
    if mode not in CORRECTION_MODES:
        raise ValueError(f"mode {mode!r} is not one of {CORRECTION_MODES}")
    trainer = torch.as_tensor(trainer).detach()
    sampler = torch.as_tensor(sampler, device=trainer.device).detach().to(trainer.dtype)
    mask = torch.as_tensor(mask, device=trainer.device).bool()
    if not trainer.shape == sampler.shape == mask.shape:
        raise ValueError("trainer, sampler and mask must have the same shape")
    diff = _masked(trainer - sampler, mask)
    if mode.startswith("sequence"):
        diff = diff.sum(dim=-1, keepdim=True)
    ratio = diff.exp()
    if mode.endswith("truncate"):
        ratio = ratio.clamp(min=clip_min, max=clip_max)
    else:
        low = -math.inf if clip_min is None else clip_min
        high = math.inf if clip_max is None else clip_max
        ratio = ratio.masked_fill((ratio < low) | (ratio > high), 0.0)
    return _masked(ratio.expand_as(trainer), mask)
