"""The training-inference mismatch: the same policy scored along two numerical paths.

A sampler records log p_sample of every token it draws; the trainer recomputes log p_train
for the same tokens. In exact arithmetic they agree and the "on-policy" ratio is 1. In
floating point they differ whenever the two paths differ: KV-cache decoding against one
full-sequence forward, one row against a left-padded batch, float32 against bfloat16,
eager against SDPA attention. This module scores given responses along each path, summarises
the per-token log-ratio, measures what it does to the clipped GRPO surrogate's gradient, and
implements the two corrections engines apply: truncated (TIS) and masked (MIS) importance
sampling, with TRL 1.16's mode names and default cap (GRPOConfig
vllm_importance_sampling_mode = "sequence_mask", vllm_importance_sampling_clip_max = 3.0,
clip_min None; trainer/grpo_trainer.py, the block that builds vllm_importance_sampling_ratio).
"""

from __future__ import annotations

import contextlib

import torch

from verifiable_grpo.training import batched_scoring, losses, surrogates
from verifiable_grpo.training.rollout import model_device

MODES = surrogates.CORRECTION_MODES
TRL_CLIP_MAX = 3.0  # TRL 1.16 GRPOConfig.vllm_importance_sampling_clip_max default


# --------------------------------------------------------------------------- scoring paths
def _precision(bf16: bool):
    return torch.autocast("cpu", dtype=torch.bfloat16) if bf16 else contextlib.nullcontext()


def score_one_by_one(model, rows: list[dict], bf16: bool = False) -> list[torch.Tensor]:
    """Full-sequence rescoring of each row alone: float64 log-probs [R] per row."""
    device = model_device(model)
    scored = []
    for row in rows:
        prompt, response = row["prompt_ids"], row["response_ids"]
        ids = torch.tensor([prompt + response], dtype=torch.long, device=device)
        with _precision(bf16):
            logits = model(input_ids=ids, use_cache=False).logits[0]
        logits = logits[len(prompt) - 1 : len(prompt) - 1 + len(response)].float()
        targets = torch.tensor(response, dtype=torch.long, device=device)
        scored.append(batched_scoring.token_logprobs(logits, targets).double().cpu())
    return scored


def score_padded_batch(
    model, rows: list[dict], pad_id: int, bf16: bool = False
) -> list[torch.Tensor]:
    """All rows in one left-padded forward (the book's batched trainer path)."""
    batch = batched_scoring.rollout_batch(rows, pad_id, model_device(model))
    with _precision(bf16):
        logits = batched_scoring.response_logits(model, batch)
    scored = batched_scoring.token_logprobs(logits.float(), batch["targets"]).double().cpu()
    return [scored[i, :n] for i, n in enumerate(batch["lengths"])]


def captured(rows: list[dict]) -> list[torch.Tensor]:
    """The sampler's own log-probs (KV-cache decoding), as float64 tensors."""
    return [torch.tensor(r["behaviour_logprobs"], dtype=torch.float64) for r in rows]


@torch.no_grad()
def score_path(model, rows: list[dict], path: str, pad_id: int) -> list[torch.Tensor]:
    """Log-probs of the rows' tokens along one named path."""
    if model.training:
        raise ValueError("scoring needs the model in eval mode (dropout off)")
    if path == "kv_cache":
        return captured(rows)
    if path == "one_by_one":
        return score_one_by_one(model, rows)
    if path == "padded_batch":
        return score_padded_batch(model, rows, pad_id)
    if path == "bf16":
        return score_one_by_one(model, rows, bf16=True)
    raise ValueError(f"unknown scoring path {path!r}")


# --------------------------------------------------------------------------- the statistics
def padded(per_row: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """([B, T] float64 values, [B, T] bool mask) of ragged rows."""
    width = max(len(r) for r in per_row)
    values = torch.zeros((len(per_row), width), dtype=torch.float64)
    mask = torch.zeros((len(per_row), width), dtype=torch.bool)
    for i, r in enumerate(per_row):
        values[i, : len(r)], mask[i, : len(r)] = r, True
    return values, mask


def log_ratio_summary(
    train: list[torch.Tensor], sample: list[torch.Tensor], clip_epsilon: float = 0.2
) -> dict:
    """Per-token log p_train - log p_sample: max |.|, quantiles of |.|, the ratio's largest
    deviation from 1, the sequence log-ratio's largest |.|, and the fraction of tokens the
    PPO clip [1 - eps, 1 + eps] would see outside (python floats)."""
    if len(train) != len(sample) or any(len(a) != len(b) for a, b in zip(train, sample)):
        raise ValueError("train and sample log-probs must cover the same tokens")
    diff = torch.cat([a - b for a, b in zip(train, sample)])
    size = diff.abs()
    ratio = diff.exp()
    outside = (ratio < 1 - clip_epsilon) | (ratio > 1 + clip_epsilon)
    sequence = torch.stack([(a - b).sum() for a, b in zip(train, sample)])
    return {
        "tokens": int(diff.numel()),
        "max_abs": float(size.max()),
        "median_abs": float(size.quantile(0.5)),
        "q99_abs": float(size.quantile(0.99)),
        "max_ratio_deviation": float((ratio - 1).abs().max()),
        "max_sequence_abs": float(sequence.abs().max()),
        "clip_outside_fraction": float(outside.double().mean()),
    }


# --------------------------------------------------------------------------- corrections
def importance_weights(
    train: torch.Tensor,
    sample: torch.Tensor,
    mask: torch.Tensor,
    mode: str = "sequence_mask",
    clip_max: float | None = TRL_CLIP_MAX,
    clip_min: float | None = None,
) -> torch.Tensor:
    """Per-token weights [B, T] that multiply the per-token loss, as TRL 1.16 builds them.

    ratio = exp(log p_train - log p_sample), per token or (sequence modes) the exponential of
    the row's summed log-ratio, shared by its tokens. *_truncate clamps the ratio to
    [clip_min, clip_max] (TIS); *_mask sets it to 0 outside that interval (MIS). Inactive
    tokens get weight 0. Pure; train and sample [B, T], mask [B, T] bool.
    """
    if not train.shape == sample.shape == mask.shape:
        raise ValueError("train, sample and mask must have the same shape")
    # One implementation: the registry's behaviour corrections use the same function.
    return surrogates.behaviour_weights(train, sample, mask, mode, clip_min, clip_max)


# --------------------------------------------------------------------------- gradients
def surrogate_gradient(
    model,
    rows: list[dict],
    old: list[torch.Tensor],
    advantages: torch.Tensor,
    pad_id: int,
    weights: torch.Tensor | None = None,
) -> torch.Tensor:
    """Flat gradient of the batch mean of losses.clipped_group_surrogate (float32, padded
    batch), with `old` as the behaviour log-probs and optional per-token weights [B, T]
    multiplying the per-token loss (a TIS/MIS correction)."""
    batch = batched_scoring.rollout_batch(rows, pad_id, model_device(model))
    current = batched_scoring.token_logprobs(
        batched_scoring.response_logits(model, batch), batch["targets"]
    )
    old_values, mask = padded(old)
    old_values = old_values.to(current.dtype)
    per_token, _ = losses.clipped_surrogate_tokens(
        losses.TokenLogProbs(current, old_values, mask), advantages, losses.ClipRange(0.2), "token"
    )
    if weights is not None:
        per_token = per_token * weights.to(per_token.dtype)
    loss = losses.masked_token_mean(per_token, mask).mean()
    params = [p for p in model.parameters() if p.requires_grad]
    grads = torch.autograd.grad(loss, params, allow_unused=True)
    return torch.cat(
        [
            (g if g is not None else torch.zeros_like(p)).reshape(-1).double()
            for g, p in zip(grads, params)
        ]
    )


def gradient_gap(reference: torch.Tensor, other: torch.Tensor) -> dict:
    """Cosine and relative norm ||other - reference|| / ||reference|| of two gradients."""
    norm = float(reference.norm())
    if norm == 0.0:
        raise ValueError("the reference gradient is zero: no direction to compare")
    cosine = float(torch.nn.functional.cosine_similarity(reference, other, dim=0))
    return {"cosine": cosine, "relative_difference": float((other - reference).norm()) / norm}
