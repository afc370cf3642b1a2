"""Part I's sentences that quote a recorded number, tied to the records they quote."""

from __future__ import annotations

import math

import numpy as np

from verifiable_grpo.book.claims import fixed, percent, signed
from verifiable_grpo.part1 import band_study, fresh_test, lift_study, sweep

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


CLAIMS = {
    "I.10 no setting learns": (SWEEP_PAGE, "**No setting learns.**", _no_setting_learns),
    "I.10 larger step": (SWEEP_PAGE, "**A larger step did harm", _larger_step_harmed),
    "I.10 tempting number": (SWEEP_PAGE, "**A tempting number", _tempting_number),
    "I.10 first candidate": (SWEEP_PAGE, "With 512 responses per iteration", _first_candidate),
    "I.10 selected candidate": (SWEEP_PAGE, "That result suggested one more", _selected_candidate),
    "I.10 SmolLM2": (SWEEP_PAGE, "It does not learn, and the reason is upstream", _smollm2),
}


def _headline():
    """The first screen's two lifts: SmolLM2 on small sums, the tiny base on fresh problems."""
    band = band_study.recorded("band")["paired"]["sample"]
    fresh = fresh_test.recorded()["paired"]["sample"]
    rates = [band["first_rate"], band["second_rate"], fresh["first_rate"], fresh["second_rate"]]
    return [fixed(r) for r in rates]


HEADLINE = "**What GRPO taught, in three sentences.**"
CLAIMS |= {
    "intro headline": ("book/intro.md", HEADLINE, _headline),
    "Part I headline": ("book/part1.md", HEADLINE, _headline),
}
