"""Best-of-n against a learned reward: the proxy score keeps climbing, the true reward turns.

We draw n candidates from the reference distribution N(0, I2) and keep the one a reward
model ranks first. If the score has no ties, the kept point has density n F^(n-1) f
(F, f: the score's CDF and density under the reference), and integrating the log of that
ratio gives KL(best-of-n || reference) = log n - (n - 1) / n. With ties it is a bound.
"""

from __future__ import annotations

import math

import numpy as np

from verifiable_grpo.part3.reward_lab.reward_model import fit_both, predict, true_reward
from verifiable_grpo.part3.reward_lab.settings import GRID as SIZES  # 1, 4, ..., 16384: recorded
from verifiable_grpo.part3.reward_lab.settings import RewardModelSettings


def kl_bound(n: int) -> float:
    """KL(best-of-n || reference) in nats for a positive integer n."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive integer number of candidates, got {n!r}")
    return math.log(n) - (n - 1) / n


def check_sizes(sizes) -> list[int]:
    chosen = list(sizes)
    off_grid = [n for n in chosen if n not in SIZES]
    if off_grid or not chosen:
        raise ValueError(
            f"best-of-n sizes must come from the grid {list(SIZES)} "
            f"(the recorded run's), got {off_grid or 'none'}"
        )
    return chosen


def _candidates(rng, trials: int, n: int) -> np.ndarray:
    """`trials` independent sets of n reference draws, shaped (trials, n, 2), float32."""
    return rng.normal(size=(trials, n, 2)).astype(np.float32)


def _mean_at(values: np.ndarray, picks: np.ndarray) -> float:
    """Mean over trials of values[trial, picks[trial]]."""
    return float(np.take_along_axis(values, picks[:, None], axis=1)[:, 0].mean())


def selection_row(n: int, rng, models, trials: int = 200) -> dict:
    """One row of the table: what each selector keeps from the same candidate sets."""
    points = _candidates(rng, trials, n)
    truth = true_reward(points)
    scores = {name: predict(models[name], points) for name in ("linear", "mlp")}
    by_linear = scores["linear"].argmax(axis=1)
    by_mlp = scores["mlp"].argmax(axis=1)
    by_truth = truth.argmax(axis=1)
    return {
        "n": n,
        "kl_bound": kl_bound(n),
        "linear_proxy": _mean_at(scores["linear"], by_linear),
        "linear_true": _mean_at(truth, by_linear),
        "mlp_true": _mean_at(truth, by_mlp),
        "oracle_true": _mean_at(truth, by_truth),
    }


def softmax_selection(n: int, temperatures, rng, models, trials: int = 200) -> list[dict]:
    """Keep a candidate drawn with probability softmax(linear score / T) rather than the
    argmax. Small T approaches best-of-n, large T one random draw. All temperatures share
    one candidate set and one uniform number per trial."""
    points = _candidates(rng, trials, n)
    truth = true_reward(points)
    score = predict(models["linear"], points).astype(np.float64)
    u = rng.random(trials)
    results = []
    for temperature in temperatures:
        if not temperature > 0:
            raise ValueError(f"temperatures must be positive, got {temperature!r}")
        scaled = score / temperature
        weights = np.exp(scaled - scaled.max(1, keepdims=True))  # stable softmax
        cdf = np.cumsum(weights / weights.sum(1, keepdims=True), 1)
        # inverse-CDF draw: the first index whose cumulative mass reaches u
        kept = np.minimum((cdf < u[:, None]).sum(1), n - 1)
        results.append(
            {
                "temperature": float(temperature),
                "linear_proxy": _mean_at(score, kept),
                "linear_true": _mean_at(truth, kept),
            }
        )
    return results


def run_lab(settings: RewardModelSettings) -> dict:
    """Lab 3 end to end. The softmax variant (the third "Try this") runs after the
    module's table, so that the table's draws stay the module's."""
    sizes, trials, softmax_n = check_sizes(settings.sizes), settings.trials, settings.softmax_n
    rng, models, report = fit_both(settings.seed)
    report["selection"] = [selection_row(n, rng, models, trials) for n in sizes]
    if softmax_n is not None:
        check_sizes([softmax_n])
        rows = softmax_selection(softmax_n, settings.temperatures, rng, models, trials)
        report["softmax_selection"] = {"n": softmax_n, "rows": rows}
    return report
