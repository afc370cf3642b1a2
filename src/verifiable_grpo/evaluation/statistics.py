"""Uncertainty for small evaluation suites: intervals, paired comparisons, exact tests.

Shared by Parts I, II and III. Conventions (so that recorded figures reproduce):
- the caller owns the random generator and passes it in; one `np.random.default_rng(seed)`
  shared across calls gives a deterministic sequence of intervals;
- a bootstrap draws the whole index matrix at once, `rng.integers(0, n, (resamples, n))`,
  and reads the interval with `np.quantile` (linear interpolation) at (1 - level)/2 and
  (1 + level)/2;
- the exact McNemar test is computed with integer arithmetic, not floating-point sums.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

Z_95 = 1.959964  # the two-sided 95% normal quantile, as the post-training module writes it


# --------------------------------------------------------------------------- checks
def _as_values(values, name: str = "values") -> np.ndarray:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"{name} must be a 1-D sequence of numbers, got shape {array.shape}")
    if array.size == 0:
        raise ValueError(f"{name} is empty: pass at least one observation")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} contains NaN or infinity: drop or fix those items first")
    return array


def _check_level(level: float) -> None:
    if not (isinstance(level, (int, float)) and 0.0 < level < 1.0):
        raise ValueError(f"level must lie strictly between 0 and 1 (e.g. 0.95), got {level!r}")


def _check_resamples(resamples: int) -> None:
    if type(resamples) is not int or resamples < 1:
        raise ValueError(f"resamples must be a positive integer (e.g. 10_000), got {resamples!r}")


def _check_count(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer count, got {value!r}")
    return int(value)


# --------------------------------------------------------------------------- intervals
def percentile_bootstrap(
    values,
    rng: np.random.Generator,
    resamples: int = 10_000,
    level: float = 0.95,
    statistic=np.mean,
) -> tuple[float, float]:
    """Percentile interval of `statistic` over resampled items (with replacement).

    `statistic(samples, axis=1)` must reduce each row of a (resamples, n) matrix
    (np.mean, np.median and friends do). All-equal values give a zero-width interval:
    resampling cannot show uncertainty the sample never displayed (see wilson_interval).
    """
    array = _as_values(values)
    _check_level(level)
    _check_resamples(resamples)
    indices = rng.integers(0, array.size, (resamples, array.size))
    replicates = np.asarray(statistic(array[indices], axis=1), dtype=np.float64)
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(replicates, [tail, 1.0 - tail])
    return float(low), float(high)


def wilson_interval(successes: int, n: int, z: float = Z_95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion.

    It inverts the normal test p_hat = p +- z sqrt(p(1-p)/n) for p, so it stays inside
    [0, 1] and keeps a non-zero width at 0/n or n/n, unlike resampling the observed items.
    """
    successes, n = _check_count(successes, "successes"), _check_count(n, "n")
    if n == 0:
        raise ValueError("n must be at least 1: an interval needs at least one trial")
    if successes > n:
        raise ValueError(f"successes ({successes}) cannot exceed n ({n})")
    if not (isinstance(z, (int, float)) and z > 0):
        raise ValueError(f"z must be a positive normal quantile (1.959964 for 95%), got {z!r}")
    p = successes / n
    denominator = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def paired_bootstrap(
    a, b, rng: np.random.Generator, resamples: int = 10_000, level: float = 0.95
) -> dict:
    """Mean difference a - b on the same items, with a percentile interval.

    Items are resampled as pairs (the per-item differences), so an item easy for both
    models stays easy for both in every replicate.
    """
    first, second = _as_values(a, "a"), _as_values(b, "b")
    if first.shape != second.shape:
        raise ValueError(
            f"a and b must score the same items: lengths {first.size} and "
            f"{second.size} differ; align them by item first"
        )
    difference = first - second
    low, high = percentile_bootstrap(difference, rng, resamples=resamples, level=level)
    return {"difference": float(difference.mean()), "low": low, "high": high}


# --------------------------------------------------------------------------- tests
def exact_binomial_two_sided(k: int, n: int) -> float:
    """Two-sided exact binomial p-value for k successes of n at p = 1/2.

    At p = 1/2 the distribution is symmetric, so the outcomes at most as likely as k are
    the two tails beyond min(k, n - k): p = min(1, 2 * P(X <= min(k, n-k))). Computed
    as an exact fraction, then rounded once to a float.
    """
    k, n = _check_count(k, "k"), _check_count(n, "n")
    if k > n:
        raise ValueError(f"k ({k}) cannot exceed n ({n})")
    if n == 0 or 2 * k == n:
        return 1.0
    tail = sum(math.comb(n, j) for j in range(min(k, n - k) + 1))
    return float(min(Fraction(1), Fraction(2 * tail, 2**n)))


def exact_mcnemar(only_a: int, only_b: int) -> float:
    """Exact McNemar p-value from the discordant counts.

    Under "no difference" each discordant item favours a or b with probability 1/2, so
    only_a ~ Binomial(only_a + only_b, 1/2). Concordant items carry no information.
    No discordant item gives p = 1.
    """
    only_a, only_b = _check_count(only_a, "only_a"), _check_count(only_b, "only_b")
    return exact_binomial_two_sided(only_a, only_a + only_b)


def benjamini_hochberg(pvalues, alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """Benjamini-Hochberg step-up: adjusted p-values and which hypotheses to reject.

    The i-th smallest p-value is scaled by m / i, then a running minimum from the largest
    down keeps the adjusted values monotone; reject where adjusted <= alpha (this controls
    the false discovery rate at alpha for independent or positively dependent tests).
    Results are in the input order.
    """
    p = _as_values(pvalues, "pvalues")
    if np.any((p < 0) | (p > 1)):
        raise ValueError("pvalues must lie in [0, 1]; pass probabilities, not test statistics")
    _check_level(alpha)
    m = p.size
    order = np.argsort(p, kind="stable")
    scaled = p[order] * m / np.arange(1, m + 1)
    monotone = np.minimum.accumulate(scaled[::-1])[::-1]
    adjusted = np.empty(m)
    adjusted[order] = np.minimum(monotone, 1.0)
    return adjusted, adjusted <= alpha
