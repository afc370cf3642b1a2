"""Best-of-n selection against a learned reward: the proxy rises, the true reward turns.

Draw n candidates from the reference N(0, I2) and keep the one the proxy scores highest.
For a continuous score without ties, the selected point's density is n F^(n-1) f, so
KL(best-of-n || reference) = log n - (n - 1) / n exactly (an upper bound when ties occur).
"""
from __future__ import annotations

import math

import numpy as np

from verifiable_grpo.part3.reward_model import fit_both, predict, true_reward

SIZES = (1, 4, 16, 64, 256, 1024, 4096, 16384)


def kl_bound(n: int) -> float:
    """log n - (n - 1) / n nats; n must be a positive integer."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive integer number of candidates, got {n!r}")
    return math.log(n) - (n - 1) / n


def check_sizes(sizes) -> list[int]:
    sizes = list(sizes)
    outside = [n for n in sizes if n not in SIZES]
    if not sizes or outside:
        raise ValueError(f"best-of-n sizes must come from the grid {list(SIZES)} "
                         f"(the recorded run's), got {outside or 'none'}")
    return sizes


def selection_row(n: int, rng, models, trials: int = 200) -> dict:
    candidates = rng.normal(size=(trials, n, 2)).astype(np.float32)
    truth = true_reward(candidates)
    proxy_linear, proxy_mlp = predict(models["linear"], candidates), predict(models["mlp"], candidates)
    rows = np.arange(trials)
    pick_linear, pick_mlp, pick_true = proxy_linear.argmax(1), proxy_mlp.argmax(1), truth.argmax(1)
    return dict(n=n, kl_bound=kl_bound(n),
                linear_proxy=float(proxy_linear[rows, pick_linear].mean()),
                linear_true=float(truth[rows, pick_linear].mean()),
                mlp_true=float(truth[rows, pick_mlp].mean()),
                oracle_true=float(truth[rows, pick_true].mean()))


def softmax_selection(n: int, temperatures, rng, models, trials: int = 200) -> list[dict]:
    """Sample the kept candidate with probability softmax(proxy / T) instead of argmax:
    T -> 0 is best-of-n, T -> infinity is one random draw. One candidate set for all T."""
    candidates = rng.normal(size=(trials, n, 2)).astype(np.float32)
    truth = true_reward(candidates)
    proxy = predict(models["linear"], candidates).astype(np.float64)
    uniform = rng.random(trials)
    rows = []
    for temperature in temperatures:
        if not temperature > 0:
            raise ValueError(f"temperatures must be positive, got {temperature!r}")
        logits = proxy / temperature
        weights = np.exp(logits - logits.max(1, keepdims=True))
        cumulative = np.cumsum(weights / weights.sum(1, keepdims=True), 1)
        picked = np.minimum((cumulative < uniform[:, None]).sum(1), n - 1)   # inverse CDF
        rows.append(dict(temperature=float(temperature),
                         linear_proxy=float(proxy[np.arange(trials), picked].mean()),
                         linear_true=float(truth[np.arange(trials), picked].mean())))
    return rows


def run_reward_lab(sizes=SIZES, trials: int = 200, seed: int = 0, softmax_n: int | None = 1024,
                   temperatures=(0.1, 0.3, 1.0, 3.0)) -> dict:
    """Lab 3 whole. After the module's table (so its draws are unchanged), the third
    "Try this": softmax selection by the linear proxy at n = softmax_n."""
    sizes = check_sizes(sizes)
    rng, models, report = fit_both(seed)
    report["selection"] = [selection_row(n, rng, models, trials) for n in sizes]
    if softmax_n is not None:
        check_sizes([softmax_n])
        report["softmax_selection"] = dict(n=softmax_n, rows=softmax_selection(
            softmax_n, temperatures, rng, models, trials))
    return report
