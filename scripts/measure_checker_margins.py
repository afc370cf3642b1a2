"""Measure how clearly each exercise checker names each seeded mistake, on several kernels.

For every kernel setting (ATEN_CPU_CAPABILITY default / avx2 / avx512 x OMP_NUM_THREADS 1 / 2)
this runs, in a fresh process, the tests that feed the checkers mistaken learner functions
(tests/exercises and the checker tests of Parts II and III), records every diagnosis
(checking.diagnose: the distance of the learner's value to the mistake it names, and to the
nearest other candidate), and for the GRPO loop also the distance of a correct learner loop
and of one keeping rewards in float32 to the correct trace. It prints one row per checker
and mistake: the largest own distance and the smallest nearest-other distance over all
cases and settings, and with --write stores them in data/recorded/checker-margins.json.

    PYTHONPATH=src nice -n 15 python scripts/measure_checker_margins.py [--write]
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "data" / "recorded" / "checker-margins.json"
SETTINGS = [(cap, threads) for cap in ("default", "avx2", "avx512") for threads in (1, 2)]
TESTS = [  # every test that hands a checker a mistaken learner function
    "tests/exercises/test_checkers.py",
    "tests/exercises/test_grpo_loop.py",
    "tests/part2/test_newer_objectives.py::test_the_cispo_checker_passes_a_solution_and_names_a_missing_stop_gradient",
    "tests/training/test_kl_gradients.py::test_exercise_checker_accepts_the_correction_and_names_the_plain_k3_mistake",
    "tests/training/test_mismatch.py::test_exercise_checker_accepts_the_rule_and_names_a_truncation",
    "tests/part3/test_sft_data.py::test_packing_mask_checker_passes_the_answer_and_names_the_naive_mistake",
    "tests/part2/test_card_cost.py::test_the_kv_cache_exercise_accepts_the_formula_and_names_the_usual_mistakes",
]


def one_setting() -> None:
    """In the child: run the tests with every diagnosis recorded; print one JSON line."""
    import pytest
    import torch

    from verifiable_grpo.exercises import checking

    records = []

    class Recorder:
        @pytest.fixture(autouse=True)
        def record(self, monkeypatch):
            inner = checking.diagnose  # conftest's margin check, already in place

            def recording(*args, **kwargs):
                found = inner(*args, **kwargs)
                for hint in found.hints:
                    records.append(
                        [found.exercise, hint, found.tolerance, found.own, found.nearest_other]
                    )
                return found

            monkeypatch.setattr(checking, "diagnose", recording)

    code = pytest.main(
        ["-q", "-p", "no:nbval", "-p", "no:cacheprovider", "-o", "addopts=", *TESTS],
        plugins=[Recorder()],
    )
    sys.path.insert(0, str(ROOT / "tests" / "exercises"))
    from test_grpo_loop import learner_loop

    from verifiable_grpo.exercises import grpo_loop

    passing = {
        name: grpo_loop.trace_distance(
            grpo_loop.run_loop(learner_loop(**kw)), grpo_loop.reference_trace()
        )
        for name, kw in (
            ("correct loop", {}),
            ("float32 rewards", {"rewards_dtype": torch.float32}),
        )
    }
    print(
        "RESULT "
        + json.dumps(
            {
                "capability": torch.backends.cpu.get_cpu_capability(),
                "threads": torch.get_num_threads(),
                "tests_exit_code": int(code),
                "diagnoses": records,
                "loop_passing_distances": passing,
            }
        )
    )


def measure() -> list[dict]:
    runs = []
    for cap, threads in SETTINGS:
        env = {**os.environ, "ATEN_CPU_CAPABILITY": cap, "OMP_NUM_THREADS": str(threads)}
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
        proc = subprocess.run(
            [sys.executable, __file__, "--one"], env=env, cwd=ROOT, capture_output=True, text=True
        )
        lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
        if not lines:
            sys.exit(f"{cap} x {threads}: no result\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
        runs.append(json.loads(lines[-1][len("RESULT ") :]))
        run = runs[-1]
        count, code = len(run["diagnoses"]), run["tests_exit_code"]
        print(f"{cap} x {threads}: {run['capability']}, {count} diagnoses, tests exit {code}")
    return runs


def _ratio(distance: float, tolerance: float) -> float:
    if tolerance:
        return distance / tolerance
    return 0.0 if distance == 0 else float("inf")


def table(runs: list[dict]) -> list[dict]:
    """One row per checker and mistake: the worst own distance and the nearest other
    candidate over every case and setting, each also in units of the case's tolerance."""
    rows = {}
    for run in runs:
        for exercise, hint, tolerance, own, nearest in run["diagnoses"]:
            row = rows.setdefault(
                (exercise, hint),
                {
                    "checker": exercise,
                    "mistake": hint,
                    "own_max": 0.0,
                    "own_in_tolerances_max": 0.0,
                    "nearest_other_min": float("inf"),
                    "nearest_other_in_tolerances_min": float("inf"),
                },
            )
            row["own_max"] = max(row["own_max"], own)
            row["own_in_tolerances_max"] = max(row["own_in_tolerances_max"], _ratio(own, tolerance))
            row["nearest_other_min"] = min(row["nearest_other_min"], nearest)
            row["nearest_other_in_tolerances_min"] = min(
                row["nearest_other_in_tolerances_min"], _ratio(nearest, tolerance)
            )
    return sorted(rows.values(), key=lambda r: (r["checker"], r["mistake"]))


def seeded_mistakes() -> set[tuple[str, str]]:
    """(checker, hint) for every mistake any checker seeds, read from the checkers' cases."""
    import importlib

    from verifiable_grpo.exercises import grpo_loop

    def stub(*args, **kwargs):
        raise NotImplementedError

    found = {("GRPO loop", hint) for hint in grpo_loop.MISTAKES.values()}
    for path in sorted((ROOT / "src" / "verifiable_grpo" / "exercises").glob("*.py")):
        module = importlib.import_module(f"verifiable_grpo.exercises.{path.stem}")
        checks = [getattr(module, n) for n in dir(module) if n.startswith("check_")]
        if hasattr(module, "cases") and len(checks) == 1:
            name = checks[0](stub, verbose=False).exercise  # a stub: "not attempted"
            found |= {(name, hint) for case in module.cases() for hint in case.mistakes}
    return found


def cpu_model() -> str:
    for line in (
        Path("/proc/cpuinfo").read_text().splitlines() if Path("/proc/cpuinfo").exists() else []
    ):
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.machine()


def finite(value):
    """JSON has no infinity: "inf" where a distance is infinite (another shape)."""
    if isinstance(value, float) and value == float("inf"):
        return "inf"
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [finite(v) for v in value]
    return value


def main() -> None:
    if "--one" in sys.argv:
        one_setting()
        return
    runs = measure()
    rows = table(runs)
    header = ("checker", "mistake", "own max", "own/tol", "nearest", "nearest/tol")
    print("\n{:24s} {:44s} {:>9s} {:>9s} {:>9s} {:>11s}".format(*header))
    for r in rows:
        print(
            f"{r['checker'][:24]:24s} {r['mistake'][:44]:44s} {r['own_max']:9.2e} "
            f"{r['own_in_tolerances_max']:9.2e} {r['nearest_other_min']:9.2e} "
            f"{r['nearest_other_in_tolerances_min']:11.3g}"
        )
    untested = sorted(seeded_mistakes() - {(r["checker"], r["mistake"]) for r in rows})
    print(f"seeded mistakes no test names: {len(untested)}")
    for checker, hint in untested:
        print(f"  {checker}: {hint[:70]}")
    passing = {
        key: max(run["loop_passing_distances"][key] for run in runs)
        for key in runs[0]["loop_passing_distances"]
    }
    print("GRPO loop, distance to the correct trace (largest over settings):", passing)
    if "--write" in sys.argv:
        record = {
            "what": "per checker and seeded mistake: the largest distance of a mistaken learner "
            "value to the mistake's value (own_max) and the smallest distance to any other "
            "candidate (nearest_other_min), over every case and setting, also in units of the "
            "case's tolerance; distance = checking.distance (largest |got - value| / "
            "max(1, |value|)); inf: another shape or not numbers",
            "command": "PYTHONPATH=src nice -n 15 python scripts/measure_checker_margins.py --write",
            "machine": f"{cpu_model()}, {os.cpu_count()} CPUs",
            "settings": [
                {
                    "ATEN_CPU_CAPABILITY": cap,
                    "OMP_NUM_THREADS": t,
                    "capability": run["capability"],
                    "threads": run["threads"],
                    "tests_exit_code": run["tests_exit_code"],
                }
                for (cap, t), run in zip(SETTINGS, runs)
            ],
            "rows": rows,
            "seeded_mistakes_no_test_names": [list(pair) for pair in untested],
            "grpo_loop_passing_distances_max": passing,
        }
        OUT.write_text(json.dumps(finite(record), indent=1) + "\n")
        print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
