"""Teacher-forced scoring: the log-probability the policy gives each token of a sequence.

Alignment: the logits at position t are the model's distribution for token t+1, so the
score of token t+1 is log_softmax(logits[t])[ids[t+1]]; the first token has no score.
Log-softmax runs in float32 over the full vocabulary.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch


def forward_logits(model, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """[B, T, V] float32 logits (no KV cache)."""
    device = next(model.parameters()).device
    output = model(
        input_ids=input_ids.to(device), attention_mask=attention_mask.to(device), use_cache=False
    )
    return output.logits.float()


def logprobs_from_logits(logits: torch.Tensor, input_ids: torch.Tensor) -> torch.Tensor:
    """[B, T-1]: log p(ids[:, t+1] | ids[:, :t+1]) from logits[:, t]."""
    targets = input_ids[:, 1:].to(logits.device).unsqueeze(-1)
    return torch.log_softmax(logits[:, :-1].float(), dim=-1).gather(-1, targets).squeeze(-1)


def token_logprobs(model, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    return logprobs_from_logits(forward_logits(model, input_ids, attention_mask), input_ids)


def target_mask(response_mask: torch.Tensor) -> torch.Tensor:
    """The response mask aligned with token_logprobs (drop position 0, which nothing predicts)."""
    return response_mask[:, 1:]


def masked_sums(logprobs: torch.Tensor, response_mask: torch.Tensor):
    """(sum of supervised log-probs per row [B], supervised tokens per row [B])."""
    mask = target_mask(response_mask).to(logprobs.device)
    return (logprobs * mask).sum(dim=1), mask.sum(dim=1)


def token_table(tokenizer, input_ids, logprobs, response_mask) -> list[dict]:
    """One row per position of ONE sequence: what was read, whether it is supervised, its score.

    input_ids [T] (or [1, T]), logprobs [T-1] as from token_logprobs, response_mask [T].
    """

    def flat(value) -> list:
        if isinstance(value, torch.Tensor):
            value = value.detach().cpu()
            if value.dim() == 2:
                if value.shape[0] != 1:
                    raise ValueError("token_table shows one sequence; pass a single row")
                value = value[0]
            return value.tolist()
        if value and isinstance(value[0], (list, tuple)):
            return flat(torch.tensor(value))
        return list(value)

    ids, scores, mask = flat(input_ids), flat(logprobs), flat(response_mask)
    if len(scores) != len(ids) - 1 or len(mask) != len(ids):
        raise ValueError(
            f"lengths disagree: {len(ids)} ids, {len(scores)} log-probs "
            f"(expected {len(ids) - 1}), {len(mask)} mask entries"
        )
    return [
        {
            "position": t,
            "token_id": int(i),
            "token": tokenizer.decode([int(i)], skip_special_tokens=False),
            "supervised": bool(mask[t]),
            "logprob": None if t == 0 else float(scores[t - 1]),
        }
        for t, i in enumerate(ids)
    ]


def response_logprob_rows(model, rows: Sequence[dict], pad_id: int, batch_size: int = 8):
    """Per row: (sum of supervised log-probs, supervised tokens); no gradients."""
    results = []
    with torch.no_grad():
        for start in range(0, len(rows), batch_size):
            batch = collate(rows[start : start + batch_size], pad_id)
            scores = token_logprobs(model, batch["input_ids"], batch["attention_mask"])
            sums, counts = masked_sums(scores, batch["response_mask"])
            results += [(float(s), int(c)) for s, c in zip(sums.cpu(), counts.cpu())]
    return results


def collate(rows: Sequence[dict], pad_id: int) -> dict[str, torch.Tensor]:
    """Right-padded batch: input_ids, attention_mask (1 on real tokens), response_mask (bool)."""
    if not rows:
        raise ValueError("cannot collate an empty batch")
    width = max(len(r["input_ids"]) for r in rows)
    input_ids = torch.full((len(rows), width), int(pad_id), dtype=torch.long)
    attention = torch.zeros((len(rows), width), dtype=torch.long)
    response = torch.zeros((len(rows), width), dtype=torch.bool)
    for i, row in enumerate(rows):
        n = len(row["input_ids"])
        if len(row["response_mask"]) != n:
            raise ValueError(f"row {i}: response_mask length {len(row['response_mask'])} != {n}")
        input_ids[i, :n] = torch.tensor(row["input_ids"], dtype=torch.long)
        attention[i, :n] = 1
        response[i, :n] = torch.tensor(row["response_mask"], dtype=torch.bool)
    return {"input_ids": input_ids, "attention_mask": attention, "response_mask": response}
