"""Lab 1's packing "Try this": the same conversations padded, packed with a block-diagonal
mask and restarted positions, and packed naively; slots processed and the masked loss.

With the block mask and positions that restart at every conversation, a packed row is
several independent sequences in one: every target token sees exactly the context it
sees when padded, so the loss must agree up to float rounding (the kernels sum in other
orders). Naive packing (one causal mask over the row, positions running on) lets each
conversation read the ones before it, and the loss changes. Slots count every position
the model computes, padding included: what packing saves.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from verifiable_grpo.part3 import sft_data
from verifiable_grpo.part3.sft_lab.settings import PackingSettings
from verifiable_grpo.part3.smollm2 import chat_data

IGNORE = chat_data.IGNORE


def padded_loss(model, encoded: list[dict], batch: int = 10) -> dict:
    """Right-padded batches of `batch` conversations: summed target NLL, targets, slots."""
    total, count, slots = 0.0, 0, 0
    for start in range(0, len(encoded), batch):
        part = encoded[start : start + batch]
        loss, n = chat_data.batch_loss(model, part)
        total += float(loss)
        count += n
        slots += len(part) * max(len(e["ids"]) for e in part)
    return {"loss_sum": total, "targets": count, "slots": slots}


def _row_mask(row: sft_data.PackedRow, block: bool) -> torch.Tensor:
    """[1, 1, T, T] bool attention mask; a padding slot attends to itself only (no empty
    row, whose softmax would be NaN)."""
    size = len(row.input_ids)
    if block:
        mask = sft_data.block_causal_mask(row.segment_ids)
    else:
        mask = torch.ones(size, size, dtype=torch.bool).tril()
    padding = torch.tensor(row.segment_ids) < 0
    mask = mask | (torch.eye(size, dtype=torch.bool) & padding[:, None])
    return mask[None, None]


def packed_loss(model, encoded: list[dict], row_length: int, block: bool = True) -> dict:
    """First-fit packed rows of `row_length`: summed target NLL, targets, slots. `block`:
    block-diagonal mask and restarted positions; else one causal mask, running positions."""
    examples = [(e["ids"], [label != IGNORE for label in e["labels"]]) for e in encoded]
    rows = sft_data.pack(examples, row_length, pad_id=chat_data.PAD_ID)
    total, count = 0.0, 0
    for row in rows:
        ids = torch.tensor([row.input_ids])
        positions = torch.tensor([row.position_ids]) if block else torch.arange(row_length)[None]
        logits = model(
            input_ids=ids, attention_mask=_row_mask(row, block), position_ids=positions
        ).logits[0]
        labels = torch.tensor(sft_data.shifted_labels(row))
        total += float(
            F.cross_entropy(logits.float(), labels, ignore_index=IGNORE, reduction="sum")
        )
        count += int((labels != IGNORE).sum())
    return {"loss_sum": total, "targets": count, "slots": len(rows) * row_length, "rows": len(rows)}


@torch.inference_mode()
def compare(model, tokenizer, rows: list[dict], row_length: int = 256, batch: int = 10) -> dict:
    """The three layouts on the same conversations (Lab 1's masked labels)."""
    if not rows:
        raise ValueError("no conversations to compare")
    encoded = [chat_data.encode(tokenizer, row) for row in rows]
    longest = max(len(e["ids"]) for e in encoded)
    if longest > row_length:
        raise ValueError(
            f"row_length {row_length} is shorter than the longest conversation ({longest})"
        )
    result = {
        "conversations": len(rows),
        "tokens": sum(len(e["ids"]) for e in encoded),
        "row_length": row_length,
        "padded": padded_loss(model, encoded, batch),
        "packed": packed_loss(model, encoded, row_length, block=True),
        "naive": packed_loss(model, encoded, row_length, block=False),
    }
    for layout in ("padded", "packed", "naive"):
        entry = result[layout]
        entry["loss"] = entry["loss_sum"] / entry["targets"]
    return result


def run_lab(settings: PackingSettings) -> dict:
    """Lab 1's 50 held-out conversations through SmolLM2-135M-Instruct in each layout
    (`python -m verifiable_grpo lab sft-packing`); the padded batches hold `batch` rows."""
    from verifiable_grpo.models import smollm2 as loader

    model, tokenizer = loader.load()
    _, held_out = chat_data.split(quick=True)
    result = compare(model, tokenizer, held_out, settings.row_length, settings.batch)
    result["model"] = loader.source_record()
    return result
