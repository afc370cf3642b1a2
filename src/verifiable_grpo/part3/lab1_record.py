"""Where a lab writes its metrics, and the provenance every recorded lab number carries."""
from __future__ import annotations

import sys
import time
from pathlib import Path

from verifiable_grpo.core import files
from verifiable_grpo.core.config import config_hash, provenance
from verifiable_grpo.part3 import lab1_model

RECORDED = "data/recorded/part3"


def finished(out, name: str) -> dict | None:
    """The metrics a finished lab wrote into OUT, or None: evidence is never redone."""
    path = Path(out) / f"{name}-metrics.json"
    return files.read_json(path) if path.is_file() else None


def write(out, name: str, settings: dict, metrics: dict, started: float, cache=None) -> Path:
    """OUT/<name>-metrics.json: settings, metrics and provenance (command, commit, settings
    SHA-256, package versions, device, wall time, which GGUF file the weights came from)."""
    record = {"lab": name, "settings": settings, **metrics,
              "provenance": {**provenance(None, sys.argv), "settings_sha256": config_hash(settings),
                             "model": lab1_model.source_record(cache),
                             "wall_seconds": round(time.time() - started, 1)}}
    return files.save_json(Path(out) / f"{name}-metrics.json", record)
