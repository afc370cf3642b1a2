"""SmallSums: a task inside a small pretrained model's competence band.

GRPO can only amplify what a model sometimes does: a group of G answers carries a learning
signal only when its rewards differ, and with per-draw success p a group is all wrong with
probability (1 - p)^G. SmolLM2-135M-Instruct almost never solves StockArithmetic (five
operands in prose), so nearly every group is silent. On one-step sums and differences of
small numbers it is right a few times in ten: inside its band.

The problems are StockArithmetic problems with one movement: a + b is the stock a after a
delivery of b, a - b the stock a after a withdrawal of b (both movements padded with 0, so
the strict verifier of task/verifier.py scores them unchanged). The answer format is the
task's JSON object {"final_stock": <integer>}. The prompt is the model's own chat template
with two worked examples as earlier turns (a 2-shot prompt): the examples show the format,
never a problem of any split.

Every problem of the family (a, b in 0..20; for a - b, b <= a) appears in at most one split;
the splits are drawn once, from SPLIT_SEED.
"""

from __future__ import annotations

import random

from verifiable_grpo.task.statements import canonical_response, user_message
from verifiable_grpo.task.verifier import compute_final_stock

FAMILY = "SmallSums-v1"
MAXIMUM = 20
SPLIT_SEED = 20261204
# Worked examples shown before every problem (excluded from every split).
SHOTS = (("+", 7, 5), ("-", 16, 9))
SPLIT_SIZES = {"screen": 64, "train": 256, "validation": 96, "test": 200}


def problem_of(op: str, a: int, b: int) -> dict:
    """The StockArithmetic problem that a + b or a - b is."""
    if op == "+":
        return {"initial": a, "deliveries": [b, 0], "withdrawals": [0, 0]}
    if op == "-":
        return {"initial": a, "deliveries": [0, 0], "withdrawals": [b, 0]}
    raise ValueError(f"op must be '+' or '-', got {op!r}")


def statement_of(op: str, a: int, b: int) -> str:
    return f"What is {a} {op} {b}?"


def family() -> list[tuple[str, int, int]]:
    """Every problem of the family, in a fixed order."""
    sums = [("+", a, b) for a in range(MAXIMUM + 1) for b in range(MAXIMUM + 1)]
    differences = [("-", a, b) for a in range(MAXIMUM + 1) for b in range(a + 1)]
    return sums + differences


def example(split: str, index: int, op: str, a: int, b: int) -> dict:
    """A page merged with its label, as task.data.read_examples gives them."""
    problem = problem_of(op, a, b)
    final = compute_final_stock(problem)
    return {
        "document_id": f"ss-{split}-{index:04d}",
        "split": split,
        "population": "SUM" if op == "+" else "DIFF",
        "statement": statement_of(op, a, b),
        "problem": problem,
        "final_stock": final,
        "response": canonical_response(final),
    }


def splits(sizes: dict[str, int] | None = None, seed: int = SPLIT_SEED) -> dict[str, list[dict]]:
    """split -> examples; disjoint, none of them a worked example of the prompt."""
    sizes = dict(SPLIT_SIZES if sizes is None else sizes)
    pool = [p for p in family() if p not in SHOTS]
    if sum(sizes.values()) > len(pool):
        raise ValueError(f"{sum(sizes.values())} problems asked, the family has {len(pool)}")
    random.Random(seed).shuffle(pool)
    out, start = {}, 0
    for split, size in sizes.items():
        out[split] = [example(split, i, *p) for i, p in enumerate(pool[start : start + size])]
        start += size
    return out


def messages(statement: str) -> list[dict[str, str]]:
    """The 2-shot conversation: each worked example as a user turn and its answer, then
    the problem; every user turn carries the task's JSON instruction."""
    turns = []
    for op, a, b in SHOTS:
        answer = compute_final_stock(problem_of(op, a, b))
        turns.append({"role": "user", "content": user_message(statement_of(op, a, b))})
        turns.append({"role": "assistant", "content": canonical_response(answer)})
    return turns + [{"role": "user", "content": user_message(statement)}]
