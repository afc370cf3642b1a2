"""Every decimal, percentage and power of ten in the book's prose is either a claim tied to
a record key (book/claims_*.py, checked against data/recorded/ by test_recorded_claims) or
declared once as a setting or constant (book/prose_settings.py). A number nobody declared
fails here with its page and sentence; so does a declaration the page no longer needs."""

from __future__ import annotations

from collections import Counter

import pytest

from verifiable_grpo.book import claims, prose_numbers
from verifiable_grpo.book.prose_settings import SETTINGS

PAGES = prose_numbers.pages()


@pytest.mark.parametrize("page", PAGES)
def test_every_number_in_the_prose_is_claimed_or_declared(page):
    found = prose_numbers.unclassified(page)
    assert not found, f"{page}: numbers neither claimed nor declared:\n" + "\n".join(
        f"  {number}: {sentence!r}" for number, sentence in found
    )


def test_no_declaration_is_stale():
    """A setting no page quotes any more is removed from the tables."""
    quoted = {page: Counter(prose_numbers.scanned_numbers(page)) for page in PAGES}
    everywhere = Counter()
    for counts in quoted.values():
        everywhere.update(counts)
    stale = [f"*: {n}" for n in SETTINGS["*"] if n not in everywhere]
    for page, table in list(SETTINGS.items())[1:]:
        stale += [f"{page}: {n}" for n in table if n not in quoted.get(page, {})]
    assert not stale, "declared numbers no page needs any more: " + ", ".join(stale)


def test_the_scanner_finds_decimals_percentages_and_powers():
    text = "up to 9.5 % of 95% and −0.010 [1,076.12 MB], lr 3e-6; the 9.55B model `0.25`"
    assert claims.scanned(claims.NOT_PROSE.sub(" ", text)) == [
        "9.5",
        "95",
        "-0.010",
        "1076.12",
        "3e-6",
    ]


def test_an_undeclared_number_fails():
    assert prose_numbers.classify("a reward of 0.123 and β = 0.02", "p.md", set()) == [
        ("0.123", "a reward of 0.123 and β = 0.02")
    ]
    assert prose_numbers.classify("a reward of 0.123", "p.md", {"0.123"}) == []


def test_program_output_and_math_are_not_prose_but_admonitions_are():
    text = "```text\npeak 32.4 GB\n```\n$x = 0.93$ and\n```{admonition} Solution\nit is 0.875\n```"
    assert claims.scanned(claims.NOT_PROSE.sub(" ", text)) == ["0.875"]


def test_a_key_claim_formats_the_record_and_a_bound_claim_fails_outside():
    claims.SOURCES["test:figures"] = {"rows": [{"rate": 0.1234}], "gap": -0.02}
    try:
        expected = claims.keys("test:figures", "rows[0].rate f3", "gap s3", "rows[0].rate p1")
        assert expected() == ["0.123", "-0.020", "12.3"]
    finally:
        del claims.SOURCES["test:figures"]
    assert claims.within([0.12, 0.2], "0.1", "0.25") == ["0.1", "0.25"]
    assert claims.within([0.12, 0.3], "0.1", "0.25") == ["outside [0.1, 0.25]"]
