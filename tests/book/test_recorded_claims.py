"""Each sentence of the chapters that quotes a recorded number quotes the record: the
claims (book/claims_part*.py, grouped per chapter) format the expected numbers from
data/recorded/, and the paragraph (named by words it contains) must quote them in order.
Re-recording a run without updating its prose fails here, naming the page, the paragraph
and the number."""

from __future__ import annotations

import pytest

from verifiable_grpo.book import claims
from verifiable_grpo.book.claims_registry import CLAIMS
from verifiable_grpo.part1 import lift_study


@pytest.mark.parametrize("claim", list(CLAIMS))
def test_the_sentence_quotes_the_record(claim):
    page, anchor, expected = CLAIMS[claim]
    text = claims.paragraph(page, anchor)
    absent = claims.missing(text, expected())
    assert not absent, (
        f"{page}, paragraph '{anchor}': the record gives {absent}, which the prose does not "
        f"quote in order (it quotes {claims.quoted(text)})"
    )


def test_the_helper_finds_a_changed_number():
    text = "it answers 128 of 800 draws, a difference of −0.001 [-0.022, +0.020]"
    assert claims.missing(text, ["128", "800", "-0.001", "-0.022", "+0.020"]) == []
    assert claims.missing(text, ["129", "800"]) == ["129"]
    assert claims.missing(text, ["800", "128"]) == ["128"]  # order matters


def test_the_lift_tables_keep_the_verdict_beside_the_name():
    study = lift_study.recorded()["summary"]
    for verdict, detail, candidate in zip(
        lift_study.verdict_rows(study), lift_study.detail_rows(study), study["candidates"]
    ):
        assert verdict[0] == detail[0] == lift_study.display_name(candidate["name"])
        assert verdict[1] == ("yes" if candidate["learns"] else "no")
        low = candidate["paired"]["validation_sample"]["low"]
        assert verdict[2].endswith(
            f"[{low:+.3f}, {candidate['paired']['validation_sample']['high']:+.3f}]"
        )
    assert len(lift_study.VERDICT_COLUMNS) <= 5  # narrow enough for a phone
