"""Part II's sentences that quote a recorded number, tied to the records they quote."""

from __future__ import annotations

from verifiable_grpo.book.claims import fixed, keys, percent, record, signed
from verifiable_grpo.book.claims_rows import RowClaim
from verifiable_grpo.book.claims_rows import expected as row_expected
from verifiable_grpo.part1 import advantage_scale, fixed_prompt_objectives, fixed_prompts


def _mismatch_rows():
    recorded = fixed_prompt_objectives.recorded()
    names = [
        fixed_prompt_objectives.run_name(n, True) for n in fixed_prompt_objectives.MISMATCH_RUNS
    ]
    rows = fixed_prompt_objectives.comparison(
        {n: recorded["runs"][n] for n in names}, fixed_prompts.recorded()["ours"]
    )
    return rows, recorded["runs"][names[1]]


def _mismatch_reading():
    rows, tis = _mismatch_rows()
    out = []
    for row in rows[1:3]:  # after float32 GRPO itself: no correction, then TIS
        low, high = row["difference_interval"]
        out += [signed(row["difference"]), signed(low), signed(high)]
    weights = [(h["behaviour_weight_min"], h["behaviour_weight_max"]) for h in tis["history"]]
    return out + [fixed(min(w for w, _ in weights)), fixed(max(w for _, w in weights))]


def _step_size_reading():
    grpo = fixed_prompts.recorded()["ours"]
    runs = fixed_prompt_objectives.recorded()["runs"]
    named = ("reinforce", "reinforce_baseline", "rloo", "reinforce_pp")
    rel = {r["objective"]: r["relative"] for r in advantage_scale.scales(named, grpo)}
    diff = {
        r["objective"]: r["difference"]
        for r in fixed_prompt_objectives.comparison({n: runs[n] for n in named}, grpo)
    }
    return [fixed(rel[n], 2) for n in named] + [
        fixed(1 / rel["reinforce_baseline"], 1),
        signed(diff["reinforce_baseline"]),
        signed(diff["reinforce"]),
    ]


CLAIMS = {
    "II.6 mismatch reading": (
        "notebooks/part2/06_training_inference_mismatch.py",
        "The reading at this scale",
        _mismatch_reading,
    ),
    "II.7 step size": (
        "notebooks/part2/07_newer_objectives.py",
        "**What the comparison can say.**",
        _step_size_reading,
    ),
}


# Chapter II.4, the family study's results (data/recorded/part2/analysis.json).
RESULTS_PAGE = "notebooks/part2/04_results.py"


def _regime(name: str) -> dict:
    regime = record("part2/analysis.json")["regimes"][name]
    return {
        "arms": {a["arm"]: a for a in regime["arms"]},
        "vs": {c["arm"]: c for c in regime["comparisons"]},
    }


def _closest_calls():
    drgrpo = _regime("on_policy")["vs"]["drgrpo"]
    dapo = _regime("two_updates")["vs"]["dapo"]
    return [
        signed(drgrpo["low"], 4),
        signed(drgrpo["high"], 4),
        fixed(drgrpo["p_value"]),
        fixed(drgrpo["p_adjusted"], 2),
        signed(dapo["difference"]),
        signed(dapo["low"]),
        signed(dapo["high"]),
        fixed(dapo["p_value"]),
        fixed(dapo["p_adjusted"]),
    ]


def _no_arm_gained():
    heldout = record("part2/warmstart-heldout.json")["heldout"]
    two = _regime("two_updates")["arms"]["grpo"]
    return [
        str(heldout["greedy"]["ALL"]["correct"]),
        str(heldout["greedy"]["ALL"]["problems"]),
        fixed(heldout["greedy"]["ALL"]["success_rate"]),
        fixed(heldout["per_draw"]["ALL"]["success_rate"]),
        fixed(_regime("on_policy")["arms"]["grpo"]["mean"]),
        fixed(two["mean"]),
    ]


def _dapo_cost():
    """dapo's rollouts against grpo's, and the share it discarded, in both regimes."""
    ratios, shares = [], []
    for name in ("on_policy", "two_updates"):
        arms = _regime(name)["arms"]
        dapo = arms["dapo"]
        ratios.append(dapo["rollouts_generated"] / arms["grpo"]["rollouts_generated"])
        shares.append(dapo["rollouts_discarded"] / dapo["rollouts_generated"])
    assert len({fixed(r, 1) for r in ratios}) == 1, ratios  # "about 2.3 times" in both
    return [fixed(ratios[0], 1), percent(min(shares), 0), percent(max(shares), 0)]


CLAIMS |= {
    "II.4 closest calls": (RESULTS_PAGE, "has a paired bootstrap interval of", _closest_calls),
    "II.4 no arm gained": (
        RESULTS_PAGE,
        "**Training did not raise held-out accuracy; the arms differ in how much they lost.**",
        _no_arm_gained,
    ),
    "II.4 dapo's cost": (RESULTS_PAGE, "the rollout counts above are the exact cost", _dapo_cost),
}


# Chapter II.3, study design: the published E1 study (reference-e1.json), re-analysed.
DESIGN_PAGE = "notebooks/part2/03_study_design.py"


def _e1_gspo():
    from verifiable_grpo.part2 import analysis, demos
    from verifiable_grpo.part2.lock import read_lock

    lock, _ = read_lock()
    result = analysis.analyse(lock, demos.e1_runs())
    rows = {c["arm"]: c for c in result["regimes"]["on_policy"]["comparisons"]}
    return [signed(rows["gspo"]["difference"])]


# Chapter II.6: the recorded bf16-sampler runs' importance weights.
MISMATCH_PAGE = "notebooks/part2/06_training_inference_mismatch.py"


def _weights_within():
    _, tis = _mismatch_rows()
    weights = [
        w for h in tis["history"] for w in (h["behaviour_weight_min"], h["behaviour_weight_max"])
    ]
    return [percent(max(abs(1 - w) for w in weights), 0)]


CLAIMS |= {
    "II.3 gspo row": (
        DESIGN_PAGE,
        "worth a second look: with one update per generation batch",
        _e1_gspo,
    ),
    "II.3 card's run": (
        DESIGN_PAGE,
        "The card's run (`drgrpo`, seed 107) logged",
        keys("reference-e1.json", "card_run.mean_zvf f3", "card_run.last10_mean_reward f2"),
    ),
    "II.6 weights": (MISMATCH_PAGE, "weights stayed within about", _weights_within),
}


# Chapter II.8 (claims only; the chapter is the lead's): the card's table.
GPU_PAGE = "notebooks/part2/08_before_gpu_hours.py"


def _card_spread():
    means = [row["mean"] for row in record("reference-e1.json")["card_table"]]
    return [fixed(min(means)), fixed(max(means))]


CLAIMS |= {
    "II.8 card's results": (GPU_PAGE, "five arms between", _card_spread),
}


def _reported_reward():
    """The last-10-step training reward, mean over seeds: dapo and aero (the batches they
    chose) against the other arms, over both regimes."""
    from verifiable_grpo.part2 import results

    record_ = results.load()
    curated, plain = [], []
    for regime in ("on_policy", "two_updates"):
        for arm in results.arms_of(record_):
            runs = results._runs(record_, regime, arm)
            mean = sum(m["summary"]["last10_mean_reward"] for m in runs) / len(runs)
            (curated if arm in ("dapo", "aero") else plain).append(mean)
    return [
        fixed(min(curated), 2),
        fixed(max(curated), 2),
        fixed(min(plain), 2),
        fixed(max(plain), 2),
    ]


def _mechanics():
    """Second regime: token-ratio range and clipped share of the second update over the
    token-level arms, and gspo's sequence-ratio range."""
    from verifiable_grpo.part2 import results

    rows = {m["arm"]: m for m in results.mechanics(results.load(), "two_updates")}
    gspo = rows.pop("gspo")
    return [
        fixed(min(m["ratio_min"] for m in rows.values()), 2),
        fixed(max(m["ratio_max"] for m in rows.values()), 1),
        percent(min(m["clipped_per_update"][1] for m in rows.values()), 2),
        percent(max(m["clipped_per_update"][1] for m in rows.values()), 2),
        fixed(gspo["ratio_min"], 2),
        fixed(gspo["ratio_max"], 2),
    ]


CLAIMS |= {
    "II.4 reported reward": (RESULTS_PAGE, "The training reward they", _reported_reward),
    "II.4 mechanics": (RESULTS_PAGE, "the second update saw token ratios", _mechanics),
}


# Chapter II.8's reading of the card-defaults table: the rows of the second regime whose
# interval excludes zero, checked against every row (book/claims_rows.py).
def _two_update_rows() -> list[dict]:
    from verifiable_grpo.part2 import card_defaults

    part = card_defaults.load()["analysis"]["regimes"]["two_updates"]
    return [dict(c, name=c["arm"]) for c in part["comparisons"]]


def _leans(row: dict) -> bool:
    return row["low"] > 0 or row["high"] < 0


def _leaning_numbers(row: dict) -> list[str]:
    return [
        signed(row["difference"], 4),
        signed(row["low"], 4),
        signed(row["high"], 4),
        fixed(row["p_value"], 4),
    ]


ROW_CLAIMS = {
    "II.8 readings that lean": RowClaim(
        page=GPU_PAGE,
        anchor="is behind `grpo` by",
        rows=_two_update_rows,
        has_property=_leans,
        quote=_leaning_numbers,
        counted="{count} readings lean",
    ),
}


def _power_at_a_tenth() -> list[str]:
    """The power table's rows at a tenth of the step, as the chapter computes it."""
    from verifiable_grpo.part2 import step_power

    spread = step_power.recorded_training_spread()
    sigma = step_power.SeedSpread(train=spread["median"], floor=step_power.card_floor())
    factors = [1.0, 1 / 3, 1 / 10, 1 / 30, 1 / 50]  # the chapter's table, in its order
    table = step_power.power_table([0.02, 0.04, 0.06], factors, sigma)
    return [fixed(r["power"], 2) for r in table if r["step_factor"] == 1 / 10]


CLAIMS |= {
    "II.8 power at a tenth": (GPU_PAGE, "At a tenth of the step", _power_at_a_tenth),
    "II.8 readings that lean": (
        GPU_PAGE,
        "is behind `grpo` by",
        lambda: row_expected(ROW_CLAIMS["II.8 readings that lean"]),
    ),
}
