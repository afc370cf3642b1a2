"""The GRPO objective, piece by piece: group advantages (the group std here; the other
baselines in baselines.py, re-exported), the importance ratio (token or sequence level),
the clipped surrogate with an asymmetric interval and the audit of what the ratio did,
the exact KL on visited prefixes and the sampled KL estimators (both in kl_divergence.py,
re-exported), and the reductions that turn per-token terms into one scalar loss (token
mean per response then mean; token sum over the batch or each micro-batch; sum over a
constant length). The other surrogates (CISPO, GMPO, SAPO, REINFORCE) and the behaviour
corrections live in surrogates.py.

Which of these a run combines is data: see objectives.py.

Every function validates its shapes and raises a ValueError that names the problem.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

# Re-exported: the baselines other than the group std live in baselines.py, the KL terms in
# kl_divergence.py.
from verifiable_grpo.training.kl_divergence import exact_prefix_kl, sampled_kl_estimators

__all__ = [
    "TokenLogProbs",
    "ClipRange",
    "group_advantages",
    "masked_token_mean",
    "masked_token_sum",
    "masked_normalize",
    "reduce_responses_then_prompts",
    "aggregation_weights",
    "importance_ratio",
    "clipped_surrogate_tokens",
    "ratio_audit",
    "clipped_group_surrogate",
    "exact_prefix_kl",
    "sampled_kl_estimators",
    "grpo_objective",
]


# --------------------------------------------------------------------------- advantages
def group_advantages(rewards, epsilon: float = 1e-8, correction: int = 0):
    """Group-relative advantages A = (r - mean) / (std + epsilon), one group per row.

    rewards: [P, G] (P prompts, G responses each). correction=0 is the population std
    (seed 000); correction=1 the sample std (seed 004, TRL, torch.std's default).
    Returns (advantages[P, G], mean[P, 1], std[P, 1]), all detached.
    A group whose rewards are all equal gets advantages of exactly 0.0.
    """
    rewards = torch.as_tensor(rewards).detach()
    if not rewards.is_floating_point():
        rewards = rewards.to(torch.get_default_dtype())
    if rewards.dim() != 2:
        raise ValueError(f"rewards must be 2-D [prompts, group], got shape {tuple(rewards.shape)}")
    prompts, group = rewards.shape
    if prompts == 0 or group == 0:
        raise ValueError(
            f"rewards must hold at least one group and one response, got {tuple(rewards.shape)}"
        )
    if correction not in (0, 1):
        raise ValueError(
            f"correction must be 0 (population std) or 1 (sample std), got {correction!r}"
        )
    if correction == 1 and group < 2:
        raise ValueError("the sample std (correction=1) needs a group of at least 2 responses")
    if not epsilon > 0:
        raise ValueError(f"epsilon must be positive, got {epsilon!r}")
    if not torch.isfinite(rewards).all():
        raise ValueError("rewards must be finite")

    mean = rewards.mean(dim=1, keepdim=True)
    # A float mean of equal values can be off by one ulp (e.g. 3 x 0.1 in float32);
    # use the common value itself so that r - mean is exactly 0 for a constant group.
    constant = (rewards == rewards[:, :1]).all(dim=1, keepdim=True)
    mean = torch.where(constant, rewards[:, :1], mean)
    centred = rewards - mean
    std = (centred.square().sum(dim=1, keepdim=True) / (group - correction)).sqrt()
    advantages = centred / (std + epsilon)
    return advantages, mean, std


# --------------------------------------------------------------------------- reductions
def _check_mask(values: torch.Tensor, mask) -> torch.Tensor:
    if values.dim() != 2:
        raise ValueError(
            f"per-token values must be 2-D [responses, tokens], got {tuple(values.shape)}"
        )
    mask = torch.as_tensor(mask, device=values.device)
    if mask.shape != values.shape:
        raise ValueError(
            f"mask shape {tuple(mask.shape)} differs from values shape {tuple(values.shape)}"
        )
    mask = mask.bool()
    if not mask.any(dim=1).all():
        empty = (~mask.any(dim=1)).nonzero().flatten().tolist()
        raise ValueError(f"every response needs at least one active token; empty rows: {empty}")
    return mask


def masked_token_mean(values: torch.Tensor, mask) -> torch.Tensor:
    """Mean of each row's active tokens: [B, T] -> [B]. Inactive tokens never leak in,
    even when they hold inf or NaN (torch.where, not a multiplication by the mask)."""
    mask = _check_mask(values, mask)
    total = torch.where(mask, values, torch.zeros_like(values)).sum(dim=1)
    return total / mask.sum(dim=1).to(values.dtype)


def masked_token_sum(values: torch.Tensor, mask) -> torch.Tensor:
    """Sum of each row's active tokens: [B, T] -> [B] (inactive tokens never leak in)."""
    mask = _check_mask(values, mask)
    return torch.where(mask, values, torch.zeros_like(values)).sum(dim=1)


def masked_normalize(values: torch.Tensor, mask, normalize_constant: float, dim=None):
    """Sum of the active entries (along `dim`, or all) divided by a constant: the reduction
    of a Dr. GRPO-style constant-length loss (CS336 A5's masked_normalize). Inactive
    entries never leak in, even when they hold inf or NaN."""
    mask = torch.as_tensor(mask, device=values.device).bool()
    if mask.shape != values.shape:
        raise ValueError(
            f"mask shape {tuple(mask.shape)} differs from values shape {tuple(values.shape)}"
        )
    if not normalize_constant > 0:
        raise ValueError(f"normalize_constant must be positive, got {normalize_constant!r}")
    kept = torch.where(mask, values, torch.zeros_like(values))
    return (kept.sum() if dim is None else kept.sum(dim=dim)) / normalize_constant


def reduce_responses_then_prompts(
    per_response: torch.Tensor, group_size: int | None = None
) -> torch.Tensor:
    """Mean over the responses of each prompt, then mean over prompts -> scalar.

    per_response is [P, G], or [P * G] laid out prompt by prompt (then group_size is needed).
    """
    if per_response.dim() == 1:
        if group_size is None or group_size < 1:
            raise ValueError("a flat [P*G] tensor needs a positive group_size")
        if per_response.numel() == 0 or per_response.numel() % group_size:
            raise ValueError(
                f"{per_response.numel()} responses do not split into groups of {group_size}"
            )
        per_response = per_response.reshape(-1, group_size)
    elif per_response.dim() == 2:
        if group_size is not None and per_response.shape[1] != group_size:
            raise ValueError(
                f"group_size {group_size} differs from the tensor's {per_response.shape[1]}"
            )
        if per_response.numel() == 0:
            raise ValueError("no responses to reduce")
    else:
        raise ValueError(f"per_response must be [P*G] or [P, G], got {tuple(per_response.shape)}")
    return per_response.mean(dim=1).mean(dim=0)


AGGREGATIONS = ("response_mean", "token_sum", "constant_length")


def response_prompt_mean(values, groups: int, group_size: int, plain: bool = False) -> float:
    """Per-response telemetry values (laid out prompt by prompt) reduced as the exact KL is
    reported: response mean, then prompt mean; `plain` (padded AERO slots): one mean."""
    if plain:
        return sum(values) / len(values)
    return float(
        reduce_responses_then_prompts(
            torch.tensor(values, dtype=torch.float64).reshape(groups, group_size)
        )
    )


def aggregation_weights(
    kind: str,
    lengths,
    length: int | None = None,
    total_tokens: int | None = None,
    micro_batches: int | None = None,
) -> list[list[float]]:
    """The multiplier of each response's reduced loss, so that loss = sum_i w_i * l_i.

    lengths: [P][G] active tokens per response (prompt by prompt, every prompt G).
    response_mean: l_i = token mean, w_i = 1 / (P * G) (token mean per response, then mean
      over responses and prompts: every response counts the same, whatever its length).
    token_sum: l_i = token sum, w_i = 1 / total_tokens (default: the tokens of `lengths`;
      pass the whole generation batch's count for a global normaliser).
    constant_length: l_i = token sum, w_i = 1 / (P * G * length) (Dr. GRPO's constant).
    micro_batches k (token_sum without total_tokens only): TRL's bnpo convention, the
    responses split in order into k equal micro-batches, w_i = 1 / (k * the tokens of
    i's micro-batch); the other kinds give the same weights under any split.
    Returned as python floats: a float32 loss times a python float stays float32.
    """
    if kind not in AGGREGATIONS:
        raise ValueError(f"unknown aggregation {kind!r}: use one of {AGGREGATIONS}")
    rows = [[int(n) for n in row] for row in lengths]
    if not rows or not rows[0] or any(len(row) != len(rows[0]) for row in rows):
        raise ValueError("lengths must be a non-empty [P][G] table with G responses per prompt")
    if any(n < 1 for row in rows for n in row):
        raise ValueError("every response needs at least one active token")
    responses = len(rows) * len(rows[0])
    if kind == "response_mean":
        weight = 1.0 / responses
    elif kind == "token_sum" and micro_batches is not None:
        if total_tokens is not None:
            raise ValueError("give total_tokens (one normaliser) or micro_batches, not both")
        return _micro_batch_weights(rows, micro_batches)
    elif kind == "token_sum":
        tokens = sum(map(sum, rows)) if total_tokens is None else total_tokens
        if type(tokens) is not int or tokens < sum(map(sum, rows)):
            raise ValueError(
                f"total_tokens must be an integer >= the {sum(map(sum, rows))} "
                f"tokens given, got {total_tokens!r}"
            )
        weight = 1.0 / tokens
    else:
        if type(length) is not int or length < max(map(max, rows)):
            raise ValueError(
                f"a constant-length normaliser needs an integer length >= the "
                f"longest response ({max(map(max, rows))}), got {length!r}"
            )
        weight = 1.0 / (responses * length)
    return [[weight] * len(row) for row in rows]


def _micro_batch_weights(rows: list[list[int]], micro_batches) -> list[list[float]]:
    """1 / (k * tokens of the micro-batch) per response, micro-batches taken in order."""
    flat = [n for row in rows for n in row]
    if type(micro_batches) is not int or micro_batches < 1 or len(flat) % micro_batches:
        raise ValueError(
            f"micro_batches must be a positive integer dividing the "
            f"{len(flat)} responses, got {micro_batches!r}"
        )
    size = len(flat) // micro_batches
    weights = [
        1.0 / (micro_batches * sum(flat[i - i % size : i - i % size + size]))
        for i in range(len(flat))
    ]
    width = len(rows[0])
    return [weights[p * width : (p + 1) * width] for p in range(len(rows))]


# --------------------------------------------------------------------------- surrogate
@dataclass(frozen=True)
class TokenLogProbs:
    """One batch's per-token log-probs, [B, T] each, and which of its tokens are active.

    current: under the policy being trained (the only one gradients flow through); old:
    under the policy that sampled the responses (the ratio's denominator; detached); mask:
    the active tokens [B, T]; reference: under the frozen reference policy, for a KL term
    built from it (None where no term needs it).
    """

    current: Any
    old: Any
    mask: Any
    reference: Any = None


@dataclass(frozen=True)
class ClipRange:
    """The ratio is clipped to [1 - low, 1 + high]; high None is the symmetric [1 - low,
    1 + low] (DAPO's clip-higher sets a larger high). Checked where a surrogate uses it."""

    low: float = 0.2
    high: float | None = None


def check_surrogate_inputs(current, old, advantages, mask, clip_low, clip_high):
    if current.dim() != 2:
        raise ValueError(f"current log-probs must be [B, T], got {tuple(current.shape)}")
    old = torch.as_tensor(old, device=current.device)
    if old.shape != current.shape:
        raise ValueError(
            f"old log-probs shape {tuple(old.shape)} differs from current {tuple(current.shape)}"
        )
    advantages = torch.as_tensor(advantages, device=current.device)
    if advantages.shape != current.shape[:1]:
        raise ValueError(
            f"advantages must be [B] = [{current.shape[0]}], got {tuple(advantages.shape)}"
        )
    if not 0 < clip_low < 1:
        raise ValueError(f"clip_epsilon must lie in (0, 1), got {clip_low!r}")
    high = clip_low if clip_high is None else clip_high
    if not high > 0:
        raise ValueError(f"clip_epsilon_high must be positive, got {clip_high!r}")
    return old, advantages, high, _check_mask(current, mask)


RATIO_LEVELS = ("token", "sequence")


def importance_ratio(current, old, mask, level: str = "token") -> torch.Tensor:
    """pi_cur / pi_old per token [B, T]: token level, or sequence level (GSPO: exp of the
    masked mean log-ratio of the response, the same value on each of its tokens).
    1.0 on inactive tokens; old is detached."""
    if level not in RATIO_LEVELS:
        raise ValueError(f"unknown ratio level {level!r}: use one of {RATIO_LEVELS}")
    mask = _check_mask(current, mask)
    old = torch.as_tensor(old, device=current.device).detach().to(current.dtype)
    if old.shape != current.shape:
        raise ValueError(
            f"old log-probs shape {tuple(old.shape)} differs from current {tuple(current.shape)}"
        )
    # Zero the log-ratio on inactive tokens before exp: exp of padding garbage could be
    # inf, and inf * 0 in the backward pass would turn into NaN gradients.
    log_ratio = torch.where(mask, current - old, torch.zeros_like(current))
    if level == "sequence":
        mean = masked_token_mean(log_ratio, mask).unsqueeze(1).expand_as(log_ratio)
        log_ratio = torch.where(mask, mean, torch.zeros_like(log_ratio))
    return torch.exp(log_ratio)


def ratio_audit(
    ratio, adv, mask, bounds: tuple[float, float], ratio_level: str, clips: bool = True
) -> dict:
    """What the ratio did, detached: see clipped_group_surrogate. bounds: the interval
    (low_bound, high_bound) of ratios. `clips` False (a surrogate that removes no token's
    gradient): the clip fractions are 0, while "outside_fraction" still counts ratios
    outside the interval."""
    low_bound, high_bound = bounds
    with torch.no_grad():
        r = ratio.detach()
        below, above = r < low_bound, r > high_bound
        clip_low = below & (adv < 0) & mask & clips
        clip_high = above & (adv > 0) & mask & clips
        outside = (below | above) & mask
        counts = mask.sum(dim=1).to(r.dtype)
        total = counts.sum()

        def per_row(flags):
            return flags.sum(dim=1).to(r.dtype) / counts

        return {
            "ratios": r,
            "ratio_level": ratio_level,
            "mean_ratio": float(torch.where(mask, r, 0).sum() / total),
            "clip_low_fraction": float(clip_low.sum() / total),
            "clip_high_fraction": float(clip_high.sum() / total),
            "active_clip_fraction": float((clip_low | clip_high).sum() / total),
            "outside_fraction": float(outside.sum() / total),
            "clip_interval": (low_bound, high_bound),
            "active_tokens": int(total),
            "mean_ratio_per_response": torch.where(mask, r, 0).sum(dim=1) / counts,
            "active_clip_fraction_per_response": per_row(clip_low | clip_high),
            "outside_fraction_per_response": per_row(outside),
        }


def clipped_surrogate_tokens(
    batch: TokenLogProbs, advantages, clip: ClipRange = ClipRange(), ratio_level: str = "token"
):
    """Per token, -min(rho * A, clip(rho, 1 - eps, 1 + eps_high) * A): [B, T], 0.0 on
    inactive tokens. rho is the token or the sequence ratio (importance_ratio) of the
    batch's current and old log-probs; eps, eps_high are clip.low, clip.high.
    Returns (per_token, audit); the audit is described in clipped_group_surrogate."""
    current = batch.current
    old, advantages, high, mask = check_surrogate_inputs(
        current, batch.old, advantages, batch.mask, clip.low, clip.high
    )
    adv = advantages.detach().to(current.dtype).unsqueeze(1)
    ratio = importance_ratio(current, old, mask, ratio_level)
    low_bound, high_bound = 1.0 - clip.low, 1.0 + high
    unclipped = ratio * adv
    clipped = torch.clamp(ratio, low_bound, high_bound) * adv
    per_token = torch.where(mask, -torch.minimum(unclipped, clipped), torch.zeros_like(current))

    audit = ratio_audit(ratio, adv, mask, (low_bound, high_bound), ratio_level)
    return per_token, audit


def clipped_group_surrogate(
    batch: TokenLogProbs, advantages, clip: ClipRange = ClipRange(), ratio_level: str = "token"
):
    """Per response, the token mean of -min(rho * A, clip(rho, 1 - eps, 1 + eps_high) * A).

    batch: token log-probs [B, T] under the current and the old (behaviour) policy, old
    detached, and the mask of active tokens. advantages: [B], one per response, detached.
    clip: eps = clip.low, eps_high = clip.high (None: eps).
    ratio_level "token" (default) or "sequence" (importance_ratio).
    Returns (loss[B], audit). The audit is detached: "ratios" [B, T] (1.0 on inactive
    tokens), batch fractions over active tokens as python floats ("mean_ratio",
    "clip_low_fraction": rho < 1-eps with A < 0, "clip_high_fraction": rho > 1+eps_high
    with A > 0, "active_clip_fraction": their sum, i.e. tokens whose gradient the clip
    removes, "outside_fraction": rho outside the interval whatever the sign of A), and the
    same per response as [B] tensors ("*_per_response").
    """
    per_token, audit = clipped_surrogate_tokens(batch, advantages, clip, ratio_level)
    return masked_token_mean(per_token, batch.mask), audit


# --------------------------------------------------------------------------- objective
def grpo_objective(
    batch: TokenLogProbs,
    advantages,
    kl_per_token,
    group_size: int,
    clip: ClipRange = ClipRange(),
    kl_coefficient: float = 0.02,
):
    """The scalar GRPO loss: reduced clipped surrogate + kl_coefficient * reduced KL.

    Both terms are averaged the same way: over each response's active tokens, then over
    the responses of each prompt, then over prompts. Responses are laid out prompt by
    prompt (B = P * G). kl_per_token [B, T] may be None when there is no KL term.
    Returns (loss, audit): the surrogate's audit plus "surrogate", "kl" and "loss" floats.
    """
    current_logprobs, mask = batch.current, batch.mask
    surrogate_per_response, audit = clipped_group_surrogate(batch, advantages, clip)
    surrogate = reduce_responses_then_prompts(surrogate_per_response, group_size)
    if kl_per_token is None:
        if kl_coefficient != 0:
            raise ValueError("kl_per_token is None but kl_coefficient is not 0")
        kl = torch.zeros((), dtype=surrogate.dtype, device=surrogate.device)
    else:
        if kl_per_token.shape != current_logprobs.shape:
            raise ValueError(
                f"kl_per_token shape {tuple(kl_per_token.shape)} differs from "
                f"log-probs {tuple(current_logprobs.shape)}"
            )
        kl = reduce_responses_then_prompts(masked_token_mean(kl_per_token, mask), group_size)
    loss = surrogate + kl_coefficient * kl
    audit = dict(
        audit,
        surrogate=float(surrogate.detach()),
        kl=float(kl.detach()),
        loss=float(loss.detach()),
        surrogate_per_response=surrogate_per_response.detach(),
    )
    return loss, audit
