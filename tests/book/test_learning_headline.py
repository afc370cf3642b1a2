"""Where GRPO learned and where it did not: the sentence the intro, the README and Part I's
landing page quote is tied to the recorded runs (fixed prompts, ours and TRL's, the held-out
lift study, the SmolLM2 candidate, and the registry's objectives), so re-recording a run
without updating the sentence fails here."""

from __future__ import annotations

import re

import pytest

from verifiable_grpo.core.config import repo_root
from verifiable_grpo.part1 import fixed_prompt_objectives, fixed_prompts, lift_study

MARK = "**Where GRPO learned, and where it did not.**"


def _expected() -> list[float]:
    runs = fixed_prompts.recorded()
    ours, trl = (fixed_prompts.summary(runs[k]) for k in ("ours", "trl"))
    study = lift_study.recorded()["summary"]
    first = next(c for c in study["candidates"] if c["name"] == study["selected"])
    warm = study["warm_start"]
    values = [
        ours["trained_before"],
        ours["trained_after"],
        trl["trained_before"],
        trl["trained_after"],
        ours["validation_before"],
        ours["validation_after"],
        warm["test_greedy"],
        first["test_greedy"],
        warm["test_sample"],
        first["test_per_draw"],
    ]
    own = lift_study.recorded_own_warm_start()["summaries"][0]
    values += [own["warm_start"]["test_sample"], own["candidates"][0]["test_per_draw"]]
    objectives = fixed_prompt_objectives.recorded()["runs"]
    after = [
        fixed_prompts.summary(objectives[n])["trained_after"]
        for n in fixed_prompt_objectives.OBJECTIVES_RUN
    ]
    values += [min(after), max(after)]
    return [round(v, 3) for v in values]


@pytest.mark.parametrize("page", ["book/intro.md", "README.md", "book/part1.md"])
def test_the_learning_sentence_quotes_the_records(page):
    text = (repo_root() / page).read_text()
    assert MARK in text, f"{page} lost its '{MARK}' paragraph"
    paragraph = text.split(MARK, 1)[1].split("\n\n", 1)[0]
    quoted = [float(x) for x in re.findall(r"\b0\.\d{3}\b", paragraph)]
    assert quoted == _expected(), (
        f"update {page}: it quotes {quoted}, the records say {_expected()}"
    )
