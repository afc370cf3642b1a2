"""Crash checkpoints: the latest complete state of a stage in flight, and aborted evidence.

A branch saves its full state every few updates or iterations into OUT/crash/<stage>/ as
`state-NNNNNN.pt` (uncompressed: fast to write each iteration) and then, once that file
is complete, `state-NNNNNN.json` with its SHA-256, its position and the SHA-256 of every
evidence file written up to that point; the note is then anchored (core.anchors: its own
SHA-256 in crash/<stage>/anchors.json), so that a state edited together with its note is
refused. Only then are older pairs removed, so a kill at any moment leaves at least one
complete, anchored pair. A rerun continues from the newest complete
pair; whatever the stage wrote after it (the half-done iteration's evidence) is moved to
OUT/aborted/<stage>-<time>/ with a note: never deleted, never reused.

Crash checkpoints are not evidence: the stage's marker does not list them and the
pipeline removes the folder once the stage is finished.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone
from pathlib import Path

from verifiable_grpo.core import anchors, files, stamp_checks
from verifiable_grpo.core.faults import fault_point

CRASH_DIR = "crash"
ABORTED_DIR = "aborted"


def crash_folder(out: str | Path, stage: str) -> Path:
    """OUT/crash/<stage>; refused in one line (files.SymlinkInFolderError) when it or
    OUT/crash is a symlink, before a state is written, read or removed through it."""
    folder = Path(out) / CRASH_DIR / stage
    files.refuse_symlinks(out, folder)
    return folder


def save(
    out: str | Path, stage: str, state: dict, position: int, evidence: dict[str, str] | None = None
) -> dict:
    """Write the crash pair for `position` (updates or iterations done), drop older pairs."""
    from verifiable_grpo.core.checkpoint import save_state

    folder = crash_folder(out, stage)
    begin = time.perf_counter()
    stem = f"state-{position:06d}"
    anchors.forget(folder, drop={f"{stem}.json"})  # its pair is written again below
    for old in (folder / f"{stem}.pt", folder / f"{stem}.json"):  # a pair cut short earlier
        if old.exists():
            old.unlink()
    saved = save_state(folder / f"{stem}.pt", state, compress=False)
    fault_point("crash-between-state-and-note")
    note = {
        "stage": stage,
        "position": position,
        "state": f"{stem}.pt",
        "sha256": saved["sha256"],
        "bytes": saved["bytes"],
        "evidence": dict(evidence or {}),
        "saved_at": _now(),
    }
    files.save_json(folder / f"{stem}.json", note)
    anchors.anchor(folder, f"{stem}.json", stamp_checks.stamp_sha256(out))
    for path in folder.iterdir():
        if path.name.startswith("state-") and not path.name.startswith(stem):
            path.unlink()
    anchors.forget(folder, {f"{stem}.json"})
    return {**note, "seconds": time.perf_counter() - begin}


def has_checkpoint(out: str | Path, stage: str) -> bool:
    """Whether a crash note exists (cheap; `latest` says whether it is usable)."""
    folder = crash_folder(out, stage)
    return folder.is_dir() and any(folder.glob("state-*.json"))


def branch_finished(out: str | Path, branch: str, mode: str) -> bool:
    """A branch writes its learning record last and removes its crash folder after it: a
    record without a crash folder means every output of that branch and mode is complete."""
    from verifiable_grpo.core.runfolder import RunFolder, stage_name

    return RunFolder(out).record(branch, mode).is_file() and not has_checkpoint(
        out, stage_name(branch, mode)
    )


def latest(out: str | Path, stage: str) -> tuple[dict, dict] | None:
    """(state, note) of the newest complete, undamaged, anchored pair; None when there is
    none. A note whose state path leaves the crash folder, or whose anchor holds another
    SHA-256 (edited and sealed again), is refused (files.OutsideFolderError,
    files.DamagedFileError), not skipped: no crash writes one. A note without an anchor was
    cut short before it was anchored (or predates anchors): skipped like a damaged pair."""
    from verifiable_grpo.core.checkpoint import load_state

    folder = crash_folder(out, stage)
    if not folder.is_dir():
        return None
    for note_path in sorted(folder.glob("state-*.json"), reverse=True):
        try:
            note = files.read_json(note_path)
            where = files.inside(folder, note["state"], f"{note_path}: state")
            if not anchors.is_anchored(folder, note_path, "crash checkpoint"):
                continue  # cut short before its anchor: as a pair without its note
            state = load_state(where, expected_sha256=note["sha256"])
        except anchors.ResealedError:
            raise  # sealed again after its anchor: refused, never skipped
        except (files.DamagedFileError, FileNotFoundError, KeyError):
            continue  # a damaged newer pair: fall back to an older one if any
        return state, note
    return None


def clear(out: str | Path, stage: str) -> None:
    files.remove_tree(out, crash_folder(out, stage))


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def move_aside(out: str | Path, stage: str, relative_paths, reason: str) -> Path | None:
    """Move files of a half-done stage to OUT/aborted/<stage>-<time>/ with a note."""
    out = Path(out)
    relative_paths = sorted(set(relative_paths))
    if not relative_paths:
        return None
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    target = out / ABORTED_DIR / f"{stage}-{stamp}"
    files.refuse_symlinks(out, out / ABORTED_DIR)
    for rel in relative_paths:
        source = out / rel
        files.refuse_symlinks(out, source)
        if not source.exists():
            continue
        destination = target / rel
        destination.parent.mkdir(parents=True, exist_ok=True)
        source.replace(destination)
        parent = source.parent
        while parent != out and parent.is_dir() and not any(parent.iterdir()):
            parent.rmdir()  # an emptied folder must not look like a half-written one
            parent = parent.parent
    files.save_json(
        target / "NOTE.json",
        {
            "stage": stage,
            "moved_at": _now(),
            "reason": reason,
            "files": relative_paths,
            "note": "evidence of an interrupted stage, kept for inspection; the stage was "
            "continued from its last complete crash checkpoint and never reads these",
        },
    )
    return target
