"""Lab 2, Try this: a trainable delta on the two chat rows, shared by the lookup and the tied head.

Lab 2 freezes the base, so the embedding table, which is also the output head (tied),
cannot learn a distinct <|im_end|>. The lab re-draws the two chat rows *before* training
instead. Here the rows stay as loaded and a small trainable delta D (2 x hidden, zero at
the start) is added to them wherever the table is used:

    lookup:  embed(id) = W[id] + D[k]     when id is chat row k, else W[id]
    head:    logit(id) = h . W[id] + h . D[k]   for the same rows, else h . W[id]

so the effective table is W + D on those rows, in both places, as if the tied rows
themselves were trained. Both paths read the one parameter D, so its gradient is the sum
of what the input side and the output side ask for. Neither path copies the 49,152-row
table: the lookup adds D where a chat id occurs, the head adds h . D to two logit columns.
`fold` writes W + D into the table and puts the plain modules back (Lab 2's merge).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from verifiable_grpo.part3.smollm2.chat_data import END_ID, START_ID

CHAT_ROWS = (START_ID, END_ID)


class RowDelta(nn.Module):
    """The shared delta: `rows` of a frozen table, and one trainable vector per row."""

    def __init__(self, table: nn.Parameter, rows=CHAT_ROWS):
        super().__init__()
        if len(set(rows)) != len(rows) or not all(0 <= r < table.shape[0] for r in rows):
            raise ValueError(f"rows must be distinct ids below {table.shape[0]}, got {rows}")
        self.register_buffer("rows", torch.tensor(rows, dtype=torch.long), persistent=False)
        self.delta = nn.Parameter(torch.zeros(len(rows), table.shape[1], dtype=table.dtype))

    def table(self, weight: torch.Tensor) -> torch.Tensor:
        """The effective table W + D (a copy: for tests and folding, not the forward pass)."""
        return weight.detach().clone().index_add_(0, self.rows, self.delta.detach())


class DeltaEmbedding(nn.Module):
    """The input lookup with the delta added at the chat ids."""

    def __init__(self, embedding: nn.Embedding, shared: RowDelta):
        super().__init__()
        self.embedding, self.shared = embedding, shared

    @property
    def weight(self) -> nn.Parameter:
        return self.embedding.weight

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        hits = (ids[..., None] == self.shared.rows).to(self.shared.delta.dtype)  # [..., rows]
        return self.embedding(ids) + hits @ self.shared.delta


class DeltaHead(nn.Module):
    """The tied output head with h . D added to the chat rows' logit columns."""

    def __init__(self, head: nn.Linear, shared: RowDelta):
        super().__init__()
        self.head, self.shared = head, shared

    @property
    def weight(self) -> nn.Parameter:
        return self.head.weight

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        logits = self.head(hidden)
        extra = hidden @ self.shared.delta.T  # [..., rows]
        return logits.index_add(-1, self.shared.rows, extra)


def attach(model, rows=CHAT_ROWS) -> RowDelta:
    """Wrap the model's tied lookup and head with one shared delta (zero: the logits are
    unchanged); the delta is the only new trainable parameter."""
    embedding, head = model.get_input_embeddings(), model.get_output_embeddings()
    if embedding.weight is not head.weight:
        raise ValueError("the row delta needs a tied embedding and head (one table for both)")
    shared = RowDelta(embedding.weight, rows)
    model.set_input_embeddings(DeltaEmbedding(embedding, shared))
    model.set_output_embeddings(DeltaHead(head, shared))
    return shared


@torch.no_grad()
def fold(model) -> None:
    """Write W + D into the table and restore the plain lookup and head."""
    lookup, head = model.get_input_embeddings(), model.get_output_embeddings()
    if not isinstance(lookup, DeltaEmbedding) or not isinstance(head, DeltaHead):
        raise ValueError("no row delta attached to this model")
    shared = lookup.shared
    lookup.embedding.weight.index_add_(0, shared.rows, shared.delta)
    model.set_input_embeddings(lookup.embedding)
    model.set_output_embeddings(head.head)


def delta_norms(shared: RowDelta) -> list[float]:
    """The size of each row's delta (how far training moved each chat row)."""
    return [float(v) for v in shared.delta.detach().norm(dim=1)]


def effective_logits(hidden: torch.Tensor, weight: torch.Tensor, shared: RowDelta) -> torch.Tensor:
    """h . (W + D)^T with the table copied: the reference the head is tested against."""
    return F.linear(hidden, shared.table(weight))
