"""The short version of what the recorded runs found: the intro's and Part I's "What the
recorded runs found" sections, tied to the records the chapters read."""

from __future__ import annotations

from functools import cache

from verifiable_grpo.book.claims import fixed, keys, percent, record, signed
from verifiable_grpo.part1 import band_study, fresh_test

INTRO = "book/intro.md"
PART1 = "book/part1.md"


def _tiny_policies() -> dict:
    return record("tiny/results.json")["policies"]


@cache
def _paired_table() -> tuple[dict, ...]:
    """Chapter I.8's paired per-draw table, computed as the chapter computes it (one seeded
    generator over every pair, in its order); once per session, it bootstraps ten pairs."""
    import numpy as np

    from verifiable_grpo.core.runfolder import order_policies
    from verifiable_grpo.evaluation import paired

    policies = {**_tiny_policies(), **record("tiny/exercise/results.json")["policies"]}
    order = order_policies(policies)
    rows = {p: record(f"tiny/scores/{p}-sample.json")["rows"] for p in order}
    return tuple(paired.all_pairs(rows, np.random.default_rng(2026)))


def _against_warm_start(policy: str) -> dict:
    """The table's comparison of a policy with the warm start."""
    return next(c for c in _paired_table() if (c["first"], c["second"]) == ("warmstart", policy))


def _within_budget() -> list[str]:
    policies = _tiny_policies()
    greedy = {p: policies[p]["greedy_pass_at_1"]["ALL"]["success_rate"] for p in policies}
    draws = {p: policies[p]["per_draw_success"]["ALL"]["success_rate"] for p in policies}
    pair = _against_warm_start("grpo")
    return [fixed(greedy["warmstart"]), fixed(greedy["grpo"]), fixed(greedy["sft"])] + [
        fixed(draws["warmstart"]),
        fixed(draws["grpo"]),
        signed(pair["low"]),
        signed(pair["high"]),
    ]


def _family_study() -> list[str]:
    """All comparisons inconclusive, and no arm above the warm start's greedy accuracy (a
    marker no page quotes otherwise, so the sentence fails when either stops holding)."""
    regimes = record("part2/analysis.json")["regimes"].values()
    comparisons = [c for r in regimes for c in r["comparisons"]]
    warm = record("part2/warmstart-heldout.json")["heldout"]["greedy"]["ALL"]["success_rate"]
    best = max(a["mean"] for r in regimes for a in r["arms"])
    out = [str(len(comparisons)), fixed(warm)]
    if any(c["verdict"] != "inconclusive" for c in comparisons):
        out.append("a verdict other than inconclusive")
    if best > warm:
        out.append(f"an arm above the warm start ({best:.3f})")
    return out


def _group_sizes() -> list[str]:
    """The share of groups without a signal, G = 2 against G = 8 (chapter I.9), and neither
    branch's paired per-draw interval against the warm start excluding zero."""

    def silent(branch: str) -> float:
        history = record(f"tiny/learning/{branch}-continuous.json")["history"]
        return sum(h["zero_variance_fraction"] for h in history) / len(history)

    out = [percent(silent("grpo-g2"), 0), percent(silent("grpo-g8"), 0)]
    for branch in ("grpo-g2", "grpo-g8"):
        pair = _against_warm_start(branch)
        if pair["low"] > 0 or pair["high"] < 0:
            out.append(f"{branch} outside the warm start's noise")
    return out


def _beyond_budget() -> list[str]:
    fresh = fresh_test.recorded()["paired"]["sample"]
    band = band_study.recorded("band")["paired"]["sample"]
    return [
        fixed(fresh["first_rate"]),
        fixed(fresh["second_rate"]),
        fixed(band["first_rate"]),
        fixed(band["second_rate"]),
        signed(band["low"]),
        signed(band["high"]),
    ]


_GAMED = keys(
    "part3/expert-iteration.json",
    "metrics.grpo[2].records[6].verifier_reward p1",
    "metrics.grpo[2].records[6].accuracy p1",
)

CLAIMS = {
    "intro: within the budget": (INTRO, "**Within the practical's budget", _within_budget),
    "intro: the family study": (INTRO, "**The five variants could not", _family_study),
    "intro: a gamed checker": (INTRO, "**A checker that can be gamed", _GAMED),
    "Part I: within the budget": (PART1, "**Within the practical's budget", _within_budget),
    "Part I: group sizes": (PART1, "**Group size moved the signal", _group_sizes),
    "Part I: beyond the budget": (PART1, "**Beyond the budget", _beyond_budget),
}
