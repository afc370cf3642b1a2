"""Exercise (chapter 10): the difference a sweep reports for the setting it picked.

Every array holds per-problem success fractions (draws correct / draws): `test` and
`validation` are [settings, problems], `warm_test` is the warm start's [problems] on the test
set. The sweep picks the setting with the highest mean on the test set (select_on_test=True)
or on the validation set (False), then reports that setting's mean test difference to the
warm start. The learner writes fn(test, validation, warm_test, select_on_test) -> float.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from verifiable_grpo.exercises.checking import Case, run_cases

WRONG_SELECTION = (
    "picked the setting on the other split: select_on_test says which split chooses the setting"
)
REPORTED_VALIDATION = "reported the validation difference: the report is always on the test set"
NO_BASELINE = "reported the setting's test mean itself: subtract the warm start's test mean"
LOWEST = "picked the lowest mean: the sweep keeps the best setting"


def reported_difference(test, validation, warm_test, select_on_test: bool) -> float:
    chooser = np.asarray(test if select_on_test else validation, dtype=np.float64)
    pick = int(np.argmax(chooser.mean(axis=1)))
    return float((np.asarray(test, dtype=np.float64)[pick] - np.asarray(warm_test)).mean())


@dataclass(frozen=True)
class Mistake:
    """Where a wrong answer departs from the right one (the defaults: nowhere)."""

    swap: bool = False  # selects on the other split
    report: list | None = None  # reports this split instead of the test set
    baseline: bool = True  # subtracts the warm start's test mean
    best: bool = True  # keeps the best setting


def _variant(test, validation, warm, select_on_test, mistake: Mistake) -> float:
    m = mistake
    chooser = np.asarray(validation if select_on_test == m.swap else test).mean(axis=1)
    pick = int(np.argmax(chooser) if m.best else np.argmin(chooser))
    shown = np.asarray(m.report if m.report is not None else test)[pick]
    return float((shown - (np.asarray(warm) if m.baseline else 0.0)).mean())


def _case(label, test, validation, warm, select_on_test) -> Case:
    want = reported_difference(test, validation, warm, select_on_test)
    mistakes = {
        WRONG_SELECTION: Mistake(swap=True),
        REPORTED_VALIDATION: Mistake(report=validation),
        NO_BASELINE: Mistake(baseline=False),
        LOWEST: Mistake(best=False),
    }
    mistakes = {h: _variant(test, validation, warm, select_on_test, m) for h, m in mistakes.items()}
    return Case(
        f"{label}, select_on_test={select_on_test}",
        lambda fn: float(fn(np.array(test), np.array(validation), np.array(warm), select_on_test)),
        want,
        tolerance=1e-12,
        mistakes={h: v for h, v in mistakes.items() if abs(v - want) > 1e-12},
    )


def cases() -> list[Case]:
    # Two settings, three problems: the test set favours setting 1, validation setting 0.
    test = [[0.25, 0.5, 0.0], [0.75, 0.5, 0.25]]
    validation = [[1.0, 0.75, 0.5], [0.0, 0.25, 0.25]]
    warm = [0.25, 0.25, 0.25]
    rng = np.random.default_rng(7)
    big = [rng.integers(0, 5, size=(6, 40)) / 4 for _ in range(2)]
    big_warm = rng.integers(0, 5, size=40) / 4
    return [
        _case("splits disagree", test, validation, warm, True),
        _case("splits disagree", test, validation, warm, False),
        _case(
            "six settings, forty problems",
            big[0].tolist(),
            big[1].tolist(),
            big_warm.tolist(),
            True,
        ),
        _case(
            "six settings, forty problems",
            big[0].tolist(),
            big[1].tolist(),
            big_warm.tolist(),
            False,
        ),
    ]


def check_reported_difference(fn, verbose: bool = True):
    """Run the hidden cases against fn(test, validation, warm_test, select_on_test) -> float."""
    return run_cases("reported difference", fn, cases(), verbose)
