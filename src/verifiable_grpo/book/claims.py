"""Sentences in the book that quote a recorded number, tied to the record.

A chapter's prose says "128 of 800 draws" in markdown, where no code can format it. A
test names the paragraph by its first words (its anchor), formats the numbers the record
gives, and asks that the paragraph quotes them in that order: re-recording a run without
updating its sentence then fails, naming the page, the paragraph and the number.
"""

from __future__ import annotations

import re
from pathlib import Path

from verifiable_grpo.core.config import repo_root

# A number as prose writes it: an optional sign (ASCII or the typographic minus), digits
# with thousands commas, an optional decimal part. "10^{-4}" yields "10" and "-4".
NUMBER = re.compile(r"(?<![\w.])[−+-]?\d+(?:,\d{3})*(?:\.\d+)?")


def page_text(page: str | Path) -> str:
    """A page's prose: a markdown file as it is; a jupytext notebook's markdown cells with
    their comment marks removed (code cells kept, so anchors must be prose)."""
    path = repo_root() / page
    text = path.read_text()
    if path.suffix != ".py":
        return text
    lines = []
    for line in text.splitlines():
        if line.startswith("# %%"):
            lines.append("")
        elif line == "#" or line.startswith("# "):
            lines.append(line[2:])
        else:
            lines.append(line)
    return "\n".join(lines)


def paragraph(page: str | Path, anchor: str) -> str:
    """The paragraph that starts at (or contains) `anchor`, whitespace collapsed."""
    text = page_text(page)
    start = text.find(anchor)
    if start < 0:
        raise LookupError(f"{page}: no paragraph contains {anchor!r}")
    start = text.rfind("\n\n", 0, start) + 2 if "\n\n" in text[:start] else 0
    return " ".join(text[start:].split("\n\n", 1)[0].split())


def normalise(number: str) -> str:
    """One spelling per number: typographic minus to ASCII, thousands commas dropped."""
    return number.replace("−", "-").replace(",", "")


def quoted(text: str) -> list[str]:
    """Every number the text quotes, in order, normalised."""
    return [normalise(n) for n in NUMBER.findall(text)]


def missing(text: str, expected: list[str]) -> list[str]:
    """The expected numbers the text does not quote in this order (empty when all are)."""
    numbers, position, absent = quoted(text), 0, []
    for number in map(normalise, expected):
        if number in numbers[position:]:
            position = numbers.index(number, position) + 1
        else:
            absent.append(number)
    return absent


def signed(value: float, digits: int = 3) -> str:
    """A difference as the book prints it: explicit sign, fixed decimals."""
    return f"{value:+.{digits}f}"


def fixed(value: float, digits: int = 3) -> str:
    return f"{value:.{digits}f}"


def percent(value: float, digits: int = 1) -> str:
    """A fraction quoted in percent ("9.5" for 0.0949)."""
    return f"{100 * value:.{digits}f}"
