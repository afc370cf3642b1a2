"""The second way CI runs the notebooks: with other float arithmetic.

The normal pass (pytest.ini collects notebooks/ with nbval) re-executes every chapter with
this machine's usual kernels. Here the same nbval run goes through a subprocess whose
arithmetic is deliberately different: one thread (other reduction splits), no vectorised
ATen kernels (other summation order) and MKL's compatible code path (other matmul
blocking). A chapter that prints a live number with more digits than survive another CPU
fails here, on the machine that committed it, instead of on a reader's.
"""

from __future__ import annotations

import ast
import configparser
import difflib
import fnmatch
import html
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
PERTURBED = {"OMP_NUM_THREADS": "1", "ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE"}
# Set in the subprocess: the notebooks' pass must never collect this file again.
INSIDE = "VERIFIABLE_GRPO_PERTURBED_PASS"

# Printed by a process before anything else: what arithmetic it really got, and the bits of
# a small matmul and sum whose value depends on that arithmetic.
PROBE = """
import json, torch
torch.manual_seed(0)
a, b = torch.randn(64, 300), torch.randn(300, 50)
print(json.dumps({"threads": torch.get_num_threads(),
                  "capability": torch.backends.cpu.get_cpu_capability(),
                  "bits": [(a @ b).double().sum().item().hex(), torch.randn(1000).sum().item().hex()]}))
"""
# The perturbed subprocess: the probe, then pytest with nbval on notebooks/ only.
RUNNER = (
    PROBE
    + """
import sys, pytest
sys.stdout.flush()
sys.exit(pytest.main(sys.argv[1:]))
"""
)


def expected_notebooks() -> set[str]:
    """junit class names of the notebooks nbval should collect: every .ipynb under
    notebooks/ outside pytest.ini's norecursedirs (e.g. "notebooks.01_task_and_verifier.ipynb")."""
    ini = configparser.ConfigParser()
    ini.read(ROOT / "pytest.ini")
    skipped = ini["pytest"]["norecursedirs"].split()
    names = set()
    for path in NOTEBOOKS.rglob("*.ipynb"):
        parts = path.relative_to(ROOT).parts
        if not any(fnmatch.fnmatch(part, pattern) for part in parts[:-1] for pattern in skipped):
            names.add(".".join(parts))
    return names


def run_probe(env: dict) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.splitlines()[0])


def differing_tokens(message: str) -> str:
    """From nbval's "assert reference_output == test_output" message, the words that differ
    (HTML tags dropped), e.g. "-1.1536 -> -1.1535"; empty when the message has no such pair."""
    found = re.search(r"reference_output == test_output failed:\s*\n\s*(.+)", message)
    if not found:
        return ""
    pair = found.group(1)
    for split in re.finditer(r"(?<=['\"]) == (?=['\"])", pair):
        try:
            committed = ast.literal_eval(pair[: split.start()])
            here = ast.literal_eval(pair[split.end() :])
        except (ValueError, SyntaxError):
            continue
        words = [html.unescape(re.sub(r"<[^>]+>", " ", text)).split() for text in (committed, here)]
        changes = [
            f"{' '.join(words[0][a:b])} -> {' '.join(words[1][c:d])}"
            for op, a, b, c, d in difflib.SequenceMatcher(
                None, *words, autojunk=False
            ).get_opcodes()
            if op != "equal"
        ]
        return "committed -> this run: " + "; ".join(changes)
    return ""


def failures(junit: Path) -> list[str]:
    """One entry per failing or erroring cell: its name, the words that differ, and the start
    of nbval's message (the cell's input and the mismatching output)."""
    ansi = re.compile(r"(?:\x1b|#x1B)\[[0-9;]*m")  # junit XML escapes the ESC character
    found = []
    for case in ElementTree.parse(junit).getroot().iter("testcase"):
        for problem in list(case.findall("failure")) + list(case.findall("error")):
            text = ansi.sub("", problem.text or problem.get("message") or "").strip()
            summary = differing_tokens(text)
            found.append(
                f"--- {case.get('classname')} {case.get('name')}\n"
                + (f"{summary}\n" if summary else "")
                + text[:2500]
            )
    return found


@pytest.mark.skipif(bool(os.environ.get(INSIDE)), reason="already inside the perturbed pass")
def test_notebook_outputs_survive_other_float_arithmetic(tmp_path):
    normal_env = {k: v for k, v in os.environ.items() if k not in PERTURBED}
    env = {**normal_env, **PERTURBED, INSIDE: "1"}
    normal = run_probe(normal_env)

    junit = tmp_path / "nbval.xml"
    # Same options as pytest.ini gives the normal pass (it still applies: rootdir, addopts,
    # norecursedirs), but only notebooks/ is collected, so tests/ cannot recurse.
    command = [
        sys.executable,
        "-c",
        RUNNER,
        "-p",
        "no:cacheprovider",
        "--nbval",
        "--nbval-sanitize-with",
        "notebooks/sanitize.cfg",
        "-vv",
        f"--junitxml={junit}",
        "notebooks/",
    ]
    proc = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=3000)
    log = proc.stdout + proc.stderr
    first = proc.stdout.splitlines()[0] if proc.stdout else ""
    perturbed = json.loads(first) if first.startswith("{") else {}

    # The perturbation must have taken effect (the kernels nbval starts inherit this
    # process's environment), or this pass would test nothing new.
    assert perturbed.get("threads") == 1, f"OMP_NUM_THREADS=1 not applied: {first!r}\n{log[-2000:]}"
    assert perturbed.get("capability") == "DEFAULT", (
        f"ATEN_CPU_CAPABILITY=default not applied: {first!r}"
    )
    assert perturbed["bits"] != normal["bits"], (
        f"the perturbed arithmetic gives the same bits as the normal one on this machine "
        f"({normal}); nothing would be tested"
    )

    assert junit.is_file(), log[-4000:]
    cases = list(ElementTree.parse(junit).getroot().iter("testcase"))
    collected = {c.get("classname") for c in cases}
    expected = expected_notebooks()
    assert collected == expected, (
        f"the perturbed pass collected {sorted(collected)}, expected exactly the notebooks "
        f"{sorted(expected)} (no tests/, nothing under norecursedirs)"
    )
    problems = failures(junit)
    assert proc.returncode == 0 and not problems, (
        f"{len(problems)} notebook cell(s) print other outputs under "
        f"{' '.join(f'{k}={v}' for k, v in PERTURBED.items())}; print live numbers at a "
        "precision that survives other kernels, or check them against a stated tolerance "
        "(notebook.significant, Table digits, rounded_prints):\n\n"
        + "\n\n".join(problems)
        + ("" if problems else log[-4000:])
    )
