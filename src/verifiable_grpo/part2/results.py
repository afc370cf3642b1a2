"""Views of the recorded family study for the results chapter (reading only).

Everything here reads data/recorded/part2 (record.py wrote it) and reshapes it: per-seed
values by arm, step curves averaged over seeds, and what the mechanics did in each
regime (clip activity, ratios, discarded rollouts, AERO's curation strategies). Nothing
is recomputed that the analysis already decided.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np

from verifiable_grpo.core import files
from verifiable_grpo.core.config import resolve
from verifiable_grpo.core.record_names import with_current_names
from verifiable_grpo.part2.record import RECORDED


def load(dest=None) -> dict:
    """{"analysis", "warm_start", "runs": {(regime, arm, seed): manifest}} of the record."""
    dest = resolve(RECORDED) if dest is None else Path(dest)
    runs = {}
    for path in sorted(dest.glob("runs/*/*/run_manifest.json")):
        m = with_current_names(files.read_json(path))
        runs[(m["regime"], m["arm"], m["seed"])] = m
    if not runs:
        raise FileNotFoundError(
            f"no recorded study in {dest}: run `python -m verifiable_grpo "
            "family study` and `family export`"
        )
    return {
        "analysis": with_current_names(files.read_json(dest / "analysis.json")),
        "warm_start": files.read_json(dest / "warmstart-heldout.json"),
        "runs": runs,
    }


def arms_of(record: dict) -> list[str]:
    """The arms in the lock's order (the analysis keeps it)."""
    first = next(iter(record["analysis"]["regimes"].values()))
    return [row["arm"] for row in first["arms"]]


def _runs(record: dict, regime: str, arm: str) -> list[dict]:
    """The arm's runs in one regime, seeds ascending."""
    return [
        m
        for (r, a, _), m in sorted(record["runs"].items(), key=lambda kv: kv[0][2])
        if r == regime and a == arm
    ]


def per_seed(record: dict, regime: str, key: str = "heldout_greedy_all") -> dict[str, list]:
    """arm -> [summary[key] of each seed], seeds in ascending order."""
    return {arm: [m["summary"][key] for m in _runs(record, regime, arm)] for arm in arms_of(record)}


def step_curve(record: dict, regime: str, key: str) -> dict[str, np.ndarray]:
    """arm -> the per-step telemetry value `key`, averaged over the seeds."""
    return {
        arm: np.mean(
            np.array(
                [[t[key] for t in m["telemetry"]] for m in _runs(record, regime, arm)],
                dtype=np.float64,
            ),
            axis=0,
        )
        for arm in arms_of(record)
    }


def mechanics(record: dict, regime: str) -> list[dict]:
    """Per arm, over every step of every seed: the share of tokens clipped in each update,
    the widest ratio range seen, the final exact KL to the warm start, rollouts drawn and
    discarded per step, and how often each curation strategy was used."""
    rows = []
    for arm in arms_of(record):
        ms = _runs(record, regime, arm)
        steps = [t for m in ms for t in m["telemetry"]]
        updates = len(steps[0]["loss"])
        clipped = [
            float(np.mean([t["clip_low_fraction"][u] + t["clip_high_fraction"][u] for t in steps]))
            for u in range(updates)
        ]
        low = min(t["ratio_range"][u][0] for t in steps for u in range(updates))
        high = max(t["ratio_range"][u][1] for t in steps for u in range(updates))
        rows.append(
            {
                "arm": arm,
                "seeds": len(ms),
                "clipped_per_update": clipped,
                "ratio_min": low,
                "ratio_max": high,
                "final_kl": float(np.mean([m["telemetry"][-1]["mean_exact_kl"][-1] for m in ms])),
                "rollouts_per_step": float(np.mean([t["rollouts_generated"] for t in steps])),
                "discarded_per_step": float(np.mean([t["rollouts_discarded"] for t in steps])),
                "strategies": dict(Counter(s for t in steps for s in t["strategies"])),
            }
        )
    return rows


def wall_seconds(record: dict) -> float:
    return float(sum(m["wall_seconds"] for m in record["runs"].values()))
