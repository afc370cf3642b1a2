"""Lab 1's plain-text probe: can the model do two of the families without any chat format?

Three worked lines, then the query line; greedy, at most 4 new tokens; the prediction is
the first word of the first generated line. A majority baseline says what always giving
the most common answer would score (the limit family is unbalanced).
"""
from __future__ import annotations

import random
from collections import Counter

from verifiable_grpo.part3.lab1_eval import greedy_ids

SHOTS = {
    "addition": "12 + 35 = 47\n21 + 44 = 65\n53 + 16 = 69\n",
    "limit": "Limit 80, reading 72: PASS\nLimit 70, reading 85: FAIL\nLimit 60, reading 58: PASS\n",
}


def probe_items(family: str, n: int = 50, seed: int = 19) -> list[tuple[str, str]]:
    """(query line, expected answer) pairs for `family`."""
    rng, items = random.Random(seed), []
    for _ in range(n):
        if family == "addition":
            a, b = rng.randint(10, 99), rng.randint(10, 99)
            items.append((f"{a} + {b} =", str(a + b)))
        elif family == "limit":
            limit, reading = rng.randint(60, 100), rng.randint(40, 120)
            items.append((f"Limit {limit}, reading {reading}:", "PASS" if reading <= limit else "FAIL"))
        else:
            raise ValueError(f"the plain probe covers {', '.join(SHOTS)}, not {family!r}")
    return items


def first_word(text: str) -> str:
    line = text.strip().split("\n")[0].split()
    return line[0] if line else ""


def plain_probe(model, tokenizer, family: str) -> dict:
    items = probe_items(family)
    generated = greedy_ids(model, tokenizer, [SHOTS[family] + query for query, _ in items],
                           max_new_tokens=4, eos_id=0)
    predictions = [first_word(tokenizer.decode(ids, skip_special_tokens=True)) for ids in generated]
    exact = sum(p == answer for p, (_, answer) in zip(predictions, items)) / len(items)
    majority = Counter(answer for _, answer in items).most_common(1)[0][1] / len(items)
    return {"exact": exact, "majority_baseline": majority, "predictions": predictions[:10]}
