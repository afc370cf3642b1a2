"""The second way CI runs the notebooks: with other float arithmetic.

The normal pass (pytest.ini collects notebooks/ with nbval) re-executes every chapter with
this machine's usual kernels. Here nbval runs the chapters again in subprocesses whose
arithmetic is deliberately different (tests/perturbed_pass.py): one thread, MKL's
compatible path, and ATen's scalar `default` kernels or its `avx2` kernels. A chapter that
prints a live number with more digits than survive another CPU fails here, on the machine
that committed it, instead of on a reader's.

Each chapter runs once more, not twice: the notebooks alternate between the two settings
in path order (notebooks_for), so each part has chapters under both. Executing every
chapter under both would execute them all a third time, as much again as this whole pass,
for which CI's 30 minutes on 2 cores (about 25 used) have no room; the unit tests, far
cheaper per check, run under both settings (test_tests_portable.py). The normal pass
already covers AVX2 on an AVX2 machine: there every chapter matched its committed outputs
(issue 33's report).
"""

from __future__ import annotations

import configparser
import fnmatch
import os

import pytest

from perturbed_pass import (
    INSIDE,
    ROOT,
    SETTINGS,
    check_setting,
    describe,
    failures,
    junit_cases,
    run_pass,
    skip_unless_available,
)

NOTEBOOKS = ROOT / "notebooks"


def expected_notebooks() -> list[str]:
    """Every .ipynb under notebooks/ outside pytest.ini's norecursedirs, relative to the
    repository, in path order (e.g. "notebooks/part1/01_task_and_verifier.ipynb")."""
    ini = configparser.ConfigParser()
    ini.read(ROOT / "pytest.ini")
    skipped = ini["pytest"]["norecursedirs"].split()
    names = []
    for path in NOTEBOOKS.rglob("*.ipynb"):
        parts = path.relative_to(ROOT).parts
        if not any(fnmatch.fnmatch(part, pattern) for part in parts[:-1] for pattern in skipped):
            names.append("/".join(parts))
    return sorted(names)


def notebooks_for(capability: str) -> list[str]:
    """The chapters perturbed under `capability`: every other one, in path order."""
    index = sorted(SETTINGS).index(capability)
    return expected_notebooks()[index :: len(SETTINGS)]


def test_the_passes_share_the_notebooks_out():
    shares = [notebooks_for(capability) for capability in sorted(SETTINGS)]
    assert sorted(sum(shares, [])) == expected_notebooks()
    for share in shares:  # each setting sees chapters of every part
        assert {path.split("/")[1] for path in share} == {"part1", "part2", "part3"}


@pytest.mark.skipif(bool(os.environ.get(INSIDE)), reason="already inside a perturbed pass")
@pytest.mark.parametrize("capability", sorted(SETTINGS))
def test_notebook_outputs_survive_other_float_arithmetic(capability, tmp_path):
    normal = skip_unless_available(capability)
    junit = tmp_path / "nbval.xml"
    chosen = notebooks_for(capability)
    # Same options as pytest.ini gives the normal pass (it still applies: rootdir, addopts,
    # norecursedirs), but only the chosen notebooks are collected.
    arguments = [
        "--nbval",
        "--nbval-sanitize-with",
        "notebooks/sanitize.cfg",
        "-vv",
        f"--junitxml={junit}",
        *chosen,
    ]
    proc, got = run_pass(capability, arguments)
    log = proc.stdout + proc.stderr
    # The kernels nbval starts inherit the runner's environment, so the runner's probe
    # tells what arithmetic the chapters ran on.
    check_setting(capability, got, normal, log)

    assert junit.is_file(), log[-4000:]
    collected = {c.get("classname") for c in junit_cases(junit)}
    expected = {path.replace("/", ".") for path in chosen}
    assert collected == expected, (
        f"the {capability} pass collected {sorted(collected)}, expected exactly {sorted(expected)}"
    )
    problems = failures(junit)
    assert proc.returncode == 0 and not problems, (
        f"{len(problems)} notebook cell(s) print other outputs under {describe(capability)}; "
        "print live numbers at a precision that survives other kernels, or check them "
        "against a stated tolerance (notebook.significant, Table digits, rounded_prints):\n\n"
        + "\n\n".join(problems)
        + ("" if problems else log[-4000:])
    )
