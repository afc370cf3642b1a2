"""Helpers (not fixtures) shared by test modules: import them with `from shared_helpers import`."""

from __future__ import annotations

from verifiable_grpo.core.config import repo_root

TINY_BASE = repo_root() / "data" / "tiny-base"


def tiny_base_has_weights() -> bool:
    return (TINY_BASE / "config.json").is_file()


def run_cli(args, env_extra=None, timeout=900):
    """`python -m verifiable_grpo ARGS` in a fresh process (progress bars off)."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, TQDM_DISABLE="1", **(env_extra or {}))
    return subprocess.run(
        [sys.executable, "-m", "verifiable_grpo", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=str(repo_root()),
    )


def comparable_result(result: dict) -> dict:
    """The result without wall times and provenance (they differ between any two runs)."""
    import json

    def strip(value):
        if isinstance(value, dict):
            return {
                k: strip(v)
                for k, v in value.items()
                if "seconds" not in k and k not in ("provenance", "timings")
            }
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return json.loads(json.dumps(strip(result)))


def no_longer_over(allowed: dict[str, set[str]], found: dict[str, dict]) -> set[str]:
    """The "path: name" rows of an allow-list that its check no longer finds over the limit:
    each must leave the list, so that it only shrinks."""
    return {
        f"{rel}: {name}"
        for rel, names in allowed.items()
        for name in names
        if name not in found.get(rel, {})
    }
