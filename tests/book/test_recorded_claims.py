"""Each sentence of the chapters that quotes a recorded number quotes the record: the
expected numbers are formatted here from data/recorded/, and the paragraph (named by its
first words) must quote them in order. Re-recording a run without updating its prose
fails here, naming the page, the paragraph and the number."""

from __future__ import annotations

import math

import numpy as np
import pytest

from verifiable_grpo.book import claims
from verifiable_grpo.book.claims import fixed, percent, signed
from verifiable_grpo.part1 import (
    advantage_scale,
    fixed_prompt_objectives,
    fixed_prompts,
    lift_study,
    sweep,
)

SWEEP_PAGE = "notebooks/part1/10_beyond_the_budget.py"


def _sweep():
    recorded = sweep.load_recorded()
    rows = {r["name"]: r for r in recorded["summary"]["settings"]}
    histories = {r["setting"]["name"]: r["history"] for r in recorded["results"]}
    return recorded["summary"], rows, histories


def _no_setting_learns():
    summary, rows, _ = _sweep()
    chosen = rows[summary["selected"]]
    paired = chosen["paired_vs_warm_start"]
    return [
        str(chosen["test_per_draw"]["correct"]),
        str(chosen["test_per_draw"]["responses"]),
        str(summary["warm_start"]["test_per_draw"]["correct"]),
        signed(paired["difference"]),
        signed(paired["low"]),
        signed(paired["high"]),
    ]


def _larger_step_harmed():
    """The four settings whose paired interval lies below zero: KL ratio to the selected
    setting (floor, ceil), the largest clip, reward first/last 20 iterations, ZVF at 3e-4."""
    summary, rows, histories = _sweep()
    harmed = [n for n, r in rows.items() if r["paired_vs_warm_start"]["high"] < 0]
    ratios = [rows[n]["last10_kl"] / rows[summary["selected"]]["last10_kl"] for n in harmed]
    last = [np.mean([h["mean_reward"] for h in histories[n][-20:]]) for n in harmed]
    first = [np.mean([h["mean_reward"] for h in histories[n][:20]]) for n in harmed]
    zvf = np.mean([h["zero_variance_fraction"] for h in histories["lr3e-4"]])
    return [
        str(len(harmed)),
        str(math.floor(min(ratios))),
        str(math.ceil(max(ratios))),
        percent(max(rows[n]["clip_max"] for n in harmed)),
        fixed(min(last), 2),
        fixed(max(last), 2),
        fixed(min(first), 2),
        fixed(max(first), 2),
        fixed(zvf, 2),
    ]


def _tempting_number():
    summary, rows, _ = _sweep()
    best = max(rows.values(), key=lambda r: r["test_greedy"]["correct"])
    return [
        str(best["test_greedy"]["correct"]),
        str(best["test_greedy"]["responses"]),
        str(summary["warm_start"]["test_greedy"]["correct"]),
        fixed(best["paired_vs_warm_start"]["mcnemar_p"], 2),
    ]


def _lift_candidates():
    study = lift_study.recorded()["summary"]
    return study, {c["name"]: c["paired"] for c in study["candidates"]}


def _first_candidate():
    study, paired = _lift_candidates()
    first = paired[study["candidates"][0]["name"]]
    greedy, sample, valid = first["test_greedy"], first["test_sample"], first["validation_sample"]
    return [
        str(round(greedy["second_rate"] * greedy["problems"])),
        str(greedy["problems"]),
        str(round(greedy["first_rate"] * greedy["problems"])),
        str(greedy["only_second"]),
        str(greedy["only_first"]),
        f"{greedy['mcnemar_p']:.4f}",
        percent(sample["second_rate"]),
        percent(sample["first_rate"]),
        signed(valid["difference"]),
        signed(valid["low"]),
        signed(valid["high"]),
    ]


def _selected_candidate():
    study, paired = _lift_candidates()
    chosen = paired[study["selected"]]
    valid, greedy, sample = (
        chosen["validation_sample"],
        chosen["test_greedy"],
        chosen["test_sample"],
    )
    return [
        signed(valid["difference"]),
        signed(valid["low"]),
        signed(valid["high"]),
        fixed(greedy["second_rate"]),
        fixed(greedy["first_rate"]),
        f"{greedy['mcnemar_p']:.4f}",
        fixed(sample["second_rate"]),
        fixed(sample["first_rate"]),
        signed(sample["low"]),
        signed(sample["high"]),
        signed(valid["difference"]),
        signed(sample["difference"]),
    ]


def _smollm2():
    run = lift_study.recorded_own_warm_start()["results"][0]["history"]
    zvf = np.mean([h["zero_variance_fraction"] for h in run])
    return [percent(zvf, 0), fixed(max(h["mean_exact_kl"] for h in run), 2)]


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


def _group_size_bill():
    mixed = {g: 1 - 0.9**g - 0.1**g for g in (8, 4)}
    return [fixed(mixed[8], 2), fixed(mixed[4], 2), f"{100 * mixed[4] / mixed[8]:.0f}"]


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
    "I.10 no setting learns": (SWEEP_PAGE, "**No setting learns.**", _no_setting_learns),
    "I.10 larger step": (SWEEP_PAGE, "**A larger step did harm", _larger_step_harmed),
    "I.10 tempting number": (SWEEP_PAGE, "**A tempting number", _tempting_number),
    "I.10 first candidate": (SWEEP_PAGE, "With 512 responses per iteration", _first_candidate),
    "I.10 selected candidate": (SWEEP_PAGE, "That result suggested one more", _selected_candidate),
    "I.10 SmolLM2": (SWEEP_PAGE, "It does not learn, and the reason is upstream", _smollm2),
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
    "III.10 group size": (
        "notebooks/part3/10_case_study_bill.py",
        "Every GRPO stage is proportional to the number of responses",
        _group_size_bill,
    ),
}


@pytest.mark.parametrize("claim", list(CLAIMS))
def test_the_sentence_quotes_the_record(claim):
    page, anchor, expected = CLAIMS[claim]
    text = claims.paragraph(page, anchor)
    absent = claims.missing(text, expected())
    assert not absent, (
        f"{page}, paragraph '{anchor}': the record gives {absent}, which the prose does not "
        f"quote in order (it quotes {claims.quoted(text)})"
    )


def test_the_helper_finds_a_changed_number():
    text = "it answers 128 of 800 draws, a difference of −0.001 [-0.022, +0.020]"
    assert claims.missing(text, ["128", "800", "-0.001", "-0.022", "+0.020"]) == []
    assert claims.missing(text, ["129", "800"]) == ["129"]
    assert claims.missing(text, ["800", "128"]) == ["128"]  # order matters


def test_the_lift_tables_keep_the_verdict_beside_the_name():
    study = lift_study.recorded()["summary"]
    for verdict, detail, candidate in zip(
        lift_study.verdict_rows(study), lift_study.detail_rows(study), study["candidates"]
    ):
        assert verdict[0] == detail[0] == lift_study.display_name(candidate["name"])
        assert verdict[1] == ("yes" if candidate["learns"] else "no")
        low = candidate["paired"]["validation_sample"]["low"]
        assert verdict[2].endswith(
            f"[{low:+.3f}, {candidate['paired']['validation_sample']['high']:+.3f}]"
        )
    assert len(lift_study.VERDICT_COLUMNS) <= 5  # narrow enough for a phone
