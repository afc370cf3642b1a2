"""Chapter I.12's sentences quote the band study's record: every number in its 'What it
shows' paragraph and in the exercise's worked solution comes from the record."""

from __future__ import annotations

import re

from verifiable_grpo.book import band_plots
from verifiable_grpo.core.config import repo_root
from verifiable_grpo.part1 import band_study

CHAPTER = repo_root() / "notebooks" / "part1" / "12_pretrained_model.py"


def _paragraph(start: str, end: str = "\n#\n") -> str:
    text = CHAPTER.read_text()
    assert start in text, f"chapter 12 lost its '{start}' paragraph"
    block = text.split(start, 1)[1].split(end, 1)[0]
    return " ".join(line.lstrip("# ") for line in block.splitlines())


def test_what_it_shows_quotes_the_record():
    band = band_study.recorded("band")
    primary, greedy = band["paired"]["sample"], band["paired"]["greedy"]
    before, after = band["failures"]["before"], band["failures"]["after"]
    expected = [
        f"{primary['second_rate']:.3f}",
        f"{primary['first_rate']:.3f}",
        f"{primary['difference']:+.3f}",
        f"[{primary['low']:+.3f}, {primary['high']:+.3f}]",
        f"{greedy['second_rate']:.3f}",
        f"{greedy['first_rate']:.3f}",
        f"from {before['format']} to {after['format']} of {len(band['before']['sample']):,}",
        f"from {before['arithmetic']:,} to",
        f"{after['arithmetic']}",
    ]
    paragraph = _paragraph("**What it shows.**")
    missing = [e for e in expected if e not in paragraph]
    assert not missing, f"chapter 12 should quote {missing} (from data/recorded/band/band.json)"
    # near misses: their share of the wrong numbers rose
    rows = {r[0]: r[1:] for r in band_plots.wrong_numbers(band)}
    near = rows["within 2 of the answer"]
    assert near[1] / after["arithmetic"] > near[0] / before["arithmetic"]


def test_the_worked_solution_quotes_the_screen():
    screen = band_study.recorded("screen")
    solution = _paragraph("{admonition} Worked solution", end="\n# %%")
    assert f"{screen['signal_share_g8']:.2f}" in solution
    assert f"{screen['per_draw']:.3f}" in solution
    pooled = band_plots.signal_share(screen["per_draw"], 8)
    assert f"{pooled:.2f}" in solution
    assert re.search(r"half of the promised signal", solution)
    assert screen["signal_share_g8"] < pooled / 2 + 0.01


def test_the_kl_sentence_does_not_stop_below_the_panels_peak():
    kl = [h["mean_exact_kl"] for h in band_study.recorded("band")["history"]]
    paragraph = _paragraph("**What it does not show.**")
    quoted = [float(n) for n in re.findall(r"\b0\.\d+", paragraph)]
    assert f"{max(kl):.2f}" in paragraph, "the KL sentence should quote the panel's peak"
    assert max(quoted) >= round(max(kl), 2)
