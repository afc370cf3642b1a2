"""The machinery every exercise checker shares: cases, comparisons, known mistakes, a result.

A checker runs hidden cases against the learner's function. Each case knows its inputs (in
words), the expected value (computed in float64 by the package or by hand) and, where a
common mistake gives a recognisable wrong value, that value and a hint. The report names
the failing input, the expected value and what the function returned, then the hint.
Passing cases print nothing but a count, so a report is the same on every CPU.
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
    tolerance: float = 1e-9  # absolute, on every element
    mistakes: dict[str, Any] = field(default_factory=dict)  # hint -> the value that mistake gives
    compare: Callable[[Any, Any, float], str | None] | None = None


@dataclass
class CheckResult:
    """What a checker found: `passed` is True only when every case passed."""

    exercise: str
    cases: int
    failures: list[str]
    attempted: bool = True

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


def compare_numbers(got, expected, tolerance: float) -> str | None:
    """None when `got` has the expected shape and every element lies within `tolerance`."""
    try:
        got_t = _as_tensor(got)
    except (TypeError, ValueError, RuntimeError):
        return f"returned {type(got).__name__}, expected numbers"
    expected_t = _as_tensor(expected)
    if got_t.shape != expected_t.shape:
        return f"shape {tuple(got_t.shape)}, expected {tuple(expected_t.shape)}"
    # Equal values (infinities included) and NaN where NaN is expected agree; every other
    # element must lie within the tolerance (a NaN never does).
    same = (got_t == expected_t) | (got_t.isnan() & expected_t.isnan())
    near = (got_t - expected_t).abs() <= tolerance
    if not (same | near).all():
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


def _matches(got, value, tolerance, compare) -> bool:
    try:
        return compare(got, value, tolerance) is None
    except Exception:  # a mistake that cannot even be compared is not this mistake
        return False


def run_cases(exercise: str, fn: Callable, cases: list[Case], verbose: bool = True) -> CheckResult:
    """Run every case, print one line per failure (input, expected, got, hint), return the result."""
    if not callable(fn):
        raise TypeError(f"{exercise}: pass your function itself (without calling it), got {fn!r}")
    failures = []
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
        hints = [
            hint
            for hint, value in case.mistakes.items()
            if _matches(got, value, case.tolerance, compare)
        ]
        line = f"{case.label}: {problem}"
        failures.append(line + "".join(f"\n    hint: {hint}" for hint in hints))
    result = CheckResult(exercise, len(cases), failures)
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
