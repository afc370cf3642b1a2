"""Category scores with two kinds of interval, and the paired comparison of two models.

The percentile bootstrap resamples the observed items, so a category where every item
failed gets the interval [0, 0]: resampling cannot show variation the sample never had.
The Wilson interval inverts a binomial test instead and stays honest at 0/n (0/5 gives
an upper end near 43 %). The paired comparison resamples items jointly for both models,
and exact McNemar uses only the items where they disagree. Sampled completions (several
per item) are resampled by item, keeping an item's completions together.
"""

from __future__ import annotations

import numpy as np

from verifiable_grpo.evaluation.statistics import (
    exact_mcnemar,
    paired_bootstrap,
    percentile_bootstrap,
    wilson_interval,
)
from verifiable_grpo.part3.suite_lab.catalogue import CATEGORIES

SEED = 10


def _categories(items: list[dict], categories=CATEGORIES):
    """(category, indices of its items) for each category, then ("overall", every index)."""
    for category in (*categories, "overall"):
        yield (
            category,
            [i for i, item in enumerate(items) if category in ("overall", item["category"])],
        )


def category_table(
    items: list[dict], passed: dict[str, list[bool]], seed: int = SEED, categories=CATEGORIES
) -> list[dict]:
    """One row per (category or overall, model): n, pass rate, bootstrap and Wilson 95 %.
    One generator serves every row in order, so the table is reproducible as a whole.
    `categories`: the row order (another item set, such as the failure families, has its own)."""
    rng, rows = np.random.default_rng(seed), []
    for category, chosen in _categories(items, categories):
        for model, vector in passed.items():
            values = np.array([vector[i] for i in chosen], dtype=float)
            rows.append(
                {
                    "category": category,
                    "model": model,
                    "n": len(chosen),
                    "pass": float(values.mean()),
                    "bootstrap": percentile_bootstrap(values, rng),
                    "wilson": wilson_interval(int(values.sum()), len(chosen)),
                }
            )
    return rows


def paired(first: list[bool], second: list[bool], seed: int = SEED) -> dict:
    """second - first on the same items: difference, interval, discordant counts, McNemar p."""
    a, b = np.array(first, dtype=float), np.array(second, dtype=float)
    only_first, only_second = int(((a == 1) & (b == 0)).sum()), int(((a == 0) & (b == 1)).sum())
    return {
        **paired_bootstrap(b, a, np.random.default_rng(seed)),
        "only_first": only_first,
        "only_second": only_second,
        "mcnemar_p": exact_mcnemar(only_second, only_first),
    }


def clustered_bootstrap(
    table, rng: np.random.Generator, resamples: int = 10_000, level: float = 0.95
) -> tuple[float, float]:
    """Percentile interval of the pass rate of an (items, samples) 0/1 table, resampling
    whole items (rows) with replacement: an item's samples share its prompt, so they move
    together. With equal rows this is the item bootstrap of the row means."""
    array = np.asarray(table, dtype=np.float64)
    if array.ndim != 2 or array.shape[0] == 0 or array.shape[1] == 0:
        raise ValueError(
            f"clustered_bootstrap needs an (items, samples) table with at least one "
            f"of each, got shape {array.shape}"
        )
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be between 0 and 1, got {level}")
    rows = rng.integers(0, array.shape[0], (resamples, array.shape[0]))
    replicates = array[rows].mean(axis=(1, 2))
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(replicates, [tail, 1.0 - tail])
    return float(low), float(high)


def clustered_category_table(
    items: list[dict], passed: dict[str, list[list[bool]]], seed: int = SEED
) -> list[dict]:
    """One row per (category or overall, model) of sampled completions: items, samples per
    item, pass rate, the clustered 95 % interval, and for contrast the interval that wrongly
    treats every completion as its own item. One generator serves every row in order."""
    rng, rows = np.random.default_rng(seed), []
    for category, chosen in _categories(items):
        for model, table in passed.items():
            values = np.array([table[i] for i in chosen], dtype=float)
            rows.append(
                {
                    "category": category,
                    "model": model,
                    "n": len(chosen),
                    "samples": int(values.shape[1]),
                    "pass": float(values.mean()),
                    "clustered": clustered_bootstrap(values, rng),
                    "unclustered": percentile_bootstrap(values.ravel(), rng),
                }
            )
    return rows
