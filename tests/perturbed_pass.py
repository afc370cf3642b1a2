"""What CI's second passes share: other float arithmetic, proved to have taken effect.

A perturbed pass runs tests (or notebooks) again in a subprocess with one thread (other
reduction splits), MKL's compatible code path (other matmul blocking) and one of ATen's
kernel sets: `default` (scalar code, another summation order than any vector unit) or
`avx2` (the vector kernels of a CPU without AVX-512). The subprocess prints what it really
got before anything else (PROBE), and `check_setting` refuses a pass that ran on other
arithmetic than it claims.
"""

from __future__ import annotations

import ast
import difflib
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
COMMON = {"OMP_NUM_THREADS": "1", "MKL_CBWR": "COMPATIBLE"}
# ATEN_CPU_CAPABILITY -> what torch.backends.cpu.get_cpu_capability() then reports.
SETTINGS = {"default": "DEFAULT", "avx2": "AVX2"}
# Set in the subprocess: a perturbed pass never starts another one.
INSIDE = "VERIFIABLE_GRPO_PERTURBED_PASS"

# Printed by a process before anything else: its threads and kernels, and the bits of a
# matmul, a sum and a softmax whose last bits depend on them (the softmax's float32 exp
# differs between AVX2 and AVX-512 kernels, the sum between vector and scalar code).
PROBE = """
import json, torch
torch.manual_seed(0)
a, b = torch.randn(64, 300), torch.randn(300, 50)
print(json.dumps({"threads": torch.get_num_threads(),
                  "capability": torch.backends.cpu.get_cpu_capability(),
                  "bits": [(a @ b).double().sum().item().hex(), torch.randn(1000).sum().item().hex(),
                           torch.softmax(a, -1).double().sum().item().hex()]}))
"""
# The perturbed subprocess: the probe, then pytest with the given arguments.
RUNNER = (
    PROBE
    + """
import sys, pytest
sys.stdout.flush()
sys.exit(pytest.main(sys.argv[1:]))
"""
)


def describe(capability: str) -> str:
    return " ".join(f"{k}={v}" for k, v in environment(capability).items())


def environment(capability: str) -> dict:
    """The variables a pass under `capability` (a key of SETTINGS) sets."""
    return {**COMMON, "ATEN_CPU_CAPABILITY": capability}


def normal_environment() -> dict:
    return {k: v for k, v in os.environ.items() if k not in environment("default")}


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


def skip_unless_available(capability: str) -> dict:
    """The normal probe; skips an avx2 pass on a CPU whose torch has no vector kernels (it
    would silently run the default kernels twice)."""
    normal = run_probe(normal_environment())
    if capability != "default" and normal["capability"] == "DEFAULT":
        pytest.skip(f"this CPU runs ATen's default kernels only: no {capability} pass")
    return normal


def run_pass(capability: str, arguments: list[str]) -> tuple[subprocess.CompletedProcess, dict]:
    """RUNNER with `arguments` under the setting; returns the process and what it probed."""
    env = {**normal_environment(), **environment(capability), INSIDE: "1"}
    command = [sys.executable, "-c", RUNNER, "-p", "no:cacheprovider", *arguments]
    proc = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=3000)
    first = proc.stdout.splitlines()[0] if proc.stdout else ""
    return proc, (json.loads(first) if first.startswith("{") else {"first line": first})


def check_setting(capability: str, got: dict, normal: dict, log: str) -> None:
    """The pass ran on the arithmetic it claims: one thread, the kernels asked for, and bits
    that differ from another setting's. The default pass must differ from the normal run
    (any CPU with vector kernels); the avx2 pass from the default one (on an AVX2-only CPU
    the avx2 pass may equal the normal run, one thread aside: still the path to prove)."""
    assert got.get("threads") == 1, f"OMP_NUM_THREADS=1 not applied: {got}\n{log[-2000:]}"
    assert got.get("capability") == SETTINGS[capability], (
        f"ATEN_CPU_CAPABILITY={capability} not applied: {got}\n{log[-2000:]}"
    )
    other = normal
    if capability != "default":
        other = run_probe({**normal_environment(), **environment("default")})
    assert got["bits"] != other["bits"], (
        f"the {capability} pass gives the same bits as {other['capability']} ({other}): "
        "it would test nothing new"
    )


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
    """One entry per failing or erroring test or cell: its name, the words that differ (a
    notebook cell), and the start of the message."""
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


def junit_cases(junit: Path) -> list:
    return list(ElementTree.parse(junit).getroot().iter("testcase"))
