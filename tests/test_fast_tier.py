"""The fast tier, `pytest -m "not slow"`: its lists name what exists, and it keeps every
test module's quick tests (a module leaves the tier whole only with a reason)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from slow_tests import SLOW_FIXTURES, SLOW_MODULES, SLOW_TESTS

TESTS = Path(__file__).resolve().parent


def all_test_modules() -> list[str]:
    return sorted(p.relative_to(TESTS).as_posix() for p in TESTS.rglob("test_*.py"))


def functions(module: str) -> set[str]:
    """Every function defined in a test module, at any depth (tests, fixtures, helpers)."""
    tree = ast.parse((TESTS / module).read_text())
    return {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}


def test_the_lists_name_what_exists():
    gone = [m for m in SLOW_MODULES if not (TESTS / m).is_file()]
    for name in SLOW_TESTS:
        module, test = name.split("::")
        if not (TESTS / module).is_file() or test not in functions(module):
            gone.append(name)
    defined = set().union(
        *(functions(p.relative_to(TESTS).as_posix()) for p in TESTS.rglob("*.py"))
    )
    gone += [f for f in SLOW_FIXTURES if f not in defined]
    assert gone == [], "tests/slow_tests.py names what is gone: update it"
    assert all(reason.strip() for reason in [*SLOW_FIXTURES.values(), *SLOW_MODULES.values()])
    assert all(reason.strip() for reason in SLOW_TESTS.values())


def test_every_module_keeps_its_quick_tests_in_the_fast_tier():
    """Collected with the tier's own marker expression, in another process (the rule
    lives in conftest.py's collection hook)."""
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "not slow"]
        + ["-p", "no:nbval", "-o", "addopts=", "-p", "no:cacheprovider", str(TESTS)],
        cwd=TESTS.parent,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert collected.returncode == 0, collected.stdout[-3000:] + collected.stderr[-3000:]
    fast = {line.split("::")[0].removeprefix("tests/") for line in collected.stdout.splitlines()}
    without = set(all_test_modules()) - fast - set(SLOW_MODULES)
    assert without == set(), (
        "these modules have no test left in the fast tier: give them a quick test, or "
        "list them in SLOW_MODULES (tests/slow_tests.py) with the reason"
    )
