"""Teacher-forced scoring of a whole rollout set in one padded batch.

Layout (the generation batch's): the prompts are left-padded to a common width W and the
responses right-padded to the longest one, R, so response token j of every row sits in
column W + j and is predicted by the logits of column W + j - 1. The model therefore only
projects the last R + 1 columns onto the vocabulary (logits_to_keep), of which the first R
are kept: [B, R, V], not [B, W + R, V]. Attention mask and position ids count each row's
real tokens only; which response tokens are real is decided by position (j < the row's
length), never by token value, so a pad id that is also a real token cannot leak in.
"""
from __future__ import annotations

import torch

from verifiable_grpo.training.batched_rollout import full_forward_mask, left_padded, positions
from verifiable_grpo.training.rollout import model_device


def rollout_batch(rows: list[dict], pad_id: int, device) -> dict:
    """The padded tensors of responses (prompt_ids, response_ids, behaviour_logprobs):
    input_ids/attention_mask/position_ids [B, W + R], targets/response_mask/old [B, R]."""
    if not rows:
        raise ValueError("no responses to score")
    lengths = [len(r["response_ids"]) for r in rows]
    if min(lengths) < 1:
        raise ValueError("every response needs at least one token")
    for row in rows:
        if len(row["behaviour_logprobs"]) != len(row["response_ids"]):
            raise ValueError(f"{row.get('rollout_id')}: {len(row['behaviour_logprobs'])} captured "
                             f"log-probs for {len(row['response_ids'])} response tokens")
    width = max(lengths)
    prompt_ids, prompt_mask, _ = left_padded([r["prompt_ids"] for r in rows], pad_id, "cpu")
    targets = torch.full((len(rows), width), int(pad_id), dtype=torch.long)
    old = torch.zeros((len(rows), width), dtype=torch.float32)
    for i, row in enumerate(rows):
        targets[i, :lengths[i]] = torch.tensor(row["response_ids"], dtype=torch.long)
        old[i, :lengths[i]] = torch.tensor(row["behaviour_logprobs"], dtype=torch.float32)
    response_mask = torch.arange(width)[None, :] < torch.tensor(lengths)[:, None]
    attention = torch.cat([prompt_mask, response_mask.long()], dim=1)
    return {"input_ids": torch.cat([prompt_ids, targets], dim=1).to(device),
            "attention_mask": attention.to(device),
            "position_ids": positions(attention).to(device),
            "targets": targets.to(device), "response_mask": response_mask.to(device),
            "old": old.to(device), "lengths": lengths}


def response_logits(model, batch: dict) -> torch.Tensor:
    """Float32 logits [B, R, V] at the prefixes that predicted each response token."""
    width = batch["targets"].shape[1]
    mask = full_forward_mask(batch["attention_mask"], next(model.parameters()).dtype)
    out = model(input_ids=batch["input_ids"], attention_mask=mask, position_ids=batch["position_ids"], use_cache=False, logits_to_keep=width + 1)
    return out.logits[:, :-1].float()


def token_logprobs(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """[B, R]: float32 log-softmax of each row's logits at its target tokens."""
    return torch.log_softmax(logits, dim=-1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)


@torch.no_grad()
def verify_captured_logprobs(model, rows: list[dict], tolerance: float, pad_id: int) -> dict:
    """rollout.verify_captured_logprobs with one padded rescoring pass for all rows."""
    if model.training:
        raise ValueError("verification needs the model in eval mode (dropout off)")
    if not rows:
        raise ValueError("no responses to verify")
    batch = rollout_batch(rows, pad_id, model_device(model))
    rescored = token_logprobs(response_logits(model, batch), batch["targets"]).double().cpu()
    gap = (rescored - batch["old"].double().cpu()).abs()
    differences = [float(gap[i, :n].max()) for i, n in enumerate(batch["lengths"])]
    worst = max(differences)
    if not worst <= tolerance:
        index = differences.index(worst)
        raise ValueError(f"captured behaviour log-probs disagree with full-sequence rescoring: "
                         f"max |difference| {worst:.3e} > tolerance {tolerance:g} "
                         f"(response {rows[index].get('rollout_id', index)})")
    return {"max_abs_difference": worst, "tolerance": tolerance, "responses": len(rows),
            "per_response": differences}
