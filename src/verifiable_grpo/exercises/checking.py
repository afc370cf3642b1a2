"""The machinery every exercise checker shares: cases, comparisons, known mistakes, a result.

A checker runs hidden cases against the learner's function. Each case knows its inputs (in
words), the expected value (computed in float64 by the package or by hand) and, where a
common mistake gives a recognisable wrong value, that value and a hint. The report names
the failing input, the expected value and what the function returned, then the hint.
Passing cases print nothing but a count, so a report is the same on every CPU.

Which hint a failing case shows is decided by `distance`, scale-aware like float64
rounding itself: the largest |got - value| / max(1, |value|) over the elements. A mistake is
named when the learner's value lies within the case's tolerance of it AND every other
candidate (the expected value, the other mistakes) lies at least MARGIN = 100 tolerances
away; a value between candidates names none, so no hint depends on the last bits.

Measured (scripts/measure_checker_margins.py, table in data/recorded/checker-margins.json;
ATEN_CPU_CAPABILITY default, avx2 and avx512, one and two threads, every seeded mistake a
test makes): a mistaken learner value lies at most 4e-16 from its mistake's value (1.5e-4
tolerances; 0 in the exact checkers), the nearest other candidate at least 2e4 tolerances
away (the advantages without epsilon, 2e-8 from the correct ones; every other mistake
2.5e6 or more). tests/conftest.py fails any test in which a named mistake lies more than
1/100 of its tolerance from the learner's value.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch


@dataclass
class Case:
    """One hidden test: `run(fn)` calls the learner's function and returns what it gave."""

    label: str  # what the case probes, in words
    run: Callable[[Callable], Any]
    expected: Any
    tolerance: float = 1e-9  # on every element, in units of `distance`
    mistakes: dict[str, Any] = field(default_factory=dict)  # hint -> the value that mistake gives
    compare: Callable[[Any, Any, float], str | None] | None = None
    distance: Callable[[Any, Any], float] | None = None  # None: `distance` (numbers)


@dataclass(frozen=True)
class Diagnosis:
    """How one failing value sits among the candidates: `hints` the mistakes it reproduces
    (empty when none is close enough, or none is clear), `own` its distance to them (to the
    nearest candidate when none is named), `nearest_other` the distance to the nearest
    candidate not named (the expected value included)."""

    exercise: str
    label: str
    hints: tuple[str, ...]
    own: float
    nearest_other: float
    tolerance: float


@dataclass
class CheckResult:
    """What a checker found: `passed` is True only when every case passed."""

    exercise: str
    cases: int
    failures: list[str]
    attempted: bool = True
    diagnoses: list[Diagnosis] = field(default_factory=list)  # one per failing case

    @property
    def passed(self) -> bool:
        return self.attempted and not self.failures

    def __bool__(self) -> bool:
        return self.passed

    def __repr__(self) -> str:
        if not self.attempted:
            return f"CheckResult({self.exercise!r}: not attempted, {self.cases} cases)"
        state = "passed" if self.passed else "failed"
        return f"CheckResult({self.exercise!r}: {state}, {self.cases - len(self.failures)}/{self.cases} cases)"


def _as_tensor(value) -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        return value.detach().to(torch.float64)
    return torch.as_tensor(value, dtype=torch.float64)


def show_value(value) -> str:
    """A short, exact-enough rendering of a value for a report line."""
    if isinstance(value, torch.Tensor):
        value = value.detach().tolist()
    if isinstance(value, float):
        return f"{value:.10g}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(show_value(v) for v in value) + "]"
    return repr(value)


def element_gaps(got: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    """|got - value| / max(1, |value|) per element (float64 tensors of one shape): absolute
    below 1 and relative above, as rounding is. Equal values (infinities included) and NaN
    where NaN is expected give 0; any other NaN or infinity gives inf."""
    same = (got == value) | (got.isnan() & value.isnan())
    gap = (got - value).abs() / value.abs().clamp_min(1.0)
    gap = torch.where(gap.isnan(), torch.full_like(gap, math.inf), gap)
    return torch.where(same, torch.zeros_like(gap), gap)


def distance(got, value) -> float:
    """The largest element gap between got and value; inf when got is not numbers or has
    another shape (a value nothing can be near)."""
    try:
        got_t, value_t = _as_tensor(got), _as_tensor(value)
    except (TypeError, ValueError, RuntimeError):
        return math.inf
    if got_t.shape != value_t.shape:
        return math.inf
    return float(element_gaps(got_t, value_t).max()) if got_t.numel() else 0.0


def exact_distance(got, value) -> float:
    """0 when got == value, else inf: for exact answers (integers, booleans)."""
    try:
        return 0.0 if bool(got == value) else math.inf
    except Exception:  # e.g. a tensor of several elements: not the answer
        return math.inf


def compare_numbers(got, expected, tolerance: float) -> str | None:
    """None when `got` has the expected shape and every element lies within `tolerance`
    (as `distance` measures it: absolute below 1, relative above)."""
    try:
        got_t = _as_tensor(got)
    except (TypeError, ValueError, RuntimeError):
        return f"returned {type(got).__name__}, expected numbers"
    expected_t = _as_tensor(expected)
    if got_t.shape != expected_t.shape:
        return f"shape {tuple(got_t.shape)}, expected {tuple(expected_t.shape)}"
    if not (element_gaps(got_t, expected_t) <= tolerance).all():
        return f"expected {show_value(expected_t)}, got {show_value(got_t)}"
    return None


def gradient_of(fn, current: torch.Tensor, *rest) -> torch.Tensor | None:
    """The gradient of sum(fn(current, *rest)) with respect to `current` (a fresh leaf;
    tensors in `rest` are cloned), or None when the learner's result left the graph."""
    leaf = current.clone().requires_grad_(True)
    out = fn(leaf, *(r.clone() if isinstance(r, torch.Tensor) else r for r in rest))
    if not isinstance(out, torch.Tensor) or not out.requires_grad:
        return None
    out.sum().backward()
    return leaf.grad


def gradient_comparison(what: str):
    """A `compare` for Case: a missing gradient names `what` did not reach the graph."""

    def compare(got, expected, tolerance):
        if got is None:
            return f"no gradient reached {what}: keep them in the graph"
        return compare_numbers(got, expected, tolerance)

    return compare


def compare_exact(got, expected, tolerance: float) -> str | None:
    return None if got == expected else f"expected {expected!r}, got {got!r}"


MARGIN = 100  # a named mistake's rivals lie at least this many tolerances away
EXPECTED = ""  # the key of the expected value among the candidates (never a hint)


def diagnose(exercise: str, label: str, distances: dict[str, float], tolerance: float):
    """The Diagnosis of a failing value from its distance to each candidate (EXPECTED and
    one per hint): the hints within `tolerance`, named only when every other candidate
    lies at least MARGIN x tolerance away (more than 0 for exact answers). Checkers call it
    through this module, so scripts/measure_checker_margins.py can record every diagnosis."""
    near = {k for k, d in distances.items() if d <= tolerance and k != EXPECTED}
    others = [d for k, d in distances.items() if k not in near]
    nearest_other = min(others, default=math.inf)
    clear = nearest_other >= MARGIN * tolerance and nearest_other > tolerance
    hints = tuple(k for k in distances if k in near) if near and clear else ()
    own = max((distances[k] for k in hints), default=min(distances.values()))
    return Diagnosis(exercise, label, hints, own, nearest_other, tolerance)


def _distance_to(case: Case, got, value) -> float:
    try:
        return (case.distance or distance)(got, value)
    except Exception:  # a mistake that cannot even be compared is not this mistake
        return math.inf


def run_cases(exercise: str, fn: Callable, cases: list[Case], verbose: bool = True) -> CheckResult:
    """Run every case, print one line per failure (input, expected, got, hint), return the result."""
    if not callable(fn):
        raise TypeError(f"{exercise}: pass your function itself (without calling it), got {fn!r}")
    failures, diagnoses = [], []
    for case in cases:
        compare = case.compare or compare_numbers
        try:
            got = case.run(fn)
        except NotImplementedError:
            result = CheckResult(exercise, len(cases), [], attempted=False)
            if verbose:
                print(
                    f"{exercise}: not attempted yet (the function raises NotImplementedError); "
                    "write it, then run this cell again"
                )
            return result
        except Exception as error:  # the learner's bug, reported, never re-raised
            failures.append(f"{case.label}: raised {type(error).__name__}: {error}")
            continue
        problem = compare(got, case.expected, case.tolerance)
        if problem is None:
            continue
        candidates = {EXPECTED: case.expected, **case.mistakes}
        distances = {key: _distance_to(case, got, value) for key, value in candidates.items()}
        diagnosis = diagnose(exercise, case.label, distances, case.tolerance)
        diagnoses.append(diagnosis)
        line = f"{case.label}: {problem}"
        failures.append(line + "".join(f"\n    hint: {hint}" for hint in diagnosis.hints))
    result = CheckResult(exercise, len(cases), failures, diagnoses=diagnoses)
    if verbose:
        if failures:
            print(f"{exercise}: {len(failures)} of {len(cases)} cases fail")
            for line in failures:
                print("  x " + line)
        else:
            print(f"{exercise}: all {len(cases)} cases pass")
    return result


def close(a: float, b: float, tolerance: float = 1e-12) -> bool:
    return math.isclose(a, b, rel_tol=0, abs_tol=tolerance)
