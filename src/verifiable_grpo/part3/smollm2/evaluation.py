"""Held-out evaluation for Labs 1 and 2: masked loss, stopping and exact answers per family.

Greedy decoding, left-padded batches of 10, at most 16 new tokens. A reply "stops" when the
model emits <|im_end|>; what it wrote before that token, stripped, must equal the expected
reply character for character.
"""

from __future__ import annotations

import torch

from verifiable_grpo.part3.smollm2.chat_data import (
    END_ID,
    FAMILIES,
    PAD_ID,
    ChatRow,
    EncodedRow,
    batch_loss,
    render_prompt,
)

BATCH = 10
MAX_NEW_TOKENS = 16


@torch.no_grad()
def held_out_loss(model, encoded: list[EncodedRow]) -> float:
    total, count = 0.0, 0
    for start in range(0, len(encoded), BATCH):
        loss, n = batch_loss(model, encoded[start : start + BATCH])
        total, count = total + float(loss), count + n
    return total / count


@torch.no_grad()
def greedy_ids(
    model, tokenizer, prompts: list[str], max_new_tokens: int = MAX_NEW_TOKENS, eos_id: int = END_ID
) -> list[list[int]]:
    """New token ids per prompt (left padding so every prompt ends where generation starts)."""
    out = []
    for start in range(0, len(prompts), BATCH):
        rows = [
            tokenizer.encode(p, add_special_tokens=False) for p in prompts[start : start + BATCH]
        ]
        width = max(map(len, rows))
        ids = torch.tensor([[PAD_ID] * (width - len(r)) + r for r in rows])
        mask = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in rows])
        generated = model.generate(
            input_ids=ids,
            attention_mask=mask,
            do_sample=False,
            max_new_tokens=max_new_tokens,
            eos_token_id=eos_id,
            pad_token_id=PAD_ID,
            temperature=None,
            top_p=None,
            top_k=None,
        )
        out.extend(g[width:].tolist() for g in generated)
    return out


def cut_reply(tokenizer, new_ids: list[int]) -> tuple[str, bool]:
    """(text before the first <|im_end|>, stripped; whether that token was emitted)."""
    stopped = END_ID in new_ids
    kept = new_ids[: new_ids.index(END_ID)] if stopped else new_ids
    return tokenizer.decode(kept, skip_special_tokens=False).replace(
        "<|endoftext|>", ""
    ).strip(), stopped


def evaluate(model, tokenizer, rows: list[ChatRow], encoded: list[EncodedRow]) -> dict:
    """Held-out loss (token mean), stop rate, exact rate, exact rate per family, replies."""
    model.eval()
    generated = greedy_ids(model, tokenizer, [render_prompt(r["user"]) for r in rows])
    replies, stops, exact = [], [], []
    for row, new_ids in zip(rows, generated):
        text, stopped = cut_reply(tokenizer, new_ids)
        replies.append(text)
        stops.append(stopped)
        exact.append(stopped and text == row["reply"])
    # the five families, then any other the rows hold (Lab 1's sixth, letters), in row order
    names = dict.fromkeys([*FAMILIES, *(r["family"] for r in rows)])
    families = {
        f: sum(e for r, e in zip(rows, exact) if r["family"] == f)
        / max(1, sum(r["family"] == f for r in rows))
        for f in names
    }
    return {
        "loss": held_out_loss(model, encoded),
        "stop": sum(stops) / len(rows),
        "exact": sum(exact) / len(rows),
        "families": families,
        "replies": replies,
        "new_ids": generated,
    }
