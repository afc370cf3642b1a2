"""What the recorded band run can say about what taught it, from its stored answers alone.

Three readings of data/recorded/band/band.json (the instruct model and the trained policy,
200 test problems x 8 draws each, the same seed for the same problem and draw):

- commuted twins: a test sum a + b whose twin b + a lies in the training split could have
  been learnt by heart from the twin; comparing test sums with and without a trained twin
  (and the differences, which have no twin) shows whether the gain needed it;
- pass@k for k = 1, 2, 4, 8 from the 8 stored draws (unbiased estimator), before and after,
  with bootstrap intervals over problems: does the gain hold when the instruct model may
  try several times;
- the answer breakdown: malformed, wrong number, right, before and after.

Each interval is a percentile bootstrap over problems, one generator per table
(band_study.ANALYSIS_SEED), so the tables are the same on every run.
"""

from __future__ import annotations

import numpy as np

from verifiable_grpo.evaluation import pass_at_k
from verifiable_grpo.evaluation.statistics import paired_bootstrap
from verifiable_grpo.part1.band_study import ANALYSIS_SEED
from verifiable_grpo.task import small_sums

KS = (1, 2, 4, 8)
TWIN_GROUPS = ("twin in train", "no twin in train", "differences")
RESAMPLES = 10_000


def operands(example: dict) -> tuple[str, int, int]:
    """(op, a, b) of a SmallSums problem: its population says the operation (a + 0 and
    a - 0 have the same StockArithmetic form), its movement the operand."""
    problem = example["problem"]
    if example["population"] == "SUM":
        return "+", problem["initial"], problem["deliveries"][0]
    return "-", problem["initial"], problem["withdrawals"][0]


def twin_group_of_test_problems(splits: dict | None = None) -> dict[str, str]:
    """document_id -> its group: a sum whose commuted twin b + a is a training problem, a sum
    without one (a + a is its own twin, never trained), or a difference."""
    splits = small_sums.splits() if splits is None else splits
    trained = {operands(e) for e in splits["train"]}
    out = {}
    for example in splits["test"]:
        op, a, b = operands(example)
        if op == "-":
            out[example["document_id"]] = TWIN_GROUPS[2]
        else:
            out[example["document_id"]] = TWIN_GROUPS[0 if ("+", b, a) in trained else 1]
    return out


def per_problem_rewards(rows: list[list]) -> dict[str, list[int]]:
    """document_id -> rewards of its draws, in draw order (rows as band_study stores them)."""
    out: dict[str, dict[int, int]] = {}
    for document_id, draw, _seed, reward, _valid, _text in rows:
        out.setdefault(document_id, {})[draw] = int(reward)
    return {d: [draws[k] for k in sorted(draws)] for d, draws in sorted(out.items())}


def twin_table(band: dict) -> list[dict]:
    """Per group: problems, per-draw success before and after, and the paired gain with its
    95 % interval (bootstrap over the group's problems)."""
    groups = twin_group_of_test_problems()
    before = per_problem_rewards(band["before"]["sample"])
    after = per_problem_rewards(band["after"]["sample"])
    rng = np.random.default_rng(ANALYSIS_SEED)
    rows = []
    for group in TWIN_GROUPS:
        ids = [d for d in before if groups[d] == group]
        first = np.array([np.mean(before[d]) for d in ids])
        second = np.array([np.mean(after[d]) for d in ids])
        gain = paired_bootstrap(second, first, rng, RESAMPLES)
        rows.append(
            {
                "group": group,
                "problems": len(ids),
                "before": float(first.mean()),
                "after": float(second.mean()),
                **gain,
            }
        )
    return rows


def counts(rows: list[list]) -> list[tuple[int, int]]:
    """(n draws, c right) per problem, in document order."""
    return [(len(r), sum(r)) for r in per_problem_rewards(rows).values()]


def pass_at_k_table(band: dict, ks=KS) -> dict:
    """{"before", "after": pass_at_k.curve rows, "gain": the paired curve} from the stored
    draws (k up to the number of draws)."""
    before, after = counts(band["before"]["sample"]), counts(band["after"]["sample"])
    rng = np.random.default_rng(ANALYSIS_SEED)
    return {
        "before": pass_at_k.curve(before, ks, rng, RESAMPLES),
        "after": pass_at_k.curve(after, ks, rng, RESAMPLES),
        "gain": pass_at_k.paired_curve(before, after, ks, rng, RESAMPLES),
    }


def answer_breakdown(band: dict) -> dict:
    """{"before", "after": {"malformed", "wrong number", "right"}} of the sampled answers."""
    names = {"format": "malformed", "arithmetic": "wrong number", "right": "right"}
    return {
        side: {names[k]: band["failures"][side][k] for k in ("format", "arithmetic", "right")}
        for side in ("before", "after")
    }


def format_repairs_bound(band: dict) -> tuple[int, int]:
    """(extra right answers, the most of them a format repair can explain): an answer can
    only move from malformed to right as often as malformed answers disappeared."""
    breakdown = answer_breakdown(band)
    before, after = breakdown["before"], breakdown["after"]
    return after["right"] - before["right"], before["malformed"] - after["malformed"]
