"""The KL to the frozen reference, two ways: exact over the whole vocabulary at every
visited prefix (computed block by block, with a hand-written backward, so its working
memory is one vocabulary block), and the sampled one-token estimators k1, k2 and k3.

losses.py re-exports both; objectives choose which a loss uses.
"""

from __future__ import annotations

import torch


# --------------------------------------------------------------------------- exact KL
def _blockwise_shift_and_log_sum(logits: torch.Tensor, block_size: int):
    """Full-vocabulary normaliser of each row, computed block by block.

    Returns (m, log_s) with logsumexp = m + log_s, m the row maximum. Keeping the two
    parts apart lets log p = (z - m) - log_s stay accurate in float32 even for logits
    of size 1e4, where m + log_s would round to a float32 ulp of about 1e-3.
    """
    vocab = logits.shape[-1]
    m = None
    for start in range(0, vocab, block_size):
        block_max = logits[..., start : start + block_size].amax(dim=-1, keepdim=True)
        m = block_max if m is None else torch.maximum(m, block_max)
    s = torch.zeros_like(m)
    for start in range(0, vocab, block_size):
        s = s + torch.exp(logits[..., start : start + block_size] - m).sum(dim=-1, keepdim=True)
    return m, torch.log(s)


def _block_terms(current, reference, cur_norm, ref_norm, start, block_size):
    """log p, p and log p - log q for one vocabulary block (p = 0 where log p = -inf)."""
    log_p = (current[..., start : start + block_size] - cur_norm[0]) - cur_norm[1]
    log_q = (reference[..., start : start + block_size] - ref_norm[0]) - ref_norm[1]
    p = torch.exp(log_p)
    # A token the current policy never emits (logit -inf) contributes 0, not 0 * nan.
    difference = torch.where(p > 0, log_p - log_q, torch.zeros_like(log_p))
    return p, difference


class _ExactKL(torch.autograd.Function):
    """KL(p_cur || p_ref) over the vocabulary, with a hand-written blockwise backward
    (dKL/dz_j = p_j * (log p_j - log q_j - KL)) so that autograd never keeps more than
    one block of probabilities alive."""

    @staticmethod
    def forward(ctx, current, reference, block_size):
        cur_norm = _blockwise_shift_and_log_sum(current, block_size)
        ref_norm = _blockwise_shift_and_log_sum(reference, block_size)
        kl = torch.zeros(current.shape[:-1], dtype=current.dtype, device=current.device)
        for start in range(0, current.shape[-1], block_size):
            p, difference = _block_terms(current, reference, cur_norm, ref_norm, start, block_size)
            kl = kl + (p * difference).sum(dim=-1)
        ctx.save_for_backward(current, reference, *cur_norm, *ref_norm, kl)
        ctx.block_size = block_size
        return kl

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_kl):
        current, reference, cur_m, cur_log_s, ref_m, ref_log_s, kl = ctx.saved_tensors
        block_size = ctx.block_size
        grad = torch.empty_like(current)
        scale = grad_kl.unsqueeze(-1)
        for start in range(0, current.shape[-1], block_size):
            p, difference = _block_terms(
                current, reference, (cur_m, cur_log_s), (ref_m, ref_log_s), start, block_size
            )
            grad[..., start : start + block_size] = scale * p * (difference - kl.unsqueeze(-1))
        return grad, None, None


def _check_logits_blockwise(name: str, logits: torch.Tensor, block_size: int) -> None:
    """NaN and +inf refused, and rows of only -inf, one vocabulary block at a time: a check
    on the whole tensor would allocate a [..., V] mask, more than the KL itself needs."""
    reachable = None
    for start in range(0, logits.shape[-1], block_size):
        block = logits[..., start : start + block_size]
        if torch.isnan(block).any() or torch.isposinf(block).any():
            raise ValueError(f"{name} logits contain NaN or +inf")
        finite = (~torch.isneginf(block)).any(dim=-1)
        reachable = finite if reachable is None else reachable | finite
    if not reachable.all():
        raise ValueError(f"{name} logits have a row where every entry is -inf")


def exact_prefix_kl(
    current_logits: torch.Tensor, reference_logits: torch.Tensor, block_size: int = 4096
) -> torch.Tensor:
    """Exact KL(p_cur || p_ref) = sum_v p_cur(v) (log p_cur(v) - log p_ref(v)) per prefix.

    Logits are [..., T, V]; returns [..., T]. The vocabulary is processed in blocks of
    block_size, each block normalised with the FULL-vocabulary logsumexp (normalising each
    block on its own would compute another, wrong, quantity). Differentiable with respect
    to current_logits; the reference is a constant. Logits of -inf are allowed (probability
    zero); NaN and +inf are rejected.
    """
    if not isinstance(block_size, int) or isinstance(block_size, bool) or block_size < 1:
        raise ValueError(f"block_size must be a positive integer, got {block_size!r}")
    if current_logits.dim() < 1 or current_logits.shape[-1] == 0:
        raise ValueError(
            f"logits need a non-empty vocabulary axis, got {tuple(current_logits.shape)}"
        )
    if reference_logits.shape != current_logits.shape:
        raise ValueError(
            f"reference logits shape {tuple(reference_logits.shape)} differs from "
            f"current {tuple(current_logits.shape)}"
        )
    if not current_logits.is_floating_point():
        raise ValueError("logits must be floating point")
    for name, logits in (("current", current_logits), ("reference", reference_logits)):
        _check_logits_blockwise(name, logits, block_size)
    reference = reference_logits.detach().to(
        device=current_logits.device, dtype=current_logits.dtype
    )
    return _ExactKL.apply(current_logits, reference, block_size)


# --------------------------------------------------------------------------- sampled KL
def sampled_kl_estimators(current_logprobs: torch.Tensor, reference_logprobs: torch.Tensor) -> dict:
    """Per-token estimators of KL(current || reference) for tokens DRAWN FROM THE CURRENT
    policy, with log r = log p_ref - log p_cur:
    k1 = -log r (unbiased, can be negative), k2 = (log r)^2 / 2 (biased, low variance),
    k3 = (r - 1) - log r (unbiased, never negative; TRL's and seed 004's choice)."""
    current_logprobs = torch.as_tensor(current_logprobs)
    reference_logprobs = torch.as_tensor(reference_logprobs, device=current_logprobs.device)
    if current_logprobs.shape != reference_logprobs.shape:
        raise ValueError(
            f"log-prob shapes differ: current {tuple(current_logprobs.shape)}, "
            f"reference {tuple(reference_logprobs.shape)}"
        )
    log_r = reference_logprobs - current_logprobs
    return {
        "k1": -log_r,
        "k2": log_r.square() / 2,
        "k3": torch.expm1(log_r) - log_r,
    }
