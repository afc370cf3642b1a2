"""Pairing two policies' scored answers problem by problem, for paired comparisons.

Every policy answers the same test problems with the same per-problem seeds, so two
policies' results are paired: a problem that is easy for one tends to be easy for the
other. A paired comparison uses that, where two independent intervals would waste it.
The generic statistics (paired bootstrap, exact McNemar) live in statistics.py; this
module only aligns the items and refuses rows that are not really paired.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np

from verifiable_grpo.evaluation.statistics import exact_mcnemar, paired_bootstrap


def outcomes_by_problem(rows: list[dict], population: str | None = None) -> dict[str, dict]:
    """document_id -> {"rewards": [reward of draw 0, 1, ...], "seeds": [...]} from scored
    rows (greedy or sample), optionally one population (ID50 / OOD100) only."""
    items: dict[str, dict] = {}
    for row in rows:
        if population is not None and row["population"] != population:
            continue
        item = items.setdefault(row["document_id"], {"draws": {}})
        if row["draw"] in item["draws"]:
            raise ValueError(
                f"{row['document_id']}: draw {row['draw']} appears twice in the "
                "scored rows; score each answer once"
            )
        item["draws"][row["draw"]] = (int(row["reward"]), row.get("seed"))
    out = {}
    for document_id, item in items.items():
        draws = [item["draws"][d] for d in sorted(item["draws"])]
        if sorted(item["draws"]) != list(range(len(draws))):
            raise ValueError(
                f"{document_id}: draws {sorted(item['draws'])} are not 0..{len(draws) - 1}"
            )
        out[document_id] = {"rewards": [r for r, _ in draws], "seeds": [s for _, s in draws]}
    if not out:
        raise ValueError(f"no scored rows{'' if population is None else ' for ' + population}")
    return out


def align(
    first: dict[str, dict], second: dict[str, dict]
) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(problem ids, first[N, D], second[N, D]) of rewards, in a fixed order. Refuses two
    sets that do not cover the same problems, draws and seeds: they are not paired."""
    if first.keys() != second.keys():
        missing = sorted(first.keys() ^ second.keys())
        raise ValueError(
            f"the two policies were not scored on the same problems: "
            f"{len(missing)} differ (first: {missing[0]}); pair results of one evaluation"
        )
    ids = sorted(first)
    for document_id in ids:
        a, b = first[document_id], second[document_id]
        if len(a["rewards"]) != len(b["rewards"]) or a["seeds"] != b["seeds"]:
            raise ValueError(
                f"{document_id}: draws or seeds differ between the two policies, "
                "so their answers are not paired"
            )
    return (
        ids,
        np.array([first[i]["rewards"] for i in ids], dtype=np.float64),
        np.array([second[i]["rewards"] for i in ids], dtype=np.float64),
    )


def discordant(first: np.ndarray, second: np.ndarray) -> tuple[int, int]:
    """(solved by the first only, by the second only) of two binary per-problem outcomes."""
    first, second = np.asarray(first), np.asarray(second)
    if not (np.isin(first, (0, 1)).all() and np.isin(second, (0, 1)).all()):
        raise ValueError("discordant counts need binary outcomes (0 or 1) per problem")
    return int(((first == 1) & (second == 0)).sum()), int(((first == 0) & (second == 1)).sum())


def compare(
    first_rows: list[dict],
    second_rows: list[dict],
    rng: np.random.Generator,
    population: str | None = None,
    resamples: int = 10_000,
    level: float = 0.95,
) -> dict:
    """Second minus first, paired by problem: the per-problem success rate (mean over its
    draws) with a paired bootstrap interval, and the exact McNemar test on each problem's
    first draw (a binary outcome drawn with the same seed for both policies; for greedy
    rows, the greedy answer)."""
    ids, a, b = align(
        outcomes_by_problem(first_rows, population), outcomes_by_problem(second_rows, population)
    )
    interval = paired_bootstrap(b.mean(axis=1), a.mean(axis=1), rng, resamples, level)
    only_first, only_second = discordant(a[:, 0], b[:, 0])
    return {
        "problems": len(ids),
        "draws": a.shape[1],
        "first_rate": float(a.mean()),
        "second_rate": float(b.mean()),
        **interval,
        "level": level,
        "only_first": only_first,
        "only_second": only_second,
        "mcnemar_p": exact_mcnemar(only_first, only_second),
    }


def all_pairs(
    rows_by_policy: dict[str, list[dict]],
    rng: np.random.Generator,
    population: str | None = None,
    resamples: int = 10_000,
    level: float = 0.95,
) -> list[dict]:
    """compare() for every pair (first, second) in the given policy order, one shared rng
    (so the whole table is one deterministic sequence of draws)."""
    return [
        {
            "first": p,
            "second": q,
            **compare(rows_by_policy[p], rows_by_policy[q], rng, population, resamples, level),
        }
        for p, q in combinations(list(rows_by_policy), 2)
    ]
