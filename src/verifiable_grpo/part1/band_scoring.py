"""How the band study scores a policy: greedy and sampled answers on given problems, kept
as compact rows, their success rate, and two policies compared problem by problem. The
band study (band_study.py), its run folder's curve (band_data.py) and the studies built
on it (control_study.py, thinking_arms.py) all score this way."""

from __future__ import annotations

import time

from verifiable_grpo.core.config_schema import Profile
from verifiable_grpo.evaluation import policy_scores
from verifiable_grpo.part1.sweep import paired_modes


def _rows(scored: list[dict]) -> list[list]:
    """[document_id, draw, seed, reward, valid, text] per answer: enough to pair, to split
    failures into format and arithmetic, and to show completions."""
    return [
        [r["document_id"], r["draw"], r["seed"], int(r["reward"]), int(r["valid"]), r["text"]]
        for r in scored
    ]


def score(policy, tokenizer, config: Profile, examples: list[dict], draws: int, seed_base: int):
    """{"greedy": rows, "sample": rows, "seconds"} of a policy on examples."""
    started = time.perf_counter()
    questions = policy_scores.Questions(
        list(enumerate(examples)), draws, seed_base, share_prompts=True
    )
    answers = policy_scores.answer(policy, tokenizer, config, questions)
    scored = policy_scores.score(answers, {e["document_id"]: e for e in examples})
    return {
        **{m: _rows(rows) for m, rows in scored.items()},
        "seconds": time.perf_counter() - started,
    }


def rate(rows: list[list]) -> float:
    return sum(r[3] for r in rows) / len(rows)


def compare(before: dict, after: dict, seed: int) -> dict:
    """After minus before, paired by problem, per mode (bootstrap seeded by `seed`)."""
    return paired_modes(before, after, seed)
