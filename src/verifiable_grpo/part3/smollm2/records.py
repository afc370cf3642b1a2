"""Where a lab writes its metrics, and the provenance every recorded lab number carries."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from verifiable_grpo.core import files
from verifiable_grpo.core.config import config_hash, provenance
from verifiable_grpo.models import smollm2 as loader

RECORDED = "data/recorded/part3"


def finished(out, name: str) -> dict | None:
    """The metrics a finished lab wrote into OUT, or None: evidence is never redone."""
    path = Path(out) / f"{name}-metrics.json"
    return files.read_json(path) if path.is_file() else None


def start() -> dict:
    """The wall clock and the provenance when a lab starts (commit and code as they ran)."""
    return {"time": time.time(), "provenance": provenance(None, sys.argv)}


def write(out, name: str, settings: dict, metrics: dict, started: dict, cache=None) -> Path:
    """OUT/<name>-metrics.json: settings, metrics and provenance (command, commit, settings
    SHA-256, package versions, device, wall time, which GGUF file the weights came from)."""
    record = {
        "lab": name,
        "settings": settings,
        **metrics,
        "provenance": {
            **started["provenance"],
            "settings_sha256": config_hash(settings),
            "model": loader.source_record(cache),
            "wall_seconds": round(time.time() - started["time"], 1),
        },
    }
    return files.save_json(Path(out) / f"{name}-metrics.json", record)


def export(out, name: str, dest: str | Path | None = None, recorded_as: str | None = None) -> Path:
    """Copy OUT/<name>-metrics.json (small: numbers, replies, provenance; no weights) to
    data/recorded/part3/<recorded_as or name>-metrics.json, which the chapters read (an
    ablation is recorded under its own name). A different file already there is kept."""
    from verifiable_grpo.core.config import resolve

    source = Path(out) / f"{name}-metrics.json"
    if not source.is_file():
        raise FileNotFoundError(
            f"{source} is missing: run `python -m verifiable_grpo lab {name} --out {out}` first"
        )
    target = resolve(dest or RECORDED) / f"{recorded_as or name}-metrics.json"
    if target.is_file() and target.read_bytes() != source.read_bytes():
        raise FileExistsError(f"{target} holds another recorded run; move it away first")
    target.parent.mkdir(parents=True, exist_ok=True)
    files.write_bytes(target, source.read_bytes(), overwrite=True)
    return target


def load_recorded(name: str) -> dict:
    """A recorded lab's metrics, for the chapters."""
    from verifiable_grpo.core.config import resolve

    path = resolve(RECORDED) / f"{name}-metrics.json"
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} is missing: run `python -m verifiable_grpo lab {name} --export`"
        )
    return files.read_json(path)


# The same commands run earlier on 1 thread (the CLI's default before it became every core),
# kept as evidence that the thread count changes the time and nothing else.
ONE_THREAD = f"{RECORDED}/one-thread"
TIMING = ("training_seconds", "provenance")  # what a thread count may change


def thread_comparison(name: str) -> dict:
    """The recorded run of lab `name` beside its 1-thread run: threads and seconds of each,
    and the fields (other than timings and provenance) in which they differ."""
    from verifiable_grpo.core.config import resolve

    runs = {
        "recorded": load_recorded(name),
        "1 thread": files.read_json(resolve(ONE_THREAD) / f"{name}-metrics.json"),
    }
    fields = set(runs["recorded"]) | set(runs["1 thread"])
    differ = sorted(
        k for k in fields - set(TIMING) if runs["recorded"].get(k) != runs["1 thread"].get(k)
    )
    return {
        "runs": {
            label: {
                "threads": r["provenance"]["cpu_threads"],
                "training_seconds": r.get("training_seconds"),
                "wall_seconds": r["provenance"]["wall_seconds"],
            }
            for label, r in runs.items()
        },
        "differ": differ,
    }
