"""TRL's checkpoint folders, sealed when written and verified before a resume reads them.

TRL's Trainer writes RUN/checkpoints/checkpoint-N (adapter or weights, optimizer.pt,
scheduler.pt, rng_state.pth, trainer_state.json) with no digest. After it has written
the folder, our callback (trl/trainer.TelemetryCheckpoint) adds the run's
telemetry and then seals the folder (core.folder_digests: every file's SHA-256, written
last). A rerun resumes only from the newest sealed checkpoint, after checking every file
against the seal and loading each torch file once with weights_only=True (tensors and
plain data only; memory-mapped, so this reads little): a flipped byte, a swapped file or
a pickled object is refused in one line naming the file, before TRL reads anything.

The seal is itself anchored (core.anchors: its SHA-256 in RUN/checkpoints/anchors.json,
with the study stamp's), so a tensor changed and sealed again with `seal()` is refused.

A checkpoint folder without a seal, or whose seal has no anchor, was cut short by a crash
(or written before seals or anchors existed): it is moved to RUN/aborted/ (never deleted,
never reused) and the run continues from the newest anchored one, whose steps are then
redone exactly.
"""

from __future__ import annotations

from pathlib import Path

from verifiable_grpo.core import anchors, crash, folder_digests

DIGESTS = "checkpoint-digests.json"
TORCH_SUFFIXES = (".pt", ".pth")  # what Trainer reads with torch.load on a resume


def step_of(checkpoint: Path) -> int:
    return int(checkpoint.name.split("-")[1])


def checkpoints(run: Path) -> list[Path]:
    """The run's checkpoint-N folders, by step."""
    found = [
        p
        for p in (Path(run) / "checkpoints").glob("checkpoint-*")
        if p.name.split("-")[1].isdigit()
    ]
    return sorted(found, key=step_of)


def seal(checkpoint: str | Path) -> Path:
    return folder_digests.seal(
        checkpoint, DIGESTS, why="written by TRL's Trainer; sealed after its telemetry"
    )


def anchor(checkpoint: str | Path, stamp_sha256: str | None = None) -> None:
    """Digest the checkpoint's seal into the run's checkpoints/anchors.json (TRL has
    already removed the older checkpoints, whose entries go)."""
    checkpoint = Path(checkpoint)
    ledger = checkpoint.parent
    kept = {f"{p.name}/{DIGESTS}" for p in checkpoints(ledger.parent)}
    anchors.forget(ledger, keep=kept)
    anchors.anchor(ledger, checkpoint / DIGESTS, stamp_sha256)


def is_anchored(checkpoint: Path) -> bool:
    """A sealed checkpoint whose seal the ledger holds; DamagedFileError when it holds
    another SHA-256 (sealed again after it was anchored)."""
    return folder_digests.is_sealed(checkpoint, DIGESTS) and anchors.is_anchored(
        checkpoint.parent, checkpoint / DIGESTS, "TRL checkpoint"
    )


def set_aside_unsealed(run: Path) -> list[Path]:
    """Move every unsealed or unanchored checkpoint folder to RUN/aborted/ (a crash cut its
    save short); a seal rewritten after it was anchored is refused (DamagedFileError)."""
    moved = []
    for checkpoint in checkpoints(run):
        if is_anchored(checkpoint):
            continue
        rels = [p.relative_to(run).as_posix() for p in checkpoint.rglob("*") if not p.is_dir()]
        target = crash.move_aside(
            run,
            checkpoint.name,
            rels,
            "a TRL checkpoint without its seal or its anchor (the save was cut short, or "
            "it predates seals and anchors): not resumed from",
        )
        if checkpoint.is_dir() and not any(checkpoint.iterdir()):
            checkpoint.rmdir()
        moved.append(target or checkpoint)
    return moved


def probe_torch_files(checkpoint: Path) -> None:
    """Load each torch file of the checkpoint as TRL will (weights_only=True, with the numpy
    types transformers allows), so that a pickled object is refused here in one line."""
    from transformers.trainer_pt_utils import safe_globals

    from verifiable_grpo.core.checkpoint import safe_torch_load

    for path in sorted(checkpoint.iterdir()):
        if path.suffix in TORCH_SUFFIXES and path.is_file():
            with safe_globals():
                safe_torch_load(path, path)


def newest_verified(run: str | Path, main: bool = True) -> Path | None:
    """The newest sealed checkpoint, checked file by file (main process only: the others
    read what it checked); unsealed ones are first set aside. None when there is none."""
    run = Path(run)
    if main:
        set_aside_unsealed(run)
    sealed = [p for p in checkpoints(run) if folder_digests.is_sealed(p, DIGESTS)]
    sealed = [p for p in sealed if not main or is_anchored(p)]
    if not sealed:
        return None
    newest = sealed[-1]
    if main:
        folder_digests.verify(newest, DIGESTS, "TRL checkpoint")
        probe_torch_files(newest)
    return newest
