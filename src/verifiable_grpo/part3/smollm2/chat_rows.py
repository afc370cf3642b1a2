"""The chat-row diagnosis: are the embedding rows of <|im_start|> and <|im_end|> trained?

A base model that never saw ChatML during pretraining keeps those two rows near their
initial values: almost parallel to each other and to other unused rows (cosine ~1). With a
tied head the same row is also the output weight of <|im_end|>, so such a model struggles
to learn to stop in a few steps. Re-drawing both rows from the table's per-dimension mean
and spread gives them distinct, typical-looking directions to start from. (On the 4-bit
SmolLM2-135M-Instruct the two rows have cosine 0.990 and sit among unused
special-token rows, yet that model already stops on about half the prompts: the cosine is
a hint, not a test.)
"""

from __future__ import annotations

import torch
from torch.nn import functional as F

from verifiable_grpo.part3.smollm2.chat_data import END_ID, START_ID


def cosine(model, a: int = START_ID, b: int = END_ID) -> float:
    table = model.get_input_embeddings().weight.detach()
    return float(F.cosine_similarity(table[a], table[b], dim=0))


def nearest_rows(model, tokenizer, row: int = END_ID, k: int = 5) -> list[dict]:
    """The k rows most similar (cosine) to `row`, itself excluded."""
    table = model.get_input_embeddings().weight.detach()
    similarity = F.cosine_similarity(table, table[row].unsqueeze(0), dim=1)
    similarity[row] = -2.0
    values, ids = similarity.topk(k)
    return [
        {"id": int(i), "token": tokenizer.convert_ids_to_tokens(int(i)), "cosine": float(v)}
        for v, i in zip(values, ids)
    ]


def diagnose(model, tokenizer) -> dict:
    return {"cosine": cosine(model), "nearest_to_end": nearest_rows(model, tokenizer)}


@torch.no_grad()
def reinitialise(model, rows=(START_ID, END_ID), seed: int = 42) -> None:
    """Rows := mean + std * N(0, 1) per dimension (a seeded generator, the global RNG is left
    alone). Tied embeddings: the output head's rows change with them."""
    table = model.get_input_embeddings().weight
    mean, spread = table.mean(dim=0), table.std(dim=0)
    noise = torch.randn(
        (len(rows), table.shape[1]),
        generator=torch.Generator().manual_seed(seed),
        dtype=table.dtype,
    )
    table[list(rows)] = mean + spread * noise
