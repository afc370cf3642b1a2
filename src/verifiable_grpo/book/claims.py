"""Sentences in the book that quote a recorded number, tied to the record.

A chapter's prose says "128 of 800 draws" in markdown, where no code can format it. A
test names the paragraph by its first words (its anchor), formats the numbers the record
gives, and asks that the paragraph quotes them in that order: re-recording a run without
updating its sentence then fails, naming the page, the paragraph and the number.
"""

from __future__ import annotations

import json
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
    """The first paragraph that contains `anchor`, whitespace collapsed (an anchor may
    span a line break of the source)."""
    for block in re.split(r"\n\s*\n", page_text(page)):
        text = " ".join(block.split())
        if anchor in text:
            return text
    raise LookupError(f"{page}: no paragraph contains {anchor!r}")


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


# --- The scanner: every decimal, percentage or power of ten in the prose ---------------

# What the scanner reads as a quoted number: a decimal ("0.305", "−0.010", "1,076.12"), a
# percentage ("9.5 %", "95%") or a power of ten ("3e-6"). Plain integers are counts and
# indices too often to classify one by one; the claims still tie the recorded ones.
SCANNED = re.compile(
    r"(?<![\w.])[−+-]?\d+(?:\.\d+)?e[−+-]?\d+\b"
    r"|(?<![\w.])[−+-]?\d+(?:,\d{3})*\.\d+(?:\s?%)?(?![\d.]*\w)"
    r"|(?<![\w.])[−+-]?\d+(?:,\d{3})*\s?%"
)
# Spans whose numbers are not prose: fenced code and program output with a language tag
# (not a MyST directive such as ```{admonition}, which holds prose), display and inline math
# (formulas teach constants, not results), code spans, link targets, HTML tags,
# identifiers such as arXiv and DOI numbers, three-part version strings, and the model
# names that contain a decimal.
NOT_PROSE = re.compile(
    r"```[A-Za-z]\w*[^\n]*\n.*?```|\$\$.*?\$\$|\$[^$\n]+\$|`[^`\n]*`|\]\([^)]*\)|https?://\S+|<[^>]+>"
    r"|(?:arXiv|doi):\S+|\b\d+\.\d+\.\d+\b|Qwen\d(?:\.\d)?-\d+(?:\.\d+)?B\S*",
    re.S,
)


def markdown_cells(page: str | Path) -> list[str]:
    """A page's prose cells: a markdown file whole; a jupytext notebook's markdown cells,
    their comment marks removed."""
    path = repo_root() / page
    text = path.read_text()
    if path.suffix != ".py":
        return [text]
    cells, cell = [], None
    for line in text.splitlines():
        if line.startswith("# %%"):
            if cell is not None:
                cells.append("\n".join(cell))
            cell = [] if "[markdown]" in line else None
        elif cell is not None:
            cell.append(line[2:] if line.startswith("# ") else "" if line == "#" else line)
    if cell is not None:
        cells.append("\n".join(cell))
    return cells


def prose_paragraphs(page: str | Path) -> list[str]:
    """The page's prose paragraphs, whitespace collapsed, with the non-prose spans blanked."""
    out = []
    for cell in markdown_cells(page):
        for block in re.split(r"\n\s*\n", NOT_PROSE.sub(" ", cell)):
            if block.strip():
                out.append(" ".join(block.split()))
    return out


def scanned(text: str) -> list[str]:
    """The decimals, percentages and powers of ten a paragraph quotes, normalised (the
    percent sign dropped: "9.5 %" is "9.5", as `percent` formats it)."""
    return [normalise(m.rstrip("% ")) for m in SCANNED.findall(text)]


def sentence(text: str, number: str) -> str:
    """The sentence of `text` that quotes `number`, for a failure message."""
    for part in re.split(r"(?<=[.!?])\s+", text):
        if number in quoted(part) or number in scanned(part):
            return part[:240]
    return text[:240]


# --- Claims declared as record keys -----------------------------------------------------

_RECORDS: dict[str, object] = {}


def record(name: str) -> object:
    """A file of data/recorded/, parsed once per session."""
    if name not in _RECORDS:
        _RECORDS[name] = json.loads((repo_root() / "data/recorded" / name).read_text())
    return _RECORDS[name]


def lookup(data: object, path: str) -> object:
    """The value at a dotted path with list indices: "metrics.rows[3].accuracy"."""
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", path):
        data = data[int(part[1:-1])] if part.startswith("[") else data[part]
    return data


def formatted(value: float, form: str) -> str:
    """A value as the prose prints it: f3 fixed, s3 signed, p1 percent, e.g. "0.305"."""
    kind, digits = form[0], int(form[1:] or 0)
    return {"f": fixed, "s": signed, "p": percent}[kind](value, digits)


# Sources that are not files: the published figures a chapter compares with, which live in
# the package as constants (e.g. "published:sft" -> masked_sft.MODULE_REPORTS).
SOURCES: dict[str, object] = {}


def source(name: str) -> object:
    return SOURCES[name] if name in SOURCES else record(name)


def keys(name: str, *entries: str):
    """The expected numbers of a sentence as record keys: each entry "path form", or
    "other-source:path form" for a key of another file or source."""

    def expected() -> list[str]:
        out = []
        for entry in entries:
            path, form = entry.rsplit(" ", 1)
            where, _, path = path.rpartition(":")
            out.append(formatted(lookup(source(where or name), path), form))
        return out

    return expected


def within(values, low: str, high: str) -> list[str]:
    """For a sentence that bounds a series ("between 0.1 and 0.25"): the two bounds when
    every value lies inside them, else a marker no page quotes, so the claim fails."""
    inside = all(float(low) <= v <= float(high) for v in values)
    return [low, high] if inside else [f"outside [{low}, {high}]"]
