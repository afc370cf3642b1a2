"""The introduction's one-sentence result quotes the recorded run: re-recording the run
without updating the sentence fails here, naming the number to change."""

from __future__ import annotations

import re

from verifiable_grpo.core.config import read_json, repo_root


def _headline() -> str:
    text = (repo_root() / "book" / "intro.md").read_text()
    match = re.search(r"\*\*The result in one sentence\*\*(.+?)\n\n", text, re.S)
    assert match, "book/intro.md lost its '**The result in one sentence**' paragraph"
    return " ".join(match.group(1).split())


def test_headline_numbers_match_the_recorded_results():
    policies = read_json(repo_root() / "data" / "recorded" / "tiny" / "results.json")["policies"]
    sentence = _headline()
    quoted = [float(x) for x in re.findall(r"\b0\.\d{3}\b", sentence)]
    expected = [
        policies[p][metric]["ALL"]["success_rate"]
        for metric, names in (
            ("greedy_pass_at_1", ("sft", "warmstart", "grpo")),
            ("per_draw_success", ("warmstart", "sft", "grpo")),
        )
        for p in names
    ]
    assert quoted == [round(v, 3) for v in expected], (
        f"update the headline in book/intro.md: it quotes {quoted}, the record says "
        f"{[round(v, 3) for v in expected]} (greedy sft, warmstart, grpo; per-draw warmstart, sft, grpo)"
    )
