"""A sentence that singles out rows of a table ("two readings lean", "the one arm that
moved") is checked against every row: it names exactly the rows with the property, says
how many, and quotes their numbers. Every such phrase in the book is tied to a row claim
or declared as not reading a table."""

from __future__ import annotations

import pytest

from verifiable_grpo.book import claims, claims_rows, prose_numbers
from verifiable_grpo.book.claims_registry import ROW_CLAIMS, SINGLING_DECLARED


@pytest.mark.parametrize("name", list(ROW_CLAIMS))
def test_the_sentence_names_exactly_the_rows_with_the_property(name):
    found = claims_rows.problems(ROW_CLAIMS[name])
    assert not found, f"{name}: " + "; ".join(found)


def _toy(rows):
    return claims_rows.RowClaim(
        page="tests/toy.md",
        anchor="is behind",
        rows=lambda: rows,
        has_property=lambda r: r["high"] < 0 or r["low"] > 0,
        quote=lambda r: [claims.signed(r["d"], 2)],
        counted="{count} readings lean",
    )


def test_a_row_the_sentence_leaves_out_fails(monkeypatch):
    rows = [
        {"name": "a", "d": -0.5, "low": -0.9, "high": -0.1},
        {"name": "b", "d": 0.3, "low": 0.1, "high": 0.6},
        {"name": "c", "d": 0.0, "low": -0.2, "high": 0.2},
    ]
    text = "One reading leans. Here a is behind by -0.50, alone."
    claim = _toy(rows)
    monkeypatch.setattr(claims, "paragraph", lambda page, anchor: text)
    found = claims_rows.problems(claim)
    assert any("['a', 'b']" in p for p in found)  # b also has the property
    assert any("+0.30" in p for p in found)
    assert any("two readings lean" in p for p in found)
    good = "Two readings lean. Here a is behind by -0.50 and b ahead by +0.30, not c's."
    monkeypatch.setattr(claims, "paragraph", lambda page, anchor: good)
    assert claims_rows.problems(claim) == [
        "the sentence names ['a', 'b', 'c'], but the rows with the property are ['a', 'b']"
    ]


def test_names_are_whole_words():
    assert claims_rows.named("`gspo_paper` leads", ["gspo", "gspo_paper"]) == {"gspo_paper"}


def test_the_scanner_sees_the_phrases():
    for phrase in ("the one reading that leans", "only `grpo` moved", "two readings lean"):
        assert claims_rows.SINGLING.search(phrase), phrase
    assert not claims_rows.SINGLING.search("the old policy is the one that sampled it")


@pytest.mark.parametrize("page", prose_numbers.pages())
def test_every_singling_sentence_is_tied_to_its_table_or_declared(page):
    tied = [c.anchor for c in ROW_CLAIMS.values() if c.page == page]
    declared = SINGLING_DECLARED.get(page, {})
    loose = []
    for sentence in claims_rows.singling_sentences(page):
        paragraph = " ".join(claims.paragraph(page, sentence[:40]).split())
        if any(a in paragraph for a in tied) or any(d in sentence for d in declared):
            continue
        loose.append(sentence)
    assert not loose, (
        f"{page}: sentences that single out rows, tied to no row claim "
        f"(book/claims_rows.py) and not declared: {loose}"
    )
