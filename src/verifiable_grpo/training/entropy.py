"""The policy's exact entropy per visited prefix, for telemetry.

H(p) = -sum_v p(v) log p(v) over the whole vocabulary, computed like the exact KL: the
vocabulary in blocks, each block normalised with the full-vocabulary logsumexp, so that
memory stays one block of probabilities beside the logits. Falling entropy is the early
warning of a policy collapsing onto few answers; it never enters the loss here.
"""

from __future__ import annotations

import torch


@torch.no_grad()
def exact_token_entropy(logits: torch.Tensor, block_size: int = 4096) -> torch.Tensor:
    """Entropy in nats of softmax(logits) over the last axis: [..., V] -> [...]."""
    if not isinstance(block_size, int) or isinstance(block_size, bool) or block_size < 1:
        raise ValueError(f"block_size must be a positive integer, got {block_size!r}")
    if logits.dim() < 1 or logits.shape[-1] == 0:
        raise ValueError(f"logits need a non-empty vocabulary axis, got {tuple(logits.shape)}")
    values = logits.detach().float()
    normaliser = torch.logsumexp(values, dim=-1, keepdim=True)
    total = torch.zeros(values.shape[:-1], dtype=torch.float32, device=values.device)
    for start in range(0, values.shape[-1], block_size):
        log_p = values[..., start : start + block_size] - normaliser
        p = log_p.exp()
        # p log p -> 0 as p -> 0 (a logit of -inf has probability zero, not NaN)
        total -= torch.where(p > 0, p * log_p, torch.zeros_like(p)).sum(-1)
    return total


def masked_mean_entropy(
    logits: torch.Tensor, mask: torch.Tensor, block_size: int = 4096
) -> torch.Tensor:
    """Per row of [B, T, V] logits: the token mean of the entropy over the True positions."""
    per_token = exact_token_entropy(logits, block_size)
    mask = mask.to(per_token.device)
    counts = mask.sum(-1).clamp(min=1).to(per_token.dtype)
    return torch.where(mask, per_token, torch.zeros_like(per_token)).sum(-1) / counts
