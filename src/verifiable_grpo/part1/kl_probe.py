"""The KL chapter's probes: how far two real policies are apart at prefixes a policy visited,
and what gradient each sampled KL estimator gives when it is used as a loss.

A sampled estimator k(y) of KL(p || q) is computed from one token y ~ p; used as a loss, y is
fixed and only log p(y) carries a gradient. Its expected gradient is therefore
sum_y p(y) grad k(y), which `estimator_loss_gradients` computes exactly by enumerating the
vocabulary (every y, weighted by a detached p(y)) instead of sampling.
"""

from __future__ import annotations

import statistics

import torch

from verifiable_grpo.training.losses import exact_prefix_kl


def estimator_loss_gradients(current_logits: torch.Tensor, reference_logits: torch.Tensor) -> dict:
    """Gradients with respect to the current logits [..., V] (float64):
    "reverse": of KL(p || q) (what the exact penalty differentiates), "forward": of KL(q || p),
    and "k1", "k2", "k3": the expected gradient of each one-sample estimator used as a loss."""
    current = current_logits.detach().double()
    reference = reference_logits.detach().double()
    log_q = torch.log_softmax(reference, -1)
    out = {}

    def gradient(loss_of):
        leaf = current.clone().requires_grad_(True)
        loss_of(torch.log_softmax(leaf, -1)).sum().backward()
        return leaf.grad

    out["reverse"] = gradient(lambda log_p: (log_p.exp() * (log_p - log_q)).sum(-1))
    out["forward"] = gradient(lambda log_p: (log_q.exp() * (log_q - log_p)).sum(-1))
    estimators = {
        "k1": lambda d: d,
        "k2": lambda d: d.square() / 2,
        "k3": lambda d: torch.expm1(-d) + d,
    }
    for name, k in estimators.items():
        # d = log p(y) - log q(y) for every y; the sampling weight p(y) is a constant.
        out[name] = gradient(lambda log_p, k=k: (log_p.exp().detach() * k(log_p - log_q)).sum(-1))
    return out


def response_prefix_logits(model, sequences) -> torch.Tensor:
    """Logits [N, V] at every response prefix of (prompt_ids, response_ids) pairs: the
    distributions the policy sampled each response token from."""
    from verifiable_grpo.core.scoring import forward_logits
    from verifiable_grpo.training.rollout import model_device

    rows = []
    with torch.no_grad():
        for prompt, response in sequences:
            ids = torch.tensor([list(prompt) + list(response)], device=model_device(model))
            logits = forward_logits(model, ids, torch.ones_like(ids))[0]
            start = len(prompt) - 1  # logits at t predict token t + 1
            rows.append(logits[start : start + len(response)].double().cpu())
    return torch.cat(rows)


def visited_prefix_kl(current_model, reference_model, sequences) -> torch.Tensor:
    """Exact KL(current || reference) [N] at every response prefix of the sequences."""
    return exact_prefix_kl(
        response_prefix_logits(current_model, sequences),
        response_prefix_logits(reference_model, sequences),
    )


def kl_summary(values: torch.Tensor, threshold: float = 1e-4) -> dict:
    numbers = [float(v) for v in values]
    if not numbers:
        raise ValueError("no prefixes to summarise")
    return {
        "prefixes": len(numbers),
        "mean": sum(numbers) / len(numbers),
        "median": statistics.median(numbers),
        "max": max(numbers),
        "share_above": sum(v > threshold for v in numbers) / len(numbers),
        "threshold": threshold,
    }
