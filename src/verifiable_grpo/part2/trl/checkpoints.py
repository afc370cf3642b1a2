"""TRL's checkpoint folders, sealed when written and verified before a resume reads them.

TRL's Trainer writes RUN/checkpoints/checkpoint-N (adapter or weights, optimizer.pt,
scheduler.pt, rng_state.pth, trainer_state.json) with no digest. After it has written
the folder, our callback (trl/trainer.TelemetryCheckpoint) adds the run's
telemetry and then seals the folder (core.folder_digests: every file's SHA-256, written
last). A rerun resumes only from the newest sealed checkpoint, after checking every file
against the seal and loading each torch file once with weights_only=True (tensors and
plain data only; memory-mapped, so this reads little): a flipped byte, a swapped file or
a pickled object is refused in one line naming the file, before TRL reads anything.

A checkpoint folder without a seal was cut short by a crash (or written before seals
existed): it is moved to RUN/aborted/ (never deleted, never reused) and the run continues
from the newest sealed one, whose steps are then redone exactly.
"""

from __future__ import annotations

from pathlib import Path

from verifiable_grpo.core import crash, folder_digests

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


def set_aside_unsealed(run: Path) -> list[Path]:
    """Move every unsealed checkpoint folder to RUN/aborted/ (a crash cut its save short)."""
    moved = []
    for checkpoint in checkpoints(run):
        if folder_digests.is_sealed(checkpoint, DIGESTS):
            continue
        rels = [p.relative_to(run).as_posix() for p in checkpoint.rglob("*") if not p.is_dir()]
        target = crash.move_aside(
            run,
            checkpoint.name,
            rels,
            "a TRL checkpoint without its seal (the save was cut short, or it predates "
            "seals): not resumed from",
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
    if not sealed:
        return None
    newest = sealed[-1]
    if main:
        folder_digests.verify(newest, DIGESTS, "TRL checkpoint")
        probe_torch_files(newest)
    return newest
