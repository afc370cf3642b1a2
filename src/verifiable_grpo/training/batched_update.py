"""The gradient of a rollout set's loss from padded batches (sampling.batched: true).

The same loss as grpo.accumulate_gradients' one-response-at-a-time path, reduced the same
way (each response's loss_i times its objective weight w_i, summed), but the responses go
through policy and reference together, `rows_per_pass` at a time (default: all), in the
layout of batched_scoring (grpo.share_prompts: each distinct prompt once per model pass). The exact prefix KL runs block-wise over the vocabulary on the
whole [rows, R, V] batch (losses.exact_prefix_kl: its working memory is one block, not the
vocabulary). Padding positions are excluded by the response mask (torch.where in every
reduction), so they carry no loss and no gradient.
"""
from __future__ import annotations

import torch

from verifiable_grpo.core.config_schema import typed
from verifiable_grpo.training import batched_scoring, entropy, losses, objectives
from verifiable_grpo.training.rollout import model_device


# Reference logits kept between the updates of one rollout set, per pass: a 16 x 64 set at
# the tiny vocabulary is a few MB; at Qwen's 151,936 it would be 622 MB, so it is recomputed.
REFERENCE_MEMO_BYTES = 256 * 2**20


def _pad_id(policy) -> int:
    """Any id works (positions decide what is real); the model's pad or 0."""
    value = getattr(policy.config, "pad_token_id", None)
    return 0 if value is None else int(value)


def accumulate_gradients(policy, reference, groups: list[dict], config: dict,
                         objective: objectives.Objective | None = None,
                         rows_per_pass: int | None = None,
                         weights: list[list[float]] | None = None, padded: bool = False,
                         reference_memo: dict | None = None) -> dict:
    """Backpropagate sum_i w_i * loss_i of a rollout set into policy .grad; returns the
    same telemetry as grpo.accumulate_gradients. `weights` ([P][G_p], from
    grpo.accumulate_gradients) default to the objective's; `padded` (AERO's slots, groups
    of 1..slots responses): losses are the weighted sum and the KL a plain response mean,
    as on the one-at-a-time path. `reference_memo` (a dict kept for one rollout set): the
    frozen reference's logits of each pass are kept there by the first update and read by
    the next ones, the very tensors a second forward would recompute (up to
    REFERENCE_MEMO_BYTES per pass)."""
    cfg = typed(config)
    objective = objectives.objective_from_config(config) if objective is None else objective
    group_size = len(groups[0]["responses"])
    if weights is None and any(len(g["responses"]) != group_size for g in groups):
        raise ValueError("every prompt of a rollout set needs the same number of responses")
    rows = [r for g in groups for r in g["responses"]]
    advantages = [float(a) for g in groups for a in g["advantages"]]
    if len(advantages) != len(rows):
        raise ValueError("every response needs one advantage")
    if weights is None:
        weights = objectives.response_weights(
            objective, [[len(r["response_ids"]) for r in g["responses"]] for g in groups],
            max_length=cfg.tokens.max_response)
    if [len(w) for w in weights] != [len(g["responses"]) for g in groups]:
        raise ValueError("weights need one entry per response of every prompt")
    flat_weights = [w for row in weights for w in row]
    step = len(rows) if rows_per_pass is None else int(rows_per_pass)
    if step < 1:
        raise ValueError(f"rows_per_pass must be a positive integer, got {rows_per_pass!r}")
    device = model_device(policy)
    block = cfg.grpo.kl_block_size
    per = {"loss": [], "surrogate": [], "kl": [], "exact": [], "entropy": []}
    counts = {"tokens": 0, "clip_low": 0.0, "clip_high": 0.0, "outside": 0.0}
    ratio_min, ratio_max = float("inf"), float("-inf")
    audits = []
    for start in range(0, len(rows), step):
        chunk = rows[start:start + step]
        batch = batched_scoring.rollout_batch(chunk, _pad_id(policy), device,
                                              cfg.grpo.share_prompts)
        mask = batch["response_mask"]
        if reference_memo is not None and (start, step) in reference_memo:
            reference_logits = reference_memo[(start, step)]
        else:
            with torch.no_grad():
                reference_logits = batched_scoring.response_logits(reference, batch)
            if (reference_memo is not None and reference_logits.numel()
                    * reference_logits.element_size() <= REFERENCE_MEMO_BYTES):
                reference_memo[(start, step)] = reference_logits
        current_logits = batched_scoring.response_logits(policy, batch)
        current = batched_scoring.token_logprobs(current_logits, batch["targets"])
        advantage = torch.tensor(advantages[start:start + step], dtype=torch.float32,
                                 device=device)
        kl = objectives.kl_per_token(objective, current_logits, reference_logits,
                                     batch["targets"], block_size=block)
        loss, audit = objectives.response_losses(objective, current, batch["old"], advantage,
                                                 mask, kl)
        if not torch.isfinite(loss).all():
            bad = (~torch.isfinite(loss)).nonzero().flatten().tolist()
            raise ValueError(f"non-finite GRPO loss on {chunk[bad[0]]['rollout_id']}")
        weight = torch.tensor(flat_weights[start:start + step], dtype=loss.dtype, device=device)
        (loss * weight).sum().backward()
        if objective.kl.kind == "exact_prefix":
            exact = kl.detach()
        else:  # the yardstick, measured but not optimised
            with torch.no_grad():
                exact = losses.exact_prefix_kl(current_logits, reference_logits, block_size=block)
        exact_means = losses.masked_token_mean(exact, mask)
        entropies = entropy.masked_mean_entropy(current_logits, mask, block)
        tokens = audit["active_tokens"]
        counts["tokens"] += tokens
        counts["clip_low"] += audit["clip_low_fraction"] * tokens
        counts["clip_high"] += audit["clip_high_fraction"] * tokens
        counts["outside"] += audit["outside_fraction"] * tokens
        ratios = audit["ratios"]
        active = ratios[mask]
        ratio_min = min(ratio_min, float(active.min()))
        ratio_max = max(ratio_max, float(active.max()))
        for i, row in enumerate(chunk):
            n = batch["lengths"][i]
            per["loss"].append(float(audit["loss"][i]))
            per["surrogate"].append(float(audit["surrogate"][i]))
            per["kl"].append(float(audit["kl"][i]))
            per["exact"].append(float(exact_means[i]))
            per["entropy"].append(float(entropies[i]))
            audits.append({"rollout_id": row["rollout_id"], "ratios": ratios[i, :n].tolist(),
                           "exact_kl": exact[i, :n].tolist(), "surrogate": per["surrogate"][-1],
                           "kl": per["kl"][-1]})
        del current_logits, reference_logits, current, kl, loss, exact

    def reduced(values):  # as the loss reduces them
        if padded:
            return float(sum(w * v for w, v in zip(flat_weights, values)))
        table = torch.tensor(values, dtype=torch.float64).reshape(len(groups), group_size)
        if objective.aggregation.kind == "response_mean":  # token -> response -> prompt
            return float(losses.reduce_responses_then_prompts(table))
        return float((table * torch.tensor(weights, dtype=torch.float64)).sum())

    def response_mean(values):  # as the exact KL is reported: response, then prompt
        return losses.response_prompt_mean(values, len(groups), group_size, padded)

    tokens = counts["tokens"]
    return {
        "loss": reduced(per["loss"]),
        "surrogate": reduced(per["surrogate"]),
        "mean_exact_kl": response_mean(per["exact"]),
        "mean_entropy": response_mean(per["entropy"]),
        "clip_low_fraction": counts["clip_low"] / tokens,
        "clip_high_fraction": counts["clip_high"] / tokens,
        "outside_fraction": counts["outside"] / tokens,
        "ratio_min": ratio_min,
        "ratio_max": ratio_max,
        "tokens": tokens,
        "responses": audits,
    }
