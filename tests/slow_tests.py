"""Which tests the fast tier leaves to CI: `pytest -m "not slow"` before a commit.

conftest.py marks a test `slow` when it is a notebook (nbval executes a whole chapter),
uses a fixture of SLOW_FIXTURES (a run in another process, a built book, a training run
shared by a module), lives in a module of SLOW_MODULES, or is named in SLOW_TESTS. CI
runs everything, slow or not; the fast tier keeps every module's quick unit tests
(tests/test_fast_tier.py checks that no module loses all of them without a reason here).

Entries were chosen from `--durations` of a niced run on a shared 2-core machine: a test
(setup included) that took more than about 4 s there is slow. Give a new entry its reason.
"""

from __future__ import annotations

# fixture -> why every test that uses it is slow
SLOW_FIXTURES = {
    "smoke_reference": "a whole `run --config smoke` in its own process",
    "built_book": "builds the Jupyter Book",
}

# module (relative to tests/) -> why every test in it is slow
SLOW_MODULES = {
    "test_notebooks_portable.py": "executes every chapter again under other float arithmetic",
    "book/test_chapters_on_qwen_standin.py": "executes four chapters on a qwen-shaped stand-in",
    "test_how_to_extend_recipes.py": "performs two recipes in a copy of the repository",
    "part1/test_crash_recovery.py": "every test reads runs killed and resumed in other processes",
}

# module::test (without parameters: every case) -> why it is slow
SLOW_TESTS = {
    "test_fast_tier.py::test_every_module_keeps_its_quick_tests_in_the_fast_tier": (
        "collects the whole suite in another process"
    ),
    "book/test_colab.py::test_chapter_one_runs_on_a_simulated_colab": (
        "a fresh virtual environment, then chapter 1 in it"
    ),
    "test_tests_portable.py::test_float_sensitive_tests_pass_with_other_float_arithmetic": (
        "runs every float-sensitive test again in a subprocess"
    ),
}
