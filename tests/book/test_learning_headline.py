"""The three-sentence headline the README, the intro and Part I's landing page open with is
tied to the records it quotes: the band study (SmolLM2-135M-Instruct on small sums) and the
tiny base's lift on fresh problems. Re-recording either run without updating the sentences
fails here, naming the numbers to change."""

from __future__ import annotations

import re

import pytest

from verifiable_grpo.core.config import repo_root
from verifiable_grpo.part1 import band_study, fresh_test

MARK = "**What GRPO taught, in three sentences.**"


def _expected() -> list[float]:
    band = band_study.recorded("band")["paired"]["sample"]
    fresh = fresh_test.recorded()["paired"]["sample"]
    values = [band["first_rate"], band["second_rate"], fresh["first_rate"], fresh["second_rate"]]
    return [round(v, 3) for v in values]


def headline(page: str) -> str:
    text = (repo_root() / page).read_text()
    assert MARK in text, f"{page} lost its '{MARK}' paragraph"
    return text.split(MARK, 1)[1].split("\n\n", 1)[0]


@pytest.mark.parametrize("page", ["book/intro.md", "README.md", "book/part1.md"])
def test_the_headline_quotes_the_records(page):
    quoted = [float(x) for x in re.findall(r"\b0\.\d{3}\b", headline(page))]
    assert quoted == _expected(), (
        f"update {page}: it quotes {quoted}, the records say {_expected()}"
    )


@pytest.mark.parametrize("page", ["book/intro.md", "README.md", "book/part1.md"])
def test_the_headline_is_three_sentences_with_its_metric_defined(page):
    paragraph = headline(page)
    sentences = [s for s in re.split(r"(?<=[.!?])\s+(?=[A-Z])", " ".join(paragraph.split())) if s]
    assert len(sentences) == 3, sentences
    assert "SmolLM2-135M-Instruct" in paragraph and "2.7M-parameter" in paragraph
    text = (repo_root() / page).read_text()
    assert "[^per-draw]" in paragraph and "[^per-draw]:" in text  # the metric, defined
