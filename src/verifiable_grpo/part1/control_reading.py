"""Reading the recorded control study for chapter I.13: one row per run from the halves'
records, the declared contrasts, and the 15-minute run, as table rows.

The records are data/recorded/controls/controls-first.json and controls-second.json (each
half's runs, scored once) and controls.json (both halves' analysis, written once the second
half finished); control_study.py computes them.
"""

from __future__ import annotations

from verifiable_grpo.part1 import band_scoring, control_study
from verifiable_grpo.part1.control_declaration import HALVES


def halves_recorded() -> dict[str, dict]:
    """The halves that have a record, by name ("first", "second")."""
    found = {h: control_study.recorded(f"controls-{h}") for h in HALVES}
    return {h: r for h, r in found.items() if r is not None}


def instruct_rate(halves: dict[str, dict]) -> float:
    return band_scoring.rate(halves[HALVES[0]]["instruct"]["after"]["sample"])


def runs_rows(halves: dict[str, dict]) -> list[list]:
    """Per recorded run: half, arm, seed, per-draw success, its difference from the instruct
    model (unpaired means over the same draws), and minutes from instruct model to score."""
    base = instruct_rate(halves)
    rows = []
    for half, record in halves.items():
        for run in record["runs"].values():
            rows.append(
                [
                    half,
                    run["arm"],
                    run["seed"],
                    f"{run['per_draw']:.3f}",
                    f"{run['per_draw'] - base:+.3f}",
                    f"{run['wall_seconds'] / 60:.1f}",
                ]
            )
    return rows


def contrast_rows(combined: dict) -> list[list]:
    """The declared contrasts: difference and 95% interval, and whether it lies above 0."""
    return [
        [
            c["contrast"],
            f"{c['difference']:+.3f}",
            f"[{c['low']:+.3f}, {c['high']:+.3f}]",
            "yes" if c["above_zero"] else "no",
        ]
        for c in combined["analysis"]["contrasts"]
    ]


def contrast(combined: dict, name: str) -> dict:
    return next(c for c in combined["analysis"]["contrasts"] if c["contrast"] == name)


def fifteen_minute_run(halves: dict[str, dict], declaration: dict) -> dict:
    """The declared secondary from the halves recorded so far (the first holds the first
    verifier run and the instruct model's score)."""
    return control_study.declared_fifteen_minute_run(halves, declaration)


def fifteen_minute_rows(run: dict) -> list[list]:
    """The declared secondary's rows: the run's minutes (training, scoring, from the
    instruct model to its score) and its own paired gain."""
    gain = run["gain"]
    return [
        ["run", run["run"]],
        ["training, minutes", f"{run['train_seconds'] / 60:.1f}"],
        ["scoring 1,800 test answers, minutes", f"{run['score_seconds'] / 60:.1f}"],
        ["instruct model to test score, minutes", f"{run['wall_seconds'] / 60:.1f}"],
        [
            "per-draw gain over the instruct model [95%]",
            f"{gain['difference']:+.3f} [{gain['low']:+.3f}, {gain['high']:+.3f}]",
        ],
        [
            "targets met (15 minutes; +0.3)",
            f"{'yes' if run['within_15_minutes'] else 'no'}; "
            f"{'yes' if run['gain_at_least_0.3'] else 'no'}",
        ],
    ]
