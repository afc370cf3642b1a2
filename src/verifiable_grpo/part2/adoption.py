"""A recorded study adopts only the runs made under its own start stamp.

`family study` skips a finished run and continues one in flight. A run made by a plain
`family run` (on a dirty tree, say) took no stamp: adopting it would put a run nobody
pre-registered under the study's clean stamp. Each run anchors its checkpoints with the
SHA-256 of the stamp it ran under (core.anchors; None when it ran outside one), so before
a recorded study runs anything it checks every run folder that holds a manifest or a
checkpoint ledger; one made under another stamp, or none, is refused in one line. An
exploratory study claims no pre-registration, and adopts what it finds.
"""

from __future__ import annotations

from pathlib import Path

from verifiable_grpo.core import anchors, stamp_checks
from verifiable_grpo.core.config import ConfigError


def _run_folders(out: Path) -> list[Path]:
    runs = out / "runs"
    if not runs.is_dir():
        return []
    return sorted(p for regime in runs.iterdir() if regime.is_dir() for p in regime.iterdir())


def refuse_unstamped_runs(out, stamp: dict) -> None:
    """ConfigError naming the first run folder under OUT not made under OUT's stamp (a
    recorded stamp only; `stamp` is the one stamp_folder returned)."""
    if stamp.get("exploratory"):
        return
    out = Path(out)
    mine = stamp_checks.stamp_sha256(out)
    for folder in _run_folders(out):
        checkpoints = folder / "checkpoints"
        anchored = anchors.has_ledger(checkpoints)
        if not anchored and not (folder / "run_manifest.json").is_file():
            continue  # nothing written yet (or only a checkpoint cut short)
        theirs = anchors.stamp_of(checkpoints) if anchored else None
        if theirs != mine:
            why = "without a start stamp" if theirs is None else "under another start stamp"
            raise ConfigError(
                [
                    f"{folder}: this run was made {why} (by a `family run` outside the study, "
                    "or on a tree not clean at the stamped commit); a recorded study adopts "
                    "only its own runs: move the folder aside or use a new --out"
                ]
            )
