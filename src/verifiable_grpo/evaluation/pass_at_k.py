"""pass@k: the chance that at least one of k answers is right, estimated from n >= k draws.

With c right answers among n draws of one problem, the unbiased estimator is the share of
the C(n, k) subsets of k draws that hold at least one right answer:

    pass@k = 1 - C(n - c, k) / C(n, k) = 1 - prod_{i = n - c + 1}^{n} (1 - k / i)

(Chen et al. 2021). The product form stays in float64 for any n, where the binomial
coefficients themselves overflow it above n of about 1,000. Plugging the per-draw rate
p_hat = c / n into 1 - (1 - p_hat)^k instead is biased low: it treats the n draws as if
they were the true rate, and a problem solved once in n draws already gives that
probability a spread that the subset count respects. k = 1 gives c / n and k = n gives
1 when any draw was right; in between pass@k rises with k.

A suite's pass@k is the mean over problems; its interval is a percentile bootstrap over
problems (evaluation/statistics.py), as every other interval of the book.
"""

from __future__ import annotations

import numpy as np

from verifiable_grpo.evaluation.statistics import paired_bootstrap, percentile_bootstrap


def _check(n: int, c: int, k: int) -> None:
    for name, value in (("n", n), ("c", c), ("k", k)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise ValueError(f"{name} must be an integer count, got {value!r}")
    if n < 1:
        raise ValueError(f"n must be at least 1 draw, got {n}")
    if not 0 <= c <= n:
        raise ValueError(f"c must lie in 0..n = 0..{n} right answers, got {c}")
    if not 1 <= k <= n:
        raise ValueError(f"k must lie in 1..n = 1..{n}: {n} draws cannot estimate pass@{k}")


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased estimate of pass@k from c right answers among n draws (float64)."""
    _check(n, c, k)
    if n - c < k:  # every subset of k draws holds a right one
        return 1.0
    factors = 1.0 - k / np.arange(n - c + 1, n + 1, dtype=np.float64)
    return float(1.0 - np.prod(factors))


def per_problem(counts, k: int) -> np.ndarray:
    """pass@k of each problem from its (n, c) pair."""
    return np.array([pass_at_k(int(n), int(c), k) for n, c in counts], dtype=np.float64)


def curve(counts, ks, rng: np.random.Generator, resamples: int = 10_000) -> list[dict]:
    """[{"k", "value", "low", "high"}] per k: the mean over problems of pass@k with a 95 %
    percentile bootstrap over problems (one generator, so the table is one sequence)."""
    out = []
    for k in ks:
        values = per_problem(counts, k)
        low, high = percentile_bootstrap(values, rng, resamples=resamples)
        out.append({"k": int(k), "value": float(values.mean()), "low": low, "high": high})
    return out


def paired_curve(first, second, ks, rng: np.random.Generator, resamples: int = 10_000) -> list:
    """[{"k", "difference", "low", "high"}]: second minus first per k, paired by problem
    (both lists of (n, c) in the same problem order)."""
    if len(first) != len(second):
        raise ValueError(f"{len(first)} and {len(second)} problems: pair the same problems")
    return [
        {
            "k": int(k),
            **paired_bootstrap(per_problem(second, k), per_problem(first, k), rng, resamples),
        }
        for k in ks
    ]
