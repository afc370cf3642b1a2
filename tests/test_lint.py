"""The code passes the linter configured in pyproject.toml ([tool.ruff.lint]) and is
shaped by its formatter ([tool.ruff.format]).

CI installs ruff from requirements.txt; a machine without it skips this test and says so.
To see and fix the findings yourself: `ruff check src tests` (`--fix` for the safe ones);
`ruff format src tests` reshapes the code."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _ruff() -> list[str] | None:
    """The ruff command: the one installed next to this Python, else one on PATH."""
    beside = Path(sys.executable).with_name("ruff")
    if beside.is_file():
        return [str(beside)]
    found = shutil.which("ruff")
    return [found] if found else None


def test_ruff_finds_nothing_in_src_and_tests():
    ruff = _ruff()
    if ruff is None:
        pytest.skip(
            "ruff is not installed here (pip install -r requirements.txt installs it; "
            "CI runs this check)"
        )
    result = subprocess.run(
        [*ruff, "check", "--no-cache", "--output-format", "concise", "src", "tests"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]


def test_ruff_format_would_change_nothing():
    ruff = _ruff()
    if ruff is None:
        pytest.skip(
            "ruff is not installed here (pip install -r requirements.txt installs it; "
            "CI runs this check)"
        )
    result = subprocess.run(
        [*ruff, "format", "--check", "--no-cache", "src", "tests"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, (
        "run `ruff format src tests`:\n" + result.stdout[-6000:] + result.stderr[-2000:]
    )
