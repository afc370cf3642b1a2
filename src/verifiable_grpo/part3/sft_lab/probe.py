"""Lab 1's plain-text probe: two families asked as a bare few-shot text, no chat format.

Each query follows three solved lines; decoding is greedy for at most 4 new tokens, and the
prediction is the first word the model writes. The majority baseline is the score of always
giving the most frequent expected answer, the bar a PASS/FAIL family has to clear.
"""

from __future__ import annotations

import random
from collections import Counter

from verifiable_grpo.part3.smollm2.evaluation import greedy_ids

PROBE_ITEMS, PROBE_SEED, PROBE_NEW_TOKENS = 50, 19, 4


def _sum_line(rng: random.Random) -> tuple[str, str]:
    first = rng.randint(10, 99)
    second = rng.randint(10, 99)
    return f"{first} + {second} =", str(first + second)


def _limit_line(rng: random.Random) -> tuple[str, str]:
    alarm = rng.randint(65, 105)
    measured = alarm + rng.randint(-30, 30)
    return f"alarm {alarm}, measured {measured} ->", "FAIL" if measured > alarm else "PASS"


# family -> (three solved lines, the query maker); the lines follow the query's own layout
PROBES = {
    "addition": ("23 + 58 = 81\n64 + 19 = 83\n39 + 45 = 84\n", _sum_line),
    "limit": (
        "alarm 90, measured 84 -> PASS\nalarm 75, measured 93 -> FAIL\n"
        "alarm 100, measured 100 -> PASS\n",
        _limit_line,
    ),
}
SHOTS = {family: shots for family, (shots, _) in PROBES.items()}


def probe_items(family: str, n: int = PROBE_ITEMS, seed: int = PROBE_SEED) -> list[tuple[str, str]]:
    """`n` (query line, expected answer) pairs of `family`, drawn with `seed`."""
    if family not in PROBES:
        raise ValueError(f"the plain probe covers {', '.join(PROBES)}, not {family!r}")
    make, rng = PROBES[family][1], random.Random(seed)
    return [make(rng) for _ in range(n)]


def first_word(text: str) -> str:
    """The first whitespace-separated word of the first non-empty line ('' if none)."""
    lines = text.strip().splitlines()
    words = lines[0].split() if lines else []
    return words[0] if words else ""


def plain_probe(model, tokenizer, family: str) -> dict:
    """Exact rate, majority baseline and the first ten predictions for `family`."""
    items = probe_items(family)
    texts = [SHOTS[family] + query for query, _ in items]
    generated = greedy_ids(model, tokenizer, texts, max_new_tokens=PROBE_NEW_TOKENS, eos_id=0)
    predictions = [first_word(tokenizer.decode(ids, skip_special_tokens=True)) for ids in generated]
    answers = [answer for _, answer in items]
    exact = sum(p == a for p, a in zip(predictions, answers)) / len(items)
    majority = max(Counter(answers).values()) / len(items)
    return {"exact": exact, "majority_baseline": majority, "predictions": predictions[:10]}
