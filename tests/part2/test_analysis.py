"""The pre-registered analysis on synthetic runs: exact sign-flip p-values, BH, verdicts,
cost and ZVF columns, failing closed on missing runs; the E1 card's per-seed accuracies as
a worked case (the notes' paired differences and the study's all-inconclusive verdicts)."""

from __future__ import annotations

import pytest

from verifiable_grpo.part2 import analysis
from verifiable_grpo.part2 import lock as lock_lib

SEEDS = [11, 23, 37, 53, 71, 89, 107, 131]
E1 = {  # per-seed held-out accuracy, notes section 7.1 (the seed-003 study's numbers)
    "grpo": [0.650, 0.636, 0.634, 0.634, 0.634, 0.620, 0.634, 0.622],
    "aero": [0.630, 0.628, 0.636, 0.632, 0.632, 0.630, 0.630, 0.640],
    "dapo": [0.648, 0.624, 0.628, 0.636, 0.634, 0.636, 0.634, 0.632],
    "drgrpo": [0.642, 0.626, 0.622, 0.636, 0.620, 0.628, 0.628, 0.646],
    "gspo": [0.640, 0.638, 0.642, 0.632, 0.638, 0.646, 0.640, 0.628],
}


@pytest.fixture(scope="module")
def lock():
    return lock_lib.build_lock()


def _runs(values, regime="on_policy", **extra):
    return [
        {
            "arm": arm,
            "seed": seed,
            "regime": regime,
            "lock_sha256": "x" * 64,
            "group_size": 4,
            "heldout_greedy_all": v,
            "mean_reward_drawn": 0.5,
            "rollouts_generated": 480 if arm != "dapo" else 1200,
            "rollouts_discarded": 0 if arm != "dapo" else 720,
            "tokens_generated": 1000,
            "seconds_per_step": 1.0,
            "mean_zero_variance_fraction": 0.0 if arm == "dapo" else 0.6,
            "mean_zero_variance_fraction_drawn": 0.6,
            **extra,
        }
        for arm, per_seed in values.items()
        for seed, v in zip(SEEDS, per_seed)
    ]


@pytest.mark.parametrize(
    "differences, expected",
    [
        ([1.0, 1.0, 1.0], 2 / 8),  # only all-plus and all-minus reach |3|
        ([2.0, -1.0, 1.0], 6 / 8),  # |sums| 2,0,4,2,0,2,2,4 -> six reach 2
        ([1.0, -1.0], 1.0),
        ([0.0] * 4, 1.0),
        ([0.05] * 8, 2 / 256),
    ],
)
def test_the_exact_sign_flip_pvalue(differences, expected):
    assert analysis.sign_flip_pvalue(differences) == expected


def test_the_iid_zero_variance_fraction_prediction():
    assert analysis.iid_zero_variance_fraction(0.5, 4) == 0.125
    assert analysis.iid_zero_variance_fraction(0.0, 4) == 1.0
    assert analysis.iid_zero_variance_fraction(0.64, 4) == pytest.approx(0.64**4 + 0.36**4)
    with pytest.raises(ValueError, match="p must lie in"):
        analysis.iid_zero_variance_fraction(1.5, 4)


def test_verdicts_follow_bh_and_the_interval(lock):
    base = [0.5, 0.52, 0.48, 0.5, 0.51, 0.49, 0.5, 0.5]
    values = {
        "grpo": base,
        "drgrpo": [b + 0.05 for b in base],  # better on every seed
        "dapo": [b - 0.05 for b in base],  # worse on every seed
        "gspo": [b + d for b, d in zip(base, [0.01, -0.01] * 4)],
        "aero": list(base),
    }
    result = analysis.analyse(lock, _runs(values))["regimes"]["on_policy"]
    by_arm = {c["arm"]: c for c in result["comparisons"]}
    assert by_arm["drgrpo"]["p_value"] == by_arm["dapo"]["p_value"] == 2 / 256
    # BH over four: the two 2/256 become 4/2 x 2/256 = 1/64; gspo and aero stay at 1.
    assert by_arm["drgrpo"]["p_adjusted"] == pytest.approx(1 / 64)
    assert by_arm["gspo"]["p_adjusted"] == 1.0 and by_arm["aero"]["p_value"] == 1.0
    assert [by_arm[a]["verdict"] for a in ("drgrpo", "dapo", "gspo", "aero")] == [
        "better",
        "worse",
        "inconclusive",
        "inconclusive",
    ]
    assert by_arm["drgrpo"]["difference"] == pytest.approx(0.05)
    assert by_arm["drgrpo"]["low"] == pytest.approx(0.05) == by_arm["drgrpo"]["high"]
    rows = {r["arm"]: r for r in result["arms"]}
    assert (
        rows["dapo"]["rollouts_discarded"] == 720
        and rows["dapo"]["zero_variance_fraction_logged"] == 0.0
    )
    assert rows["grpo"]["zero_variance_fraction_iid"] == 0.125
    assert rows["grpo"]["zero_variance_fraction_drawn"] == 0.6


def test_the_e1_card_as_a_worked_case(lock):
    result = analysis.analyse(lock, _runs(E1))["regimes"]["on_policy"]
    rows = {r["arm"]: r for r in result["arms"]}
    assert rows["grpo"]["mean"] == pytest.approx(0.6330)
    assert rows["gspo"]["mean"] == pytest.approx(0.6380)
    # Percentile bootstrap over 8 seeds: inside the sample's range, around the mean.
    assert min(E1["grpo"]) <= rows["grpo"]["low"] < 0.6330 < rows["grpo"]["high"] <= max(E1["grpo"])
    differences = {c["arm"]: c["difference"] for c in result["comparisons"]}
    assert differences == pytest.approx(
        {"aero": -0.00075, "dapo": 0.0010, "drgrpo": -0.0020, "gspo": 0.0050}, abs=1e-12
    )
    assert {c["verdict"] for c in result["comparisons"]} == {"inconclusive"}
    again = analysis.analyse(lock, _runs(E1))["regimes"]["on_policy"]
    assert again == result  # fixed RNG seeds: identical numbers
    text = analysis.format_analysis({"metric": "m", "regimes": {"on_policy": result}})
    assert "gspo - grpo: +0.0050" in text


def test_missing_runs_fail_closed_and_foreign_locks_are_refused(lock):
    runs = [r for r in _runs(E1) if not (r["arm"] == "aero" and r["seed"] == 131)]
    part = analysis.analyse(lock, runs)["regimes"]["on_policy"]
    assert not part["complete"] and part["comparisons"] == []
    assert part["missing"] == ["aero/seed 131"]
    assert "no verdicts: 1 pre-registered runs missing" in analysis.format_analysis(
        {"metric": "m", "regimes": {"on_policy": part}}
    )
    with pytest.raises(ValueError, match="runs from another lock"):
        analysis.analyse(lock, _runs(E1), lock_sha="y" * 64)
