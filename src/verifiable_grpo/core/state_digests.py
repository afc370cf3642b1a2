"""States reduced to their digests: a run folder that keeps the evidence, not the bytes.

A full training state of a 0.5B model (weights and both AdamW moments) is about 5.5 GB
gzipped, and each trained branch writes three (continuous, interrupt, resume). Under
`storage.keep_states: digest` a branch's states stay only until its resume comparison has
read them. The comparison's report (verdict and both states' SHA-256) is written first; then
each state gets a record OUT/digests/{branch}-{mode}.json (file, SHA-256, bytes) and only
after that record exists is the state removed. A kill between the two leaves both, and the
next run finishes the removal.

The stage markers that list a state keep listing it. A marker's file that is missing counts
as present only when a digest record names the same SHA-256 and size: the bytes were
checked when they were loaded for the comparison (or, for the interrupt state, when the
resume loaded it) and hashed once more when reduced. Anything else missing is still refused.
"""

from __future__ import annotations

from pathlib import Path

from verifiable_grpo.core.config_schema import Profile
from verifiable_grpo.core.files import read_json, save_json, sha256_file
from verifiable_grpo.core.runfolder import MODES, RunFolder

DIGEST_DIR = "digests"
_STATE_SUFFIX = ".pt.gz"


def keeps_digests_only(config: Profile) -> bool:
    return config.storage.keep_states == "digest"


def digest_record(out, rel: str) -> Path:
    """Where the digest record of the state at `rel` (relative to OUT) lives."""
    return Path(out) / DIGEST_DIR / (Path(rel).name.removesuffix(_STATE_SUFFIX) + ".json")


def digest_patterns(branch: str) -> list[str]:
    """What reducing a branch writes (claimed by its verify stage)."""
    return [f"{DIGEST_DIR}/{branch}-{mode}.json" for mode in MODES]


def vouched_for(out, rel: str, entry: dict) -> bool:
    """Whether the missing file `rel` is a state reduced to a record of the same SHA-256 and
    size as `entry` (a stage marker's listing)."""
    if not (rel.startswith("checkpoints/") and rel.endswith(_STATE_SUFFIX)):
        return False
    if (Path(out) / rel).exists():
        return False
    path = digest_record(out, rel)
    if not path.is_file():
        return False
    record = read_json(path)
    return (
        record.get("file") == rel
        and record.get("sha256") == entry["sha256"]
        and record.get("bytes") == entry["bytes"]
    )


def reduce_branch_states(out, branch: str) -> list[dict]:
    """Replace each of the branch's states by its digest record; returns the records."""
    out, folder = Path(out), RunFolder(out)
    records = []
    for mode in MODES:
        path = folder.state(branch, mode)
        rel = path.relative_to(out).as_posix()
        target = digest_record(out, rel)
        if target.is_file():  # reduced by a run cut short before removal
            record = read_json(target)
        elif path.is_file():
            record = {
                "file": rel,
                "sha256": sha256_file(path),
                "bytes": path.stat().st_size,
                "recorded_sha256": folder.recorded_state_sha256(branch, mode),
                "why": "storage.keep_states is digest: the state was removed after the "
                f"resume comparison of {branch} (resume-{branch}.json)",
            }
            if record["sha256"] != record["recorded_sha256"]:
                raise ValueError(
                    f"{path}: its SHA-256 differs from its learning record's; "
                    "the state was changed after it was written"
                )
            save_json(target, record)
        else:
            raise FileNotFoundError(
                f"cannot reduce {path}: neither the state nor its digest record exists"
            )
        if path.is_file():
            path.unlink()
        records.append(record)
    return records


def verify_branch(config: Profile, out, branch: str) -> dict:
    """The resume comparison of a branch; under keep_states digest its states are then
    reduced. A report written by a run cut short while reducing is kept, not redone."""
    from verifiable_grpo.core.checkpoint import verify_resume

    report_path = RunFolder(out).resume_check(branch)
    digest = keeps_digests_only(config)
    report = (
        read_json(report_path) if digest and report_path.is_file() else verify_resume(out, branch)
    )
    if digest:
        reduce_branch_states(out, branch)
    return report


def reduction_reuse(config: Profile, branch: str):
    """A verify stage's `reuse`: under keep_states digest, a finished comparison (its report
    is written atomically) and the records next to it are kept by the rerun."""
    report = f"resume-{branch}.json"

    def reuse(_out, rels: list[str]) -> set[str]:
        return set(rels) if keeps_digests_only(config) and report in rels else set()

    return reuse
