"""`bench pipeline`: a finished run folder beside the recorded tiny run. Same numbers? How
long did it take?

Why a comparison and not a re-record: the recorded warm start file is pinned by SHA-256 in
Part II's pre-registered lock and in the sweep's record. A run with newer code trains the
same warm-start weights bit for bit (same threads), but the file also stores the code's
hash, so exporting a new record would void both. Instead this says, measured, what a run
of the current code gives against the record: every count of Part I's tables, the weights'
digests, the GRPO rollouts' rewards, how far the float telemetry moved, and the wall time.
"""

from __future__ import annotations

from pathlib import Path

from verifiable_grpo.core.config import load_config, provenance, read_json, resolve
from verifiable_grpo.core.runfolder import MODES

RECORDED = "data/recorded/tiny"
# The first recording of the tiny run (one process, one sequence at a time), the yardstick
# of the 3x target: its timings.json as committed then.
FIRST_RECORDING = {"commit": "4e6955d", "path": "data/recorded/tiny/timings.json"}
BRANCHES = ("warmstart", "sft", "grpo", "grpo-g2", "grpo-g8")


def _counts(results: dict) -> dict:
    return {
        policy: {
            measure: {split: [v["correct"], v["responses"]] for split, v in entry[measure].items()}
            for measure in ("greedy_pass_at_1", "per_draw_success")
        }
        for policy, entry in results["policies"].items()
    }


def _largest_relative_change(ours: list[float], theirs: list[float]) -> float:
    return max((abs(a - b) / abs(b) if b else abs(a)) for a, b in zip(ours, theirs))


def _branch(run: Path, recorded: Path, branch: str, mode: str) -> dict:
    ours = read_json(run / "learning" / f"{branch}-{mode}.json")
    theirs = read_json(recorded / "learning" / f"{branch}-{mode}.json")
    entry = {
        "final_digest_equal": ours["final_model_digest"] == theirs["final_model_digest"],
        "final_digest": ours["final_model_digest"],
    }
    if "history" not in ours or "history" not in theirs:  # the record trims resume modes
        return entry
    if branch.startswith("grpo"):
        rewards = [[g["rewards"] for g in h["groups"]] for h in ours["history"]]
        entry["rewards_equal"] = rewards == [
            [g["rewards"] for g in h["groups"]] for h in theirs["history"]
        ]
        entry["response_tokens_equal"] = [h["response_tokens"] for h in ours["history"]] == [
            h["response_tokens"] for h in theirs["history"]
        ]
        entry["largest_relative_change_mean_exact_kl"] = _largest_relative_change(
            [h["mean_exact_kl"] for h in ours["history"]],
            [h["mean_exact_kl"] for h in theirs["history"]],
        )
    else:
        entry["largest_relative_change_loss"] = _largest_relative_change(
            [h["loss"] for h in ours["history"]], [h["loss"] for h in theirs["history"]]
        )
    return entry


def compare_run(run, recorded=RECORDED, profile: str = "tiny") -> dict:
    """The run folder `run` (finished) against the record; nothing is written."""
    run, recorded = Path(run), resolve(recorded)
    timings, recorded_timings = (
        read_json(run / "timings.json"),
        read_json(recorded / "timings.json"),
    )
    if timings["finished_stages"] != timings["all_stages"]:
        raise ValueError(
            f"{run} is not finished ({timings['finished_stages']}/"
            f"{timings['all_stages']} stages): run it to the end first"
        )
    counts = {
        name: (_counts(read_json(run / name)), _counts(read_json(recorded / name)))
        for name in ("results.json", "exercise/results.json")
    }
    config = load_config(profile)
    return {
        "run": str(run),
        "recorded": RECORDED,
        "counts_equal": all(a == b for a, b in counts.values()),
        "counts": {name: pair[0] for name, pair in counts.items()},
        "resume_equal": {b: read_json(run / f"resume-{b}.json")["equal"] for b in BRANCHES},
        "branches": {f"{b}-{m}": _branch(run, recorded, b, m) for b in BRANCHES for m in MODES},
        "threads": {
            "warmstart": config.threads.warmstart,
            "stages": config.threads.stages,
        },
        "timings": timings,
        "recorded_total_seconds": recorded_timings["total_seconds"],
        "speedup_against_record": recorded_timings["total_seconds"] / timings["elapsed_seconds"],
        "run_provenance": read_json(run / "stages" / "report.json")["provenance"],
        "provenance": provenance(config),
    }


def format_comparison(result: dict, first_recorded_seconds: float | None = None) -> str:
    t = result["timings"]
    lines = [
        f"{result['run']} against {result['recorded']}:",
        f"  every count of results.json and exercise/results.json equal: {result['counts_equal']}",
        f"  resume checks equal: {all(result['resume_equal'].values())}",
    ]
    for name, entry in result["branches"].items():
        moved = {k: v for k, v in entry.items() if k.startswith("largest")}
        lines.append(
            f"  {name:22s} weights {'identical' if entry['final_digest_equal'] else 'differ'}"
            + (
                f", rewards {'identical' if entry.get('rewards_equal') else 'differ'}"
                if "rewards_equal" in entry
                else ""
            )
            + "".join(
                f", {k.split('_', 3)[-1]} moved by at most {v:.1e} (relative)"
                for k, v in moved.items()
            )
        )
    lines.append(
        f"  elapsed {t['elapsed_seconds']:.1f} s (stages summed {t['total_seconds']:.1f} s)"
        f" against the record's {result['recorded_total_seconds']:.1f} s: "
        f"{result['speedup_against_record']:.2f}x"
    )
    if first_recorded_seconds:
        lines.append(
            f"  against the first recording's {first_recorded_seconds:.1f} s: "
            f"{first_recorded_seconds / t['elapsed_seconds']:.2f}x"
        )
    for group, seconds in t["groups"].items():
        lines.append(f"    {group:10s} {seconds:8.1f} s (summed over its stages)")
    return "\n".join(lines)


def first_recording() -> dict:
    """The first recording's stage times, read from git (a maintainer's command)."""
    import json
    import subprocess

    from verifiable_grpo.core.config import repo_root

    shown = subprocess.run(
        ["git", "show", f"{FIRST_RECORDING['commit']}:{FIRST_RECORDING['path']}"],
        capture_output=True,
        text=True,
        cwd=repo_root(),
    )
    if shown.returncode != 0:
        raise RuntimeError(
            f"git show {FIRST_RECORDING['commit']}:{FIRST_RECORDING['path']} "
            f"failed (a full clone is needed): {shown.stderr.strip()}"
        )
    timings = json.loads(shown.stdout)
    return {
        **FIRST_RECORDING,
        "total_seconds": timings["total_seconds"],
        "groups": timings["groups"],
    }
