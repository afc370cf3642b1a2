"""The tests exercise the checkout they live in: with a venv shared between clones (an
editable install points at one tree), the package must still come from this tree's src/."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import verifiable_grpo

SRC = Path(__file__).resolve().parents[1] / "src"


def test_the_package_under_test_is_this_checkouts():
    assert Path(verifiable_grpo.__file__).resolve().is_relative_to(SRC), verifiable_grpo.__file__


def test_a_subprocess_imports_this_checkouts_package_too():
    out = subprocess.run(
        [sys.executable, "-c", "import verifiable_grpo; print(verifiable_grpo.__file__)"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd="/",
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert Path(out.stdout.strip()).resolve().is_relative_to(SRC), out.stdout
