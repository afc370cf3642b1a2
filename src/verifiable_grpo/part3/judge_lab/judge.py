"""Lab 6's simulated judge: position bias, length bias, and what swapping does and does not fix.

Each of 400 comparisons has a latent quality difference q ~ N(0, 1) (A is truly better when
q > 0) and a length difference l ~ N(0.8, 1) (A tends to be longer). A deterministic judge
prefers A when q + 0.4 l + 0.5 s > 0, where s = +1 when A is shown first and -1 when it is
shown second. Averaging the two orders cancels the position term but keeps the length
preference; a logistic regression of the verdicts on [1, l, s] estimates the win rate at
l = 0 and s = 0 (sigma of the intercept), a "length-controlled" rate. That estimate is only
as good as its model: here the judge is a threshold rule, not a logistic one.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from verifiable_grpo.part3.judge_lab.settings import JudgeSettings


def logistic_fit(
    features: np.ndarray, labels: np.ndarray, tolerance: float = 1e-12, max_steps: int = 100
) -> np.ndarray:
    """Maximum-likelihood logistic regression by Newton's method (float64).

    The mean negative log-likelihood is convex, so Newton's iteration reaches the same
    optimum a quasi-Newton solver would; it stops when the step is below `tolerance`."""
    X = np.asarray(features, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    if X.ndim != 2 or y.shape != (X.shape[0],):
        raise ValueError(f"features must be (n, d) and labels (n,), got {X.shape} and {y.shape}")
    weights = np.zeros(X.shape[1])
    with np.errstate(over="ignore"):  # exp overflow -> p = 0 exactly, which is right
        for _ in range(max_steps):
            p = 1.0 / (1.0 + np.exp(-(X @ weights)))
            gradient = X.T @ (p - y) / len(y)
            hessian = (X * (p * (1 - p))[:, None]).T @ X / len(y)
            try:
                step = np.linalg.solve(hessian, gradient)
            except np.linalg.LinAlgError:
                break
            weights -= step
            if np.max(np.abs(step)) < tolerance:
                return weights
    raise RuntimeError(
        "logistic fit did not converge: the verdicts may be separable by the "
        "features (a perfect predictor has no finite maximum-likelihood fit)"
    )


def _rate(verdicts: np.ndarray) -> float:
    return float(verdicts.mean())


def simulate_judge(
    pairs: int = 400,
    seed: int = 22,
    length_weight: float = 0.4,
    position_bias: float = 0.5,
    mean_length_gap: float = 0.8,
) -> dict:
    """Judge every pair in both orders and compare four estimates of A's win rate."""
    if type(pairs) is not int or pairs < 10:
        raise ValueError(f"pairs must be an integer >= 10, got {pairs!r}")
    rng = np.random.default_rng(seed)
    quality = rng.normal(size=pairs)  # drawn before the lengths
    length = rng.normal(mean_length_gap, 1, size=pairs)
    evidence = quality + length_weight * length  # what the judge responds to
    shown_first = evidence + position_bias > 0  # A in the first slot
    shown_second = evidence - position_bias > 0  # A in the second slot
    both_orders = 0.5 * (shown_first.astype(float) + shown_second.astype(float))
    # One row per verdict: intercept, length difference, +1/-1 for A's slot.
    design = np.column_stack(
        [np.ones(2 * pairs), np.tile(length, 2), np.repeat([1.0, -1.0], pairs)]
    )
    verdicts = np.concatenate([shown_first, shown_second]).astype(float)
    weights = logistic_fit(design, verdicts)
    truly_better = quality > 0
    return {
        "pairs": pairs,
        "true_win": _rate(truly_better),
        "first": _rate(shown_first),
        "second": _rate(shown_second),
        "swapped": _rate(both_orders),
        "length_controlled": float(1 / (1 + np.exp(-weights[0]))),
        "logistic_weights": weights.tolist(),
        "counts": {
            "true_win": int(truly_better.sum()),
            "first": int(shown_first.sum()),
            "second": int(shown_second.sum()),
        },
    }


def run_lab(settings: JudgeSettings) -> dict:
    """The lab's entry point (part3/labs.py): one simulation with the file's settings."""
    return simulate_judge(**dataclasses.asdict(settings))
