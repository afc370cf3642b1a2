"""KL estimators as losses: the gradient each one gives, against the exact KL's gradient.

Tokens y are drawn from the current policy p = softmax(z); the reference q is a constant.
With d(y) = log p(y) - log q(y) (so log r = -d in Schulman's notation, ref-kl-approx), the
one-sample estimators of KL(p || q) and the gradient each gives w.r.t. the logits z when y is
held fixed and only log p(y) carries a gradient:

    k1 = d                      grad = grad log p(y)              E = 0
    k2 = d^2 / 2                grad = d grad log p(y)            E = grad KL(p || q)
    k3 = exp(-d) - 1 + d        grad = (1 - q/p) grad log p(y)    E = grad KL(q || p)
    k3 * rho (TRL)              grad = d grad log p(y)            E = grad KL(p || q)

rho = exp(log p(y) - log p_old(y)) is TRL 1.16's importance weight coef_1; on-policy
p_old = p.detach(), so rho == 1 in value but grad rho = grad log p(y). TRL multiplies the
k3 term by it when `use_bias_correction_kl` is on (trl/trainer/grpo_trainer.py, line 3104:
`per_token_kl = per_token_kl * coef_1`). Its per-sample gradient equals k2's exactly.
"""

from __future__ import annotations

import copy

import torch

from verifiable_grpo.training.losses import exact_prefix_kl, sampled_kl_estimators

ESTIMATORS = ("k1", "k2", "k3", "k3_trl")


def _check_pair(current_logits: torch.Tensor, reference_logits: torch.Tensor) -> None:
    if not isinstance(current_logits, torch.Tensor) or not isinstance(
        reference_logits, torch.Tensor
    ):
        raise ValueError("current_logits and reference_logits must be tensors")
    if current_logits.dim() != 2 or current_logits.shape[-1] < 2:
        raise ValueError(
            f"current_logits must be [prefixes, vocab>=2], got {tuple(current_logits.shape)}"
        )
    if reference_logits.shape != current_logits.shape:
        raise ValueError(
            f"reference_logits shape {tuple(reference_logits.shape)} differs from "
            f"current_logits {tuple(current_logits.shape)}"
        )
    for name, logits in (
        ("current_logits", current_logits),
        ("reference_logits", reference_logits),
    ):
        if not logits.is_floating_point() or not torch.isfinite(logits).all():
            raise ValueError(f"{name} must be finite floating-point logits")


def estimator_losses(current_logprobs, reference_logprobs) -> dict:
    """Per-token losses of each estimator for sampled tokens, as TRL would backpropagate them.

    current_logprobs carries the gradient; "k3_trl" is k3 times TRL's on-policy coef_1 =
    exp(log p - log p.detach()), whose value is 1 and whose gradient is grad log p."""
    values = sampled_kl_estimators(current_logprobs, reference_logprobs.detach())
    coef_1 = torch.exp(current_logprobs - current_logprobs.detach())
    values["k3_trl"] = values["k3"] * coef_1  # trl grpo_trainer.py:3104-3105
    return values


def exact_kl_and_gradient(current_logits, reference_logits) -> tuple[torch.Tensor, torch.Tensor]:
    """(KL(p || q) per prefix [N], its gradient w.r.t. the current logits [N, V]), via the
    package's exact_prefix_kl and autograd."""
    _check_pair(current_logits, reference_logits)
    leaf = current_logits.detach().clone().requires_grad_(True)
    kl = exact_prefix_kl(leaf, reference_logits.detach())
    kl.sum().backward()
    return kl.detach(), leaf.grad


def forward_kl_gradient(current_logits, reference_logits) -> torch.Tensor:
    """grad of KL(q || p) w.r.t. the current logits: p - q (q's logits are a constant)."""
    _check_pair(current_logits, reference_logits)
    return torch.softmax(current_logits, -1) - torch.softmax(reference_logits, -1)


def expected_by_enumeration(current_logits, reference_logits) -> dict:
    """Exact E_{y~p}[value] [N] and E_{y~p}[grad] [N, V] of every estimator: every token y of
    the vocabulary is a 'sample', weighted by a detached p(y); one backward pass."""
    _check_pair(current_logits, reference_logits)
    out = {}
    log_q = torch.log_softmax(reference_logits.detach(), -1)
    for name in ESTIMATORS:
        leaf = current_logits.detach().clone().requires_grad_(True)
        log_p = torch.log_softmax(leaf, -1)
        weight = log_p.exp().detach()
        loss = (weight * estimator_losses(log_p, log_q)[name]).sum(-1)
        loss.sum().backward()
        out[name] = {"value": loss.detach(), "gradient": leaf.grad}
    return out


def sampled_gradients(current_logits, reference_logits, samples: int, generator) -> dict:
    """Per-sample gradients [N, S, V] of every estimator, by autograd: S tokens per prefix
    drawn from p with the seeded generator, each sample differentiating its own copy of z."""
    _check_pair(current_logits, reference_logits)
    if not isinstance(samples, int) or isinstance(samples, bool) or samples < 2:
        raise ValueError(f"samples must be an integer >= 2, got {samples!r}")
    probs = torch.softmax(current_logits.detach().double(), -1)
    tokens = torch.multinomial(probs, samples, replacement=True, generator=generator)  # [N, S]
    log_q = torch.log_softmax(reference_logits.detach(), -1).gather(-1, tokens)
    out = {}
    for name in ESTIMATORS:
        leaf = (
            current_logits.detach()
            .unsqueeze(1)
            .expand(-1, samples, -1)
            .clone()
            .requires_grad_(True)
        )
        log_p = torch.log_softmax(leaf, -1).gather(-1, tokens.unsqueeze(-1)).squeeze(-1)
        estimator_losses(log_p, log_q)[name].sum().backward()
        out[name] = leaf.grad
    return out


def gradient_bias_and_variance(
    current_logits, reference_logits, samples: int = 256, seed: int = 0
) -> dict:
    """Per estimator, over all prefixes together (Frobenius norms over [N, V]):
    relative_bias = |mean sampled grad - grad KL(p||q)| / |grad KL(p||q)|,
    exact_relative_bias = the same with the exact expectation (enumeration),
    variance = mean over samples of |grad - mean grad|^2 (summed over prefixes), and
    relative_variance = variance / |grad KL(p||q)|^2; plus the projection `scale`
    <E grad, grad KL> / |grad KL|^2 (1 means the estimator pushes like the exact term)."""
    _, exact_gradient = exact_kl_and_gradient(current_logits, reference_logits)
    enumerated = expected_by_enumeration(current_logits, reference_logits)
    per_sample = sampled_gradients(
        current_logits, reference_logits, samples, torch.Generator().manual_seed(seed)
    )
    norm = exact_gradient.norm()
    if norm == 0:
        raise ValueError("the exact KL gradient is zero: current and reference coincide")
    report = {}
    for name in ESTIMATORS:
        mean = per_sample[name].mean(1)
        spread = (per_sample[name] - mean.unsqueeze(1)).square().sum(-1).mean(1).sum()
        expected = enumerated[name]["gradient"]
        report[name] = {
            "relative_bias": float((mean - exact_gradient).norm() / norm),
            "exact_relative_bias": float((expected - exact_gradient).norm() / norm),
            "variance": float(spread),
            "relative_variance": float(spread / norm.square()),
            "scale": float((expected * exact_gradient).sum() / norm.square()),
        }
    return report


def perturbed_copy(model, relative_noise: float, seed: int):
    """A deep copy of model whose float parameters get seeded Gaussian noise of
    relative_noise times each tensor's own standard deviation: a reference moved away."""
    if not (isinstance(relative_noise, (int, float)) and relative_noise > 0):
        raise ValueError(f"relative_noise must be a positive number, got {relative_noise!r}")
    moved = copy.deepcopy(model)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in moved.parameters():
            if parameter.is_floating_point() and parameter.numel() > 1:
                noise = torch.randn(parameter.shape, generator=generator, dtype=torch.float32)
                parameter.add_(
                    noise.to(parameter) * relative_noise * parameter.float().std().to(parameter)
                )
    return moved


def exact_gradient_variance(current_logits, reference_logits) -> dict:
    """E_{y~p} |grad(y) - E grad|^2 per estimator [N], by enumeration: the per-token gradient
    of every vocabulary entry y (autograd on one copy of z per y), weighted by p(y)."""
    _check_pair(current_logits, reference_logits)
    vocab = current_logits.shape[-1]
    tokens = torch.arange(vocab).expand(current_logits.shape[0], -1)  # [N, V]: every y
    p = torch.softmax(current_logits.detach(), -1)
    log_q = torch.log_softmax(reference_logits.detach(), -1)
    out = {}
    for name in ESTIMATORS:
        leaf = (
            current_logits.detach().unsqueeze(1).expand(-1, vocab, -1).clone().requires_grad_(True)
        )
        log_p = torch.log_softmax(leaf, -1).gather(-1, tokens.unsqueeze(-1)).squeeze(-1)
        estimator_losses(log_p, log_q)[name].sum().backward()
        per_token = leaf.grad  # [N, y, V]
        mean = (p.unsqueeze(-1) * per_token).sum(1, keepdim=True)
        out[name] = (p * (per_token - mean).square().sum(-1)).sum(-1)
    return out


def per_prefix_relative_bias(current_logits, reference_logits) -> dict:
    """|E grad - grad KL(p||q)| / |grad KL(p||q)| per prefix [N], by enumeration, for each
    estimator and for grad KL(q||p) ("forward")."""
    _, exact_gradient = exact_kl_and_gradient(current_logits, reference_logits)
    norm = exact_gradient.norm(dim=-1).clamp_min(torch.finfo(exact_gradient.dtype).tiny)
    expected = {
        name: value["gradient"]
        for name, value in expected_by_enumeration(current_logits, reference_logits).items()
    }
    expected["forward"] = forward_kl_gradient(current_logits, reference_logits)
    return {
        name: (gradient - exact_gradient).norm(dim=-1) / norm for name, gradient in expected.items()
    }
