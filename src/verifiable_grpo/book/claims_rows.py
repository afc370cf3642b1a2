"""Sentences that single out rows of a table ("two readings lean", "the one arm that
moved"), checked against every row of the table.

A sentence that names the rows with a property is a claim about the rows it does not name
as well: re-recording a study can give a third row the property, or take it from one the
sentence names, and a check of the named rows' numbers alone would still pass. A row claim
holds the whole table, the property and the numbers quoted per row; the sentence must name
exactly the rows that have the property (by their names, in code or in words), say how many
there are where it counts them, and quote their numbers in table order.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from verifiable_grpo.book import claims

COUNT_WORDS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight")
# Phrases that single out rows: "the one reading that", "the only arm whose", "only grpo
# moved", "two readings lean". Every sentence of the book that uses one is tied to a row
# claim or declared in SINGLING_DECLARED with its reason.
_ROW = r"(?:readings?|arms?|rows?|runs?|results?|settings?|comparisons?|candidates?|objectives?|variants?|estimators?)"
SINGLING = re.compile(
    rf"\bthe (?:one|only) {_ROW} (?:that|whose|which|where)\b"
    r"|\bonly `?[\w.-]+`? (?:moved|changed|rejected|leans|learned|improved|differs)\b"
    rf"|\b(?:{'|'.join(COUNT_WORDS[1:])}) {_ROW} (?:leans?|moved|rejects?|differs?|learned)\b",
    re.I,
)


@dataclass(frozen=True)
class RowClaim:
    page: str
    anchor: str  # words of the sentence that names the singled-out rows
    rows: Callable[[], list[dict]]  # every row of the table, each with a "name"
    has_property: Callable[[dict], bool]
    quote: Callable[[dict], list[str]]  # the numbers the sentence quotes for a chosen row
    counted: str = ""  # the paragraph's count phrase, "{count} readings lean"


def chosen(claim: RowClaim) -> list[dict]:
    """The table's rows that have the property, in table order."""
    return [row for row in claim.rows() if claim.has_property(row)]


def expected(claim: RowClaim) -> list[str]:
    """The numbers the sentence must quote: each chosen row's, in table order."""
    return [number for row in chosen(claim) for number in claim.quote(row)]


def named(sentence: str, names) -> set[str]:
    """The row names a sentence mentions as whole words ("gspo" is not in "gspo_paper")."""
    return {n for n in names if re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", sentence)}


def anchored_sentence(paragraph: str, anchor: str) -> str:
    for sentence in re.split(r"(?<=[.!?])\s+(?=[A-Z*`\"(])", paragraph):
        if anchor in sentence:
            return sentence
    raise LookupError(f"no sentence holds {anchor!r}")


def problems(claim: RowClaim) -> list[str]:
    """What the sentence gets wrong about the table (empty when nothing)."""
    paragraph = claims.paragraph(claim.page, claim.anchor)
    sentence = anchored_sentence(paragraph, claim.anchor)
    rows = claim.rows()
    want = {row["name"] for row in chosen(claim)}
    said = named(sentence, [row["name"] for row in rows])
    out = []
    if said != want:
        out.append(
            f"the sentence names {sorted(said)}, but the rows with the property are {sorted(want)}"
        )
    absent = claims.missing(sentence, expected(claim))
    if absent:
        out.append(f"the chosen rows' numbers {absent} are not quoted in table order")
    if claim.counted:
        count = len(want)
        phrase = claim.counted.format(
            count=COUNT_WORDS[count] if count < len(COUNT_WORDS) else count
        )
        if phrase.lower() not in paragraph.lower():
            out.append(f"the paragraph should say {phrase!r}")
    return out


def singling_sentences(page: str) -> list[str]:
    """The page's sentences that single out rows, whitespace collapsed (code spans kept:
    a row is often named in code, "only `grpo` moved")."""
    found = []
    for block in re.split(r"\n\s*\n", claims.page_text(page)):
        for sentence in re.split(r"(?<=[.!?])\s+", " ".join(block.split())):
            if SINGLING.search(sentence):
                found.append(sentence)
    return found
