"""The recorded study: a study folder's evidence, trimmed to what the book needs.

A run folder holds the final weights, the last checkpoint and a manifest whose held-out
trace lists, for each of its 1,000 responses, the problem, the draw, the correctness and
the completion's SHA-256 (about 170 kB of 250 kB). The record keeps each manifest whole
except that trace, which becomes
- `trace_sha256`: the SHA-256 of the full trace (canonical JSON), so a rerun can prove it
  reproduced every completion, and
- `correct`: per mode, one character per response ("1" correct, "0" not) in trace
  order, so item-level comparisons between arms stay possible.
The layout is the study folder's (runs/{regime}/{arm}-seed-{S}/run_manifest.json), so
analysis.load_manifests reads a record exactly as it reads a live study.
"""

from __future__ import annotations

from pathlib import Path

from verifiable_grpo.core import files, preregistration, record_folders
from verifiable_grpo.core.config import canonical_json, provenance, sha256_bytes
from verifiable_grpo.part2 import analysis
from verifiable_grpo.part2 import lock as lock_lib

RECORDED = "data/recorded/part2"
TRIMMED_SCHEMA = "verifiable-grpo-family-run-recorded-v1"
RECORD_KIND = record_folders.RecordKind(
    "family study record",
    frozenset(
        {"runs", "warmstart-heldout.json", "study.json", "analysis.json", "provenance.json"}
        | {preregistration.STAMP_FILE}
    ),
    marker="study.json",
)


def trim_heldout(heldout: dict) -> dict:
    """The held-out result with its trace replaced by a digest and correctness strings."""
    trace = heldout["trace"]
    modes = sorted({t["mode"] for t in trace})
    kept = {k: v for k, v in heldout.items() if k != "trace"}
    kept["trace_sha256"] = sha256_bytes(canonical_json(trace))
    kept["trace_order"] = "problems in evaluation order; per-draw rows problem by problem"
    kept["correct"] = {
        m: "".join("1" if t["correct"] else "0" for t in trace if t["mode"] == m) for m in modes
    }
    return kept


def trim_manifest(manifest: dict) -> dict:
    return {**manifest, "schema": TRIMMED_SCHEMA, "heldout": trim_heldout(manifest["heldout"])}


def export_study(out, dest, lock_file) -> dict:
    """Write the trimmed record of a finished study folder to `dest` (a previous record
    there is replaced whole, by a swap once the new one is written); refuses a study that
    is not complete or was run under another lock, and a destination that is not a record
    folder (core/record_folders), before anything is touched."""
    out = Path(out)
    record_folders.check_destination(dest, RECORD_KIND, sources=[out, lock_file])
    lock, sha = lock_lib.read_lock(lock_file)
    bound = files.read_object(out / "study.json").get("lock_sha256")
    if bound != sha:
        raise ValueError(
            f"{out} was run under lock {str(bound)[:12]}..., not {lock_file} "
            f"({sha[:12]}...): export it with the lock it was run under"
        )
    paths = {
        (r, a, s): out / "runs" / r / f"{a}-seed-{s}" / "run_manifest.json"
        for r in lock["regimes"]
        for a in lock["arms"]
        for s in lock["seeds"]
    }
    missing = [f"{r}/{a}/seed {s}" for (r, a, s), p in paths.items() if not p.is_file()]
    if missing:
        raise ValueError(
            f"{len(missing)} pre-registered runs are not finished (e.g. "
            f"{', '.join(missing[:3])}): finish the study before recording it"
        )
    result = {}

    def write(folder: Path) -> None:
        result.update(_write_record(out, folder, paths, (lock, sha)))

    record_folders.replace_folder(dest, RECORD_KIND, write, sources=[out, lock_file])
    return result


def _write_record(out: Path, dest: Path, paths: dict, locked: tuple) -> dict:
    """The record's files in `dest` (a fresh folder), and the analysis it holds."""
    lock, sha = locked
    for (regime, arm, seed), path in paths.items():
        target = dest / "runs" / regime / f"{arm}-seed-{seed}" / "run_manifest.json"
        files.save_json(target, trim_manifest(files.read_json(path)))
    warm = files.read_json(out / "warmstart-heldout.json")
    files.save_json(
        dest / "warmstart-heldout.json", {**warm, "heldout": trim_heldout(warm["heldout"])}
    )
    files.save_json(dest / "study.json", files.read_json(out / "study.json"))
    stamp = out / preregistration.STAMP_FILE  # the study's start stamp, when it took one
    if stamp.is_file():
        files.save_json(dest / preregistration.STAMP_FILE, files.read_json(stamp))
    result = analysis.analyse(lock, analysis.load_manifests(dest), lock_sha=sha)
    result["warm_start"] = warm["heldout"]["greedy"]["ALL"]
    result["lock_sha256"] = sha
    files.save_json(dest / "analysis.json", result)
    files.save_json(
        dest / "provenance.json", {"exported_from": out.name, "runs": len(paths), **provenance()}
    )
    return result
