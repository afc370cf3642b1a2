"""The gradient of a rollout set's loss: one loop for the batched and the one-at-a-time path.

Each response i adds w_i * loss_i to policy .grad, with loss_i and w_i from the objective
(Part I's by default: token means, w_i = 1 / (P * G), which sums to the token -> response
-> prompt mean of losses.grpo_objective because every prompt has G responses). The exact
prefix KL is always measured ("mean_exact_kl"), whatever KL term the loss uses.

How the responses go through the network is the only thing the two paths differ in:
- one at a time (sampling.batched false): each response alone, unpadded, so memory stays
  that of one sequence;
- padded batches (sampling.batched true): `rows_per_pass` responses at a time (default:
  all) in batched_scoring's layout (grpo.share_prompts: each distinct prompt once per
  pass). Padding positions are excluded by the response mask (torch.where in every
  reduction), so they carry no loss and no gradient. The exact prefix KL runs block-wise
  over the vocabulary (its working memory is one block, not the vocabulary).
Everything after the forward passes (loss, backward, telemetry) is this module's one loop.

slots (Part II's AERO): prompts may keep 1..slots responses; each prompt is padded to
`slots` rows that carry no loss but count in the mean, so every kept response gets
w_i = 1 / (P * slots) (TRL's per-micro-batch row mean over a padded batch).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from verifiable_grpo.core import scoring
from verifiable_grpo.core.config_schema import Profile
from verifiable_grpo.training import batched_scoring, entropy, losses, objectives, rollout

# Reference logits kept between the updates of one rollout set, per pass: a 16 x 64 set at
# the tiny vocabulary is a few MB; at Qwen's 151,936 it would be 622 MB, so it is recomputed.
REFERENCE_MEMO_BYTES = 256 * 2**20


# --------------------------------------------------------------------------- weights
def response_weights(
    groups: list[dict], objective: objectives.Objective, config: Profile, slots: int | None
) -> list[list[float]]:
    """w_i of every response ([P][G_p]); refuses a rollout set the objective cannot weigh."""
    group_size = len(groups[0]["responses"])
    if slots is not None:
        if objective.aggregation.kind != "response_mean":
            raise ValueError("padded slots need the per-response token mean aggregation")
        if any(not 1 <= len(g["responses"]) <= slots for g in groups):
            raise ValueError(f"every prompt needs 1..{slots} responses with {slots} slots")
        return [[1.0 / (len(groups) * slots)] * len(g["responses"]) for g in groups]
    if any(len(g["responses"]) != group_size for g in groups):
        raise ValueError("every prompt of a rollout set needs the same number of responses")
    return objectives.response_weights(
        objective,
        [[len(r["response_ids"]) for r in g["responses"]] for g in groups],
        max_length=config.tokens.max_response,
    )


# --------------------------------------------------------------------------- forward passes
def _pad_id(policy) -> int:
    """Any id works (positions decide what is real); the model's pad or 0."""
    value = getattr(policy.config, "pad_token_id", None)
    return 0 if value is None else int(value)


def _single_logits(model, prompt_ids: list[int], response_ids: list[int]) -> torch.Tensor:
    """Float32 logits [1, R, V] at the R prefixes that predicted the response tokens."""
    device = rollout.model_device(model)
    ids = torch.tensor([prompt_ids + response_ids], dtype=torch.long, device=device)
    logits = scoring.forward_logits(model, ids, torch.ones_like(ids))
    return logits[:, rollout.response_slice(len(prompt_ids), len(response_ids))]


def single_pass(
    policy, reference, rows: list[dict], share_prompts: bool, memo: dict | None, key
) -> dict:
    """One response, unpadded (no memo: the path's memory is that of one sequence)."""
    (row,) = rows
    device = rollout.model_device(policy)
    response = row["response_ids"]
    with torch.no_grad():
        reference_logits = _single_logits(reference, row["prompt_ids"], response)
    current_logits = _single_logits(policy, row["prompt_ids"], response)
    targets = torch.tensor([response], dtype=torch.long, device=device)
    return {
        "targets": targets,
        "mask": torch.ones_like(targets, dtype=torch.bool),
        "old": torch.tensor([row["behaviour_logprobs"]], dtype=torch.float32, device=device),
        "lengths": [len(response)],
        "current_logits": current_logits,
        "reference_logits": reference_logits,
    }


def batched_pass(
    policy, reference, rows: list[dict], share_prompts: bool, memo: dict | None, key
) -> dict:
    """Responses in one padded batch; the reference's logits read from `memo` at `key`
    when an earlier update of the same rollout set kept them there."""
    batch = batched_scoring.rollout_batch(
        rows, _pad_id(policy), rollout.model_device(policy), share_prompts
    )
    if memo is not None and key in memo:
        reference_logits = memo[key]
    else:
        with torch.no_grad():
            reference_logits = batched_scoring.response_logits(reference, batch)
        if (
            memo is not None
            and reference_logits.numel() * reference_logits.element_size() <= REFERENCE_MEMO_BYTES
        ):
            memo[key] = reference_logits
    return {
        "targets": batch["targets"],
        "mask": batch["response_mask"],
        "old": batch["old"],
        "lengths": batch["lengths"],
        "current_logits": batched_scoring.response_logits(policy, batch),
        "reference_logits": reference_logits,
    }


# --------------------------------------------------------------------------- telemetry
@dataclass
class _Tally:
    """Per-response numbers and token counts gathered over the passes."""

    per: dict = field(
        default_factory=lambda: {k: [] for k in ("loss", "surrogate", "kl", "exact", "entropy")}
    )
    counts: dict = field(
        default_factory=lambda: {"tokens": 0, "clip_low": 0.0, "clip_high": 0.0, "outside": 0.0}
    )
    ratio_min: float = float("inf")
    ratio_max: float = float("-inf")
    weight_range: tuple = (float("inf"), float("-inf"))  # behaviour weights, if corrected
    audits: list = field(default_factory=list)

    def add(
        self, chunk: list[dict], step: dict, audit: dict, exact: torch.Tensor, block: int
    ) -> None:
        mask = step["mask"]
        exact_means = losses.masked_token_mean(exact, mask)
        entropies = entropy.masked_mean_entropy(step["current_logits"], mask, block)
        tokens = audit["active_tokens"]
        self.counts["tokens"] += tokens
        for name in ("clip_low", "clip_high", "outside"):
            self.counts[name] += audit[f"{name}_fraction"] * tokens
        if "behaviour_weights" in audit:  # only objectives with a correction report it
            weights = audit["behaviour_weights"][mask]
            self.counts["weight_zero"] = self.counts.get("weight_zero", 0) + int(
                (weights == 0).sum()
            )
            self.counts["weight_sum"] = self.counts.get("weight_sum", 0.0) + float(weights.sum())
            self.weight_range = (
                min(self.weight_range[0], float(weights.min())),
                max(self.weight_range[1], float(weights.max())),
            )
        ratios = audit["ratios"]
        active = ratios[mask]
        self.ratio_min = min(self.ratio_min, float(active.min()))
        self.ratio_max = max(self.ratio_max, float(active.max()))
        for i, row in enumerate(chunk):
            n = step["lengths"][i]
            for name in ("loss", "surrogate", "kl"):
                self.per[name].append(float(audit[name][i]))
            self.per["exact"].append(float(exact_means[i]))
            self.per["entropy"].append(float(entropies[i]))
            self.audits.append(
                {
                    "rollout_id": row["rollout_id"],
                    "ratios": ratios[i, :n].tolist(),
                    "exact_kl": exact[i, :n].tolist(),
                    "surrogate": self.per["surrogate"][-1],
                    "kl": self.per["kl"][-1],
                }
            )

    def telemetry(
        self,
        groups: list[dict],
        weights: list[list[float]],
        objective: objectives.Objective,
        padded: bool,
    ) -> dict:
        group_size = len(groups[0]["responses"])
        flat = [w for row in weights for w in row]

        def reduced(values):  # as the loss reduces them
            if padded:
                return float(sum(w * v for w, v in zip(flat, values)))
            table = torch.tensor(values, dtype=torch.float64).reshape(len(groups), group_size)
            if objective.aggregation.kind == "response_mean":  # token -> response -> prompt
                return float(losses.reduce_responses_then_prompts(table))
            return float((table * torch.tensor(weights, dtype=torch.float64)).sum())

        def response_mean(values):  # response, then prompt (a plain mean with slots)
            return losses.response_prompt_mean(values, len(groups), group_size, padded)

        tokens = self.counts["tokens"]
        corrected = (
            {
                "behaviour_weight_mean": self.counts["weight_sum"] / tokens,
                "behaviour_weight_zero_fraction": self.counts["weight_zero"] / tokens,
                "behaviour_weight_min": self.weight_range[0],
                "behaviour_weight_max": self.weight_range[1],
            }
            if "weight_sum" in self.counts
            else {}
        )
        return {
            **corrected,
            "loss": reduced(self.per["loss"]),
            "surrogate": reduced(self.per["surrogate"]),
            "mean_exact_kl": response_mean(self.per["exact"]),
            "mean_entropy": response_mean(self.per["entropy"]),
            "clip_low_fraction": self.counts["clip_low"] / tokens,
            "clip_high_fraction": self.counts["clip_high"] / tokens,
            "outside_fraction": self.counts["outside"] / tokens,
            "ratio_min": self.ratio_min,
            "ratio_max": self.ratio_max,
            "tokens": tokens,
            "responses": self.audits,
        }


# --------------------------------------------------------------------------- the loop
def _trainer_old(objective, current, tensors: dict, chunk: list[dict], memo: dict | None):
    """With a behaviour correction, the trainer's own log-probs at the rollout's parameters
    (the ratio's denominator): the first update of a rollout set computes them (its
    `current`, detached) and keeps them per response in `memo` for the later updates.
    Without a memo every update uses its own `current` (exact for the first update only)."""
    if objective.correction.kind == "none":
        return None
    keys = [("trainer_old", row["rollout_id"]) for row in chunk]
    if memo is not None and all(k in memo for k in keys):
        padded = torch.zeros_like(current)
        for i, (k, n) in enumerate(zip(keys, tensors["lengths"])):
            padded[i, :n] = memo[k]
        return padded
    detached = current.detach()
    if memo is not None:
        for i, (k, n) in enumerate(zip(keys, tensors["lengths"])):
            memo[k] = detached[i, :n].clone()
    return detached


@dataclass(frozen=True)
class UpdateOptions:
    """How one update reads its rollout set, beyond the profile.

    objective: the registry entry to optimise (None: the profile's). slots: the fixed
    number of response slots per group a sampler that drops rows normalises by (AERO).
    reference_memo: a dict kept for one rollout set (batched only): the frozen reference's
    logits of each pass are kept there by the first update and read by the next ones, the
    very tensors a second forward would recompute (up to REFERENCE_MEMO_BYTES per pass).
    rows_per_pass: rows in one padded pass (batched only; None: all rows).
    """

    objective: objectives.Objective | None = None
    slots: int | None = None
    reference_memo: dict | None = None
    rows_per_pass: int | None = None


PROFILE_OPTIONS = UpdateOptions()  # the profile's objective, every row in one pass, no memo


def accumulate_gradients(
    policy, reference, groups: list[dict], config: Profile, options: UpdateOptions = PROFILE_OPTIONS
) -> dict:
    """Backpropagate sum_i w_i * loss_i of a rollout set into policy .grad; returns the
    telemetry. The path is the config's (sampling.batched); `options` as UpdateOptions."""
    slots, reference_memo, rows_per_pass = (
        options.slots,
        options.reference_memo,
        options.rows_per_pass,
    )
    objective = options.objective
    if objective is None:
        objective = objectives.objective_from_config(config)
    weights = response_weights(groups, objective, config, slots)
    rows = [r for g in groups for r in g["responses"]]
    advantages = [float(a) for g in groups for a in g["advantages"]]
    if len(advantages) != len(rows):
        raise ValueError("every response needs one advantage")
    flat_weights = [w for row in weights for w in row]
    if config.sampling.batched:
        forward, step = batched_pass, len(rows) if rows_per_pass is None else int(rows_per_pass)
        if step < 1:
            raise ValueError(f"rows_per_pass must be a positive integer, got {rows_per_pass!r}")
    elif rows_per_pass is not None:
        raise ValueError("rows_per_pass needs sampling.batched (padded passes)")
    else:
        forward, step = single_pass, 1
    device, block = rollout.model_device(policy), config.grpo.kl_block_size
    tally = _Tally()
    for start in range(0, len(rows), step):
        chunk = rows[start : start + step]
        tensors = forward(
            policy, reference, chunk, config.grpo.share_prompts, reference_memo, (start, step)
        )
        current_logits, reference_logits = tensors["current_logits"], tensors["reference_logits"]
        current = batched_scoring.token_logprobs(current_logits, tensors["targets"])
        advantage = torch.tensor(
            advantages[start : start + step], dtype=torch.float32, device=device
        )
        kl = objectives.kl_per_token(
            objective, current_logits, reference_logits, tensors["targets"], block_size=block
        )
        trainer_old = _trainer_old(objective, current, tensors, chunk, reference_memo)
        loss, audit = objectives.response_losses(
            objective,
            objectives.TokenLogProbs(current, tensors["old"], tensors["mask"]),
            advantage,
            kl,
            trainer_old,
        )
        if not torch.isfinite(loss).all():
            bad = (~torch.isfinite(loss)).nonzero().flatten().tolist()
            raise ValueError(f"non-finite GRPO loss on {chunk[bad[0]]['rollout_id']}")
        weight = torch.tensor(flat_weights[start : start + step], dtype=loss.dtype, device=device)
        (loss * weight).sum().backward()
        if objective.kl.kind == "exact_prefix":
            exact = kl.detach()
        else:  # the yardstick, measured but not optimised
            with torch.no_grad():
                exact = losses.exact_prefix_kl(current_logits, reference_logits, block_size=block)
        tally.add(chunk, tensors, audit, exact, block)
        del tensors, current_logits, reference_logits, current, kl, loss, exact
    return tally.telemetry(groups, weights, objective, slots is not None)
