"""Teacher-forced scoring of a whole rollout set in one padded batch.

Layout (the generation batch's): the prompts are left-padded to a common width W and the
responses right-padded to the longest one, R, so response token j of every row sits in
column W + j and is predicted by the logits of column W + j - 1. The model therefore only
projects the last R + 1 columns onto the vocabulary (logits_to_keep), of which the first R
are kept: [B, R, V], not [B, W + R, V]. Attention mask and position ids count each row's
real tokens only; which response tokens are real is decided by position (j < the row's
length), never by token value, so a pad id that is also a real token cannot leak in.

Shared prompts (grpo.share_prompts): the G responses of a group repeat one prompt, so the
batch holds each distinct prompt once ([U, W], first appearance order) and `row_prompt`
[B] says which prompt each response row continues. The model reads the U prompts once
with a KV cache (the last column's logits predict response token 0), the cache is
gathered to the B rows (an index_select: in the policy's forward the gradient of every
row flows back into its prompt's single computation) and the response columns 0..R-2 go
through on top of it, predicting tokens 1..R-1. The logits are those of the whole-row
layout up to float rounding (another order of the same sums); a GRPO iteration's
forward and backward then cost about P*W + B*R token positions instead of B*(W + R).
"""

from __future__ import annotations

import torch

from verifiable_grpo.core.config_schema import Profile
from verifiable_grpo.task import prompts
from verifiable_grpo.training.batched_rollout import (
    distinct_prompts,
    full_forward_mask,
    left_padded,
    positions,
)
from verifiable_grpo.training.rollout import captured_verdict, model_device
from verifiable_grpo.training.rollout import verify_captured_logprobs as verify_sequentially


def rollout_batch(rows: list[dict], pad_id: int, device, share_prompts: bool = False) -> dict:
    """The padded tensors of responses (prompt_ids, response_ids, behaviour_logprobs):
    input_ids/attention_mask/position_ids [B, W + R], targets/response_mask/old [B, R].
    share_prompts: prompt_ids/prompt_mask/prompt_positions [U, W] of the distinct prompts,
    row_prompt [B] and response_positions [B, R] instead of the whole-row inputs."""
    if not rows:
        raise ValueError("no responses to score")
    lengths = [len(r["response_ids"]) for r in rows]
    if min(lengths) < 1:
        raise ValueError("every response needs at least one token")
    for row in rows:
        if len(row["behaviour_logprobs"]) != len(row["response_ids"]):
            raise ValueError(
                f"{row.get('rollout_id')}: {len(row['behaviour_logprobs'])} captured "
                f"log-probs for {len(row['response_ids'])} response tokens"
            )
    width = max(lengths)
    targets = torch.full((len(rows), width), int(pad_id), dtype=torch.long)
    old = torch.zeros((len(rows), width), dtype=torch.float32)
    for i, row in enumerate(rows):
        targets[i, : lengths[i]] = torch.tensor(row["response_ids"], dtype=torch.long)
        old[i, : lengths[i]] = torch.tensor(row["behaviour_logprobs"], dtype=torch.float32)
    response_mask = torch.arange(width)[None, :] < torch.tensor(lengths)[:, None]
    common = {
        "targets": targets.to(device),
        "response_mask": response_mask.to(device),
        "old": old.to(device),
        "lengths": lengths,
    }
    if share_prompts:
        distinct, row_prompt = distinct_prompts([r["prompt_ids"] for r in rows])
        prompt_ids, prompt_mask, prompt_positions = left_padded(distinct, pad_id, "cpu")
        index = torch.tensor(row_prompt, dtype=torch.long)
        attention = torch.cat([prompt_mask[index], response_mask.long()], dim=1)
        prompt_lengths = prompt_mask.sum(dim=1)[index]
        return {
            **common,
            "prompt_ids": prompt_ids.to(device),
            "prompt_mask": prompt_mask.to(device),
            "prompt_positions": prompt_positions.to(device),
            "row_prompt": index.to(device),
            "attention_mask": attention.to(device),
            "response_positions": (prompt_lengths[:, None] + torch.arange(width)[None, :]).to(
                device
            ),
        }
    prompt_ids, prompt_mask, _ = left_padded([r["prompt_ids"] for r in rows], pad_id, "cpu")
    attention = torch.cat([prompt_mask, response_mask.long()], dim=1)
    return {
        **common,
        "input_ids": torch.cat([prompt_ids, targets], dim=1).to(device),
        "attention_mask": attention.to(device),
        "position_ids": positions(attention).to(device),
    }


def response_logits(model, batch: dict) -> torch.Tensor:
    """Float32 logits [B, R, V] at the prefixes that predicted each response token."""
    width = batch["targets"].shape[1]
    dtype = next(model.parameters()).dtype
    if "row_prompt" not in batch:
        mask = full_forward_mask(batch["attention_mask"], dtype, model)
        out = model(
            input_ids=batch["input_ids"],
            attention_mask=mask,
            position_ids=batch["position_ids"],
            use_cache=False,
            logits_to_keep=width + 1,
        )
        return out.logits[:, :-1].float()
    from transformers import DynamicCache  # transformers 5: passed as `cache=`

    cache = DynamicCache(config=model.config)
    prompt = model(
        input_ids=batch["prompt_ids"],
        attention_mask=full_forward_mask(batch["prompt_mask"], dtype, model),
        position_ids=batch["prompt_positions"],
        cache=cache,
        use_cache=True,
        logits_to_keep=1,
    )
    first = prompt.logits[:, -1:].float().index_select(0, batch["row_prompt"])
    if width == 1:
        return first
    cache.reorder_cache(batch["row_prompt"])  # [U] -> [B] rows, differentiable
    prompt_width = batch["prompt_ids"].shape[1]
    rest = model(
        input_ids=batch["targets"][:, :-1],
        attention_mask=batch["attention_mask"][:, : prompt_width + width - 1],
        position_ids=batch["response_positions"][:, :-1],
        cache=cache,
        use_cache=True,
    )
    return torch.cat([first, rest.logits.float()], dim=1)


def token_logprobs(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """[B, R]: float32 log-softmax of each row's logits at its target tokens."""
    return torch.log_softmax(logits, dim=-1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)


@torch.no_grad()
def verify_captured_logprobs(
    model, rows: list[dict], tolerance: float, pad_id: int, share_prompts: bool = False
) -> dict:
    """rollout.verify_captured_logprobs with one padded rescoring pass for all rows."""
    if model.training:
        raise ValueError("verification needs the model in eval mode (dropout off)")
    if not rows:
        raise ValueError("no responses to verify")
    batch = rollout_batch(rows, pad_id, model_device(model), share_prompts)
    rescored = token_logprobs(response_logits(model, batch), batch["targets"]).double().cpu()
    gap = (rescored - batch["old"].double().cpu()).abs()
    differences = [float(gap[i, :n].max()) for i, n in enumerate(batch["lengths"])]
    return captured_verdict(differences, rows, tolerance)


def verify_rollout_set(model, rows: list[dict], config: Profile, tokenizer) -> dict:
    """The captured log-prob check on the config's path (sampling.batched: one padded pass,
    grpo.share_prompts as configured; else one response at a time)."""
    tolerance = config.grpo.verify_tolerance
    if config.sampling.batched:
        return verify_captured_logprobs(
            model, rows, tolerance, prompts.eos_id(tokenizer, config), config.grpo.share_prompts
        )
    return verify_sequentially(model, rows, tolerance)
