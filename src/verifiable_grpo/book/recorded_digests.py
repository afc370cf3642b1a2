"""Every recorded number tied to a digest: the SHA-256 of each file the book reads its
recorded numbers from, checked by a test.

The chapters print, table and plot numbers read from data/recorded/ (run summaries,
family-run telemetry, per-item scores, lab metrics) and from the tiny base's build record
(data/tiny-base/BUILD.json; its weights are checked against it on load). A provenance.json
lists the digests of some of them; this list covers all of them, those provenance files
included, so that an edit to any recorded file fails tests/book/test_recorded_digests.py.

A new or deliberately re-recorded file is added with
`python -m verifiable_grpo.book.recorded_digests --write`: the change then shows in the
diff of DIGESTS.json, next to the change of the file itself.
"""

from __future__ import annotations

import sys
from pathlib import Path

from verifiable_grpo.core import files
from verifiable_grpo.core.config import repo_root

LIST = "data/recorded/DIGESTS.json"
SCHEMA = "verifiable-grpo-recorded-digests-v1"
COVERED = ("data/recorded", "data/tiny-base/BUILD.json")


def recorded_files(root: Path) -> list[str]:
    """Every file the list covers, relative to `root` (the list itself left out)."""
    found = []
    for covered in COVERED:
        path = root / covered
        found += [covered] if path.is_file() else []
        found += [p.relative_to(root).as_posix() for p in path.rglob("*") if p.is_file()]
    return sorted(set(found) - {LIST})


def current(root: Path | None = None) -> dict[str, str]:
    root = root or repo_root()
    return {rel: files.sha256_file(root / rel) for rel in recorded_files(root)}


def problems(root: Path | None = None) -> list[str]:
    """One line per recorded file that is missing, unlisted, or differs from its digest,
    and per provenance.json `files` entry that does not match its file."""
    root = root or repo_root()
    listed = files.read_json(root / LIST)["files"]
    now = current(root)
    found = [f"{rel}: listed in {LIST} but missing" for rel in sorted(set(listed) - set(now))]
    found += [f"{rel}: not listed in {LIST}" for rel in sorted(set(now) - set(listed))]
    found += [
        f"{rel}: its SHA-256 differs from {LIST} (edited since it was recorded)"
        for rel in sorted(set(now) & set(listed))
        if now[rel] != listed[rel]
    ]
    for provenance in sorted((root / "data/recorded").rglob("provenance.json")):
        for rel, sha in sorted(files.read_json(provenance).get("files", {}).items()):
            path = provenance.parent / rel
            if not path.is_file() or files.sha256_file(path) != sha:
                found.append(f"{path.relative_to(root)}: differs from {provenance.name}")
    return found


def main(argv: list[str]) -> int:
    if argv != ["--write"]:
        print(f"usage: python -m verifiable_grpo.book.recorded_digests --write ({LIST})")
        return 2
    files.save_json(
        repo_root() / LIST,
        {"schema": SCHEMA, "covers": list(COVERED), "files": current()},
        overwrite=True,
    )
    print(f"wrote {LIST}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
