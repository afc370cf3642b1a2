"""Task families where showing the working could help: problems one step past SmallSums.

SmallSums-v1 (task/small_sums.py) asks for one sum or difference of numbers up to 20: an
answer the model either recalls or not, so a written working has little to add. The
families below each need an intermediate result that a model could write down first:

- CarrySums-v1: a + b with a and b two-digit numbers (10..99) whose ones digits carry
  (e.g. 47 + 38: 7 + 8 = 15, carry 1). Working: the ones, the carry, the tens.
- ThreeSmall-v1: three small operands (1..15), "a + b - c" or "a - b + c", never below 0.
  Working: the first operation's result, then the second.

Every problem is a StockArithmetic problem (the first operand the initial stock, an added
operand a delivery, a subtracted one a withdrawal, each padded with 0), so the strict
verifier of task/verifier.py scores the final answer unchanged. Each family has two worked
examples (SHOTS, shown in every prompt, in no split) and disjoint splits drawn once from
its SPLIT_SEED, as SmallSums-v1's are. The working of an example is computed
(`working`), never typed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from verifiable_grpo.task.statements import canonical_response
from verifiable_grpo.task.verifier import compute_final_stock

SPLIT_SIZES = {"screen": 64, "train": 256, "validation": 100, "test": 200}

# A problem: (first operand, ((op, operand), ...)), ops "+" or "-", applied left to right.
Problem = tuple[int, tuple[tuple[str, int], ...]]


@dataclass(frozen=True)
class Family:
    """A declared family: its name, id prefix, split seed and two worked examples."""

    name: str
    prefix: str
    split_seed: int
    shots: tuple[Problem, Problem]


CARRY_SUMS = Family("CarrySums-v1", "cs", 20261207, ((47, (("+", 38),)), (26, (("+", 59),))))
THREE_SMALL = Family(
    "ThreeSmall-v1", "t3", 20261208, ((7, (("+", 5), ("-", 3))), (14, (("-", 6), ("+", 9))))
)
FAMILIES: dict[str, Family] = {f.name: f for f in (CARRY_SUMS, THREE_SMALL)}


def _carry_sums() -> list[Problem]:
    return [
        (a, (("+", b),)) for a in range(10, 100) for b in range(10, 100) if a % 10 + b % 10 >= 10
    ]


def _three_small() -> list[Problem]:
    operands = range(1, 16)
    plus_minus = [
        (a, (("+", b), ("-", c)))
        for a in operands
        for b in operands
        for c in operands
        if c <= a + b
    ]
    minus_plus = [
        (a, (("-", b), ("+", c))) for a in operands for b in operands for c in operands if b <= a
    ]
    return plus_minus + minus_plus


_MEMBERS = {CARRY_SUMS.name: _carry_sums, THREE_SMALL.name: _three_small}


def family_problems(name: str) -> list[Problem]:
    """Every problem of a family, in a fixed order."""
    if name not in _MEMBERS:
        raise ValueError(f"unknown family {name!r}; declared: {sorted(FAMILIES)}")
    return _MEMBERS[name]()


def stock_problem(problem: Problem) -> dict:
    """The StockArithmetic problem: added operands as deliveries, subtracted as withdrawals."""
    first, steps = problem
    deliveries = [v for op, v in steps if op == "+"]
    withdrawals = [v for op, v in steps if op == "-"]
    if len(steps) > 2 or any(op not in "+-" for op, _ in steps):
        raise ValueError(f"at most two steps of '+' or '-', got {steps!r}")
    return {
        "initial": first,
        "deliveries": deliveries + [0] * (2 - len(deliveries)),
        "withdrawals": withdrawals + [0] * (2 - len(withdrawals)),
    }


def value_of(problem: Problem) -> int:
    first, steps = problem
    total = first
    for op, operand in steps:
        total = total + operand if op == "+" else total - operand
    return total


def statement_of(problem: Problem) -> str:
    first, steps = problem
    return "What is " + " ".join([str(first)] + [f"{op} {v}" for op, v in steps]) + "?"


def _carry_working(a: int, b: int) -> str:
    ones = a % 10 + b % 10
    tens = a // 10 + b // 10 + ones // 10
    return (
        f"Ones: {a % 10} + {b % 10} = {ones}, write {ones % 10}, carry {ones // 10}. "
        f"Tens: {a // 10} + {b // 10} + {ones // 10} = {tens}. So {a} + {b} = {a + b}."
    )


def working(problem: Problem) -> str:
    """The shown working: digit by digit for a two-digit carry sum, step by step otherwise."""
    first, steps = problem
    if len(steps) == 1 and steps[0][0] == "+" and first >= 10 and steps[0][1] >= 10:
        return _carry_working(first, steps[0][1])
    lines, total = [], first
    for op, operand in steps:
        after = total + operand if op == "+" else total - operand
        lines.append(f"{total} {op} {operand} = {after}.")
        total = after
    return " ".join(lines)


def population_of(problem: Problem) -> str:
    return "".join("PLUS" if op == "+" else "MINUS" for op, _ in problem[1]) or "NONE"


def example(family: Family, split: str, index: int, problem: Problem) -> dict:
    """A page merged with its label, in SmallSums-v1's layout, plus the problem's steps."""
    stock = stock_problem(problem)
    final = compute_final_stock(stock)
    if final != value_of(problem):
        raise ValueError(f"{problem!r}: the solver and the statement disagree")
    return {
        "document_id": f"{family.prefix}-{split}-{index:04d}",
        "split": split,
        "population": population_of(problem),
        "statement": statement_of(problem),
        "problem": stock,
        "final_stock": final,
        "response": canonical_response(final),
        "steps": [problem[0], [list(s) for s in problem[1]]],
    }


def splits(name: str, sizes: dict[str, int] | None = None) -> dict[str, list[dict]]:
    """split -> examples of family `name`: disjoint, none of them a worked example, drawn
    once from the family's SPLIT_SEED (the same every call)."""
    members = family_problems(name)  # refuses an unknown name
    family = FAMILIES[name]
    pool = [p for p in members if p not in family.shots]
    sizes = dict(SPLIT_SIZES if sizes is None else sizes)
    if sum(sizes.values()) > len(pool):
        raise ValueError(f"{sum(sizes.values())} problems asked, {name} has {len(pool)}")
    random.Random(family.split_seed).shuffle(pool)
    out, start = {}, 0
    for split, size in sizes.items():
        out[split] = [
            example(family, split, i, p) for i, p in enumerate(pool[start : start + size])
        ]
        start += size
    return out
