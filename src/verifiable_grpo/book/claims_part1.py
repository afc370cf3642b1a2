"""Part I's sentences that quote a recorded number, tied to the records they quote."""

from __future__ import annotations

import math

import numpy as np

from verifiable_grpo.book.claims import fixed, keys, percent, record, signed
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


# Chapter I.6, GRPO: the recorded run's ratio range.
GRPO_PAGE = "notebooks/part1/06_grpo.py"


def _ratio_range():
    history = record("tiny/learning/grpo-continuous.json")["history"]
    updates = [u for h in history for u in h["updates"]]
    return [
        fixed(min(u["ratio_min"] for u in updates), 2),
        fixed(max(u["ratio_max"] for u in updates), 2),
    ]


# Chapter I.10's fresh-problem test of the selected setting.
def _fresh_test():
    paired = fresh_test.recorded()["paired"]
    sample, greedy = paired["sample"], paired["greedy"]
    study, candidates = _lift_candidates()
    test = candidates[study["selected"]]["test_sample"]
    return [
        fixed(sample["first_rate"]),
        fixed(sample["second_rate"]),
        signed(sample["low"]),
        signed(sample["high"]),
        fixed(greedy["difference"]),
        fixed((test["high"] - test["low"]) / 2),
    ]


def _smollm2_warm_start():
    warm = lift_study.recorded_own_warm_start()["summaries"][0]["warm_start"]
    return [percent(warm["test_sample"], 0)]


# Chapter I.12, SmolLM2 on small sums: the band run and its screen.
BAND_PAGE = "notebooks/part1/12_pretrained_model.py"


def _band_reading():
    band = band_study.recorded("band")
    sample, greedy = band["paired"]["sample"], band["paired"]["greedy"]
    return [
        fixed(sample["second_rate"]),
        fixed(sample["first_rate"]),
        signed(sample["difference"]),
        signed(sample["low"]),
        signed(sample["high"]),
        fixed(greedy["second_rate"]),
        fixed(greedy["first_rate"]),
    ]


def _band_kl():
    """The KL panel: the last 10 iterations' mean, then the largest single iteration (the
    peak the panel shows, so the sentence cannot quote a smoothed range below it)."""
    kl = [h["mean_exact_kl"] for h in band_study.recorded("band")["history"]]
    return [fixed(sum(kl[-10:]) / 10, 2), fixed(max(kl), 2)]


def _largest_clip():
    summary, rows, _ = _sweep()
    return [percent(max(r["clip_max"] for r in rows.values()))]


def _band_cost():
    band = band_study.recorded("band")
    setting = band["setting"]
    responses = setting["iterations"] * setting["prompts_per_iteration"] * setting["group_size"]
    return [fixed(band["train_seconds"] / responses, 1)]


def _band_screen():
    from verifiable_grpo.book import band_plots

    screen = band_study.recorded("screen")
    return [
        fixed(screen["signal_share_g8"], 2),
        fixed(screen["per_draw"]),
        fixed(band_plots.signal_share(screen["per_draw"], 8), 2),
    ]


CLAIMS |= {
    "I.6 ratio range": (GRPO_PAGE, "Neither run above clipped a single token", _ratio_range),
    "I.10 fresh problems": (SWEEP_PAGE, "On problems no run had seen", _fresh_test),
    "I.10 SmolLM2 warm start": (
        SWEEP_PAGE,
        "writing the strict JSON answer correctly on about",
        _smollm2_warm_start,
    ),
    "I.12 reading": (BAND_PAGE, "On 200 problems it never trained on", _band_reading),
    "I.12 KL": (BAND_PAGE, "The exact KL to the instruct model climbed", _band_kl),
    "I.6 clip acts": (GRPO_PAGE, "chapter 10's sweep measures up to", _largest_clip),
    "I.12 cost": (BAND_PAGE, "**What a rollout set costs.**", _band_cost),
    "I.12 screen": (BAND_PAGE, "On the screen's rates this gives", _band_screen),
    "I.12 estimated share": (
        BAND_PAGE,
        "The estimated share of informative groups",
        lambda: [fixed(band_study.recorded("screen")["signal_share_g8"], 2)],
    ),
    "I.12 silent start": (
        BAND_PAGE,
        "SmolLM2-135M-Instruct almost never solves StockArithmetic",
        lambda: [
            fixed(lift_study.recorded_own_warm_start()["summaries"][0]["warm_start"]["test_sample"])
        ],
    ),
}


# The book's pages on provenance and on the tiny base: timings and the base's build record.
PROVENANCE = "book/provenance.md"
TINY_BASE = "book/tiny-base.md"


def _speed_history():
    side = record("tiny-side/timings.json")
    first = record("bench/grpo.json")["pipeline"]["/tmp/recorded-tiny-before"]["total_seconds"]
    recorded = record("tiny/timings.json")["total_seconds"]
    elapsed = side["elapsed_seconds"]
    return [
        fixed(elapsed, 1),
        fixed(side["total_seconds"], 1),
        f"{first:,.1f}",
        fixed(first / elapsed, 1),
        fixed(recorded, 1),
        fixed(recorded / elapsed, 1),
    ]


def _bench_table():
    out = []
    for arm in record("bench/grpo.json")["arms"]:
        median = arm["median_seconds"]
        out += [
            fixed(median[k], 2) for k in ("total", "generation", "verification", "optimisation")
        ]
    return out


def _build(*path: str):
    """The tiny base's build record (data/tiny-base/BUILD.json), not a data/recorded file."""
    import json

    from verifiable_grpo.core.config import repo_root

    data = json.loads((repo_root() / "data/tiny-base/BUILD.json").read_text())
    for key in path:
        data = data[key]
    return data


def _base_loss():
    losses = _build("loss_every_100_steps")
    return [
        fixed(losses[0], 2),
        fixed(losses[1], 2),
        fixed(_build("final_loss_mean_last_100_steps"), 2),
    ]


def _base_exact():
    held = _build("held_out")
    keys_ = (
        "exact_rate",
        "exact_rate_json",
        "exact_rate_number",
        "exact_rate_id50",
        "exact_rate_ood100",
    )
    return [fixed(held[k]) for k in keys_]


CLAIMS |= {
    "provenance speed": (PROVENANCE, "the pipeline took", _speed_history),
    "provenance bench": (PROVENANCE, "| arm | s per rollout set |", _bench_table),
    "tiny base loss": (TINY_BASE, "The answer-token loss (mean over 100 steps)", _base_loss),
    "tiny base exact": (TINY_BASE, "| exact answers | all | JSON |", _base_exact),
}


def _smollm2_clock():
    """The GRPO run's minutes (the export reused a finished warm start, so the warm start's
    24.6 minutes are in no record: prose_settings declares them)."""
    run = record("lift-study/smollm2.json")["results"][0]
    return [fixed(run["train_seconds"] / 60, 1)]


CLAIMS |= {
    "provenance SmolLM2 clock": (PROVENANCE, "**The SmolLM2 lift candidate.**", _smollm2_clock),
    "provenance synthetic labs": (
        PROVENANCE,
        "says how long it took (from",
        keys(
            "part3/fault-tree.json",
            "provenance.wall_seconds f2",
            "part3/expert-iteration.json:provenance.wall_seconds f0",
        ),
    ),
    "provenance packing": (
        PROVENANCE,
        "conversations in three layouts:",
        keys("part3/sft-packing.json", "provenance.wall_seconds f1"),
    ),
    "provenance QUICK runs": (
        PROVENANCE,
        "Lab 1 took",
        keys(
            "part3/sft-metrics.json",
            "provenance.wall_seconds f1",
            "training_seconds f1",
            "part3/lora-metrics.json:provenance.wall_seconds f1",
            "part3/lora-metrics.json:training_seconds f1",
        ),
    ),
    "provenance one thread": (
        PROVENANCE,
        "recorded on an earlier day) took",
        keys(
            "part3/one-thread/sft-metrics.json",
            "provenance.wall_seconds f1",
            "part3/one-thread/lora-metrics.json:provenance.wall_seconds f1",
        ),
    ),
}


def _tiny_warm_start_range():
    """ "The tiny warm start: 16 to 20 %": its test and validation per-draw success."""
    warm = lift_study.recorded()["summary"]["warm_start"]
    return [percent(warm["test_sample"], 0), percent(warm["validation_sample"], 0)]


CLAIMS |= {
    "I.10 tiny warm start": (SWEEP_PAGE, "(the tiny warm start:", _tiny_warm_start_range),
}
