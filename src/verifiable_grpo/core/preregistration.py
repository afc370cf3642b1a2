"""A recorded run proves its pre-registration: it stamps its commit when it STARTS.

Reading the commit when a run ends bounds only its end: a declaration committed while the
run was going would look as if it came first. So a recorded run takes a start stamp before
any compute: the commit it runs, whether the tree was clean, and the UTC start time. A
declaration is code in the repository, so "declared before the run" means: committed, and
the tree clean, when the run starts. A run on a dirty tree is refused in one line unless
the user asks for an exploratory run, which is labelled so in every record it writes.

A run that resumes keeps its first stamp (stored in its folder) and must resume on the
same commit: other code would make the evidence a mixture. The stored stamp is believed
only after core.stamp_checks (its form, git, and the stamp digest every seal in the folder
was anchored with): an edited, replaced, deleted or symlinked stamp is refused.
"""

from __future__ import annotations

import datetime
import subprocess
from pathlib import Path

from verifiable_grpo.core import files, stamp_checks
from verifiable_grpo.core.config import ConfigError, git_commit, repo_root

STAMP_FILE = stamp_checks.STAMP_FILE


def tree_changes(root: Path | None = None) -> list[str] | None:
    """The paths git reports as changed or untracked (ignored files excluded); None when
    git cannot tell (no repository, no git)."""
    try:
        out = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=normal"],
            cwd=root or repo_root(),
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    return [line[3:] for line in out.stdout.splitlines() if line.strip()]


def start_stamp(exploratory: bool, root: Path | None = None) -> dict:
    """{"git_commit", "clean_tree", "started_at", "exploratory"}; ConfigError when the tree
    is dirty (or not a repository) and the run is not exploratory."""
    changes = tree_changes(root)
    commit = git_commit(root)
    clean = changes == [] and commit is not None
    if not clean and not exploratory:
        shown = "not a git checkout" if changes is None else ", ".join(changes[:3])
        more = f" and {len(changes) - 3} more" if changes and len(changes) > 3 else ""
        raise ConfigError(
            [
                f"a recorded run starts on a clean, committed tree ({shown}{more}): commit the "
                "declaration first, or pass --exploratory to label the run as exploratory"
            ]
        )
    return {
        "git_commit": commit,
        "clean_tree": clean,
        "started_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "exploratory": bool(exploratory),
    }


def stamp_folder(
    folder: Path, exploratory: bool, root: Path | None = None, now: dict | None = None
) -> dict:
    """The folder's start stamp: written at its first start, checked at every later one
    (stamp_checks: its form, git, the anchors of the seals written under it; then the same
    commit and the same exploratory label); ConfigError otherwise. `now`: the stamp a
    command already took with start_stamp, to refuse a dirty tree before it made the folder."""
    folder = Path(folder)
    path = folder / STAMP_FILE
    now = now or start_stamp(exploratory, root)
    if not path.is_symlink() and not path.exists():
        stamp_checks.check_anchors(folder, None)  # a deleted stamp is not written again
        folder.mkdir(parents=True, exist_ok=True)
        files.save_json(path, now)
        return now
    first = stamp_checks.checked_stamp(folder, root)
    if first.get("exploratory") != now["exploratory"]:
        label = "exploratory" if first.get("exploratory") else "recorded"
        raise ConfigError(
            [f"{folder}: this run started as {label}; continue it the same way or use a new --out"]
        )
    if first.get("git_commit") != now["git_commit"] and not now["exploratory"]:
        raise ConfigError(
            [
                f"{folder}: this run started at commit {str(first.get('git_commit'))[:12]}, "
                f"the tree is at {str(now['git_commit'])[:12]}: resume it on its own commit "
                "or use a new --out"
            ]
        )
    return first


def vouched_stamp_sha256(folder: Path, root: Path | None = None) -> str | None:
    """The SHA-256 of FOLDER's stamp when this process runs under it: the stamp passes
    stamp_checks and the run is exploratory, or the tree is clean at the stamped commit.
    None otherwise (no stamp, or a recorded stamp on another tree): what a run made outside
    its study records, so that a recorded study never adopts it."""
    path = Path(folder) / STAMP_FILE
    if not path.is_symlink() and not path.exists():
        return None
    stamp = stamp_checks.checked_stamp(Path(folder), root)
    if not stamp["exploratory"]:
        if tree_changes(root) != [] or git_commit(root) != stamp["git_commit"]:
            return None
    return files.sha256_file(path)


def label(name: str, stamp: dict | None) -> str:
    """A run's displayed name: exploratory runs say so wherever they appear."""
    return f"{name} (exploratory)" if stamp and stamp.get("exploratory") else name
