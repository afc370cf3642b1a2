"""Classify every number the prose quotes: claimed by a record key, declared as a setting,
or neither (which the book's tests report with its page and sentence)."""

from __future__ import annotations

from functools import cache

from verifiable_grpo.book import claims
from verifiable_grpo.book.claims_registry import CLAIMS
from verifiable_grpo.book.prose_settings import SETTINGS
from verifiable_grpo.core.config import repo_root


def pages() -> list[str]:
    """The book's prose pages: Part notebooks' sources and the markdown pages."""
    root = repo_root()
    found = sorted(root.glob("notebooks/part*/*.py")) + sorted(root.glob("book/*.md"))
    return [str(p.relative_to(root)) for p in found]


@cache
def _claimed(page: str) -> dict[int, set[str]]:
    """Paragraph index (in prose_paragraphs) -> numbers its claims tie to records."""
    paragraphs = claims.prose_paragraphs(page)
    out: dict[int, set[str]] = {}
    for claim_page, anchor, expected in CLAIMS.values():
        if claim_page != page:
            continue
        found = [i for i, p in enumerate(paragraphs) if anchor in p or _loose(anchor, p)]
        if not found:
            raise LookupError(f"{page}: no prose paragraph holds the claim anchor {anchor!r}")
        index = found[0]
        out.setdefault(index, set()).update(map(claims.normalise, expected()))
    return out


def _loose(anchor: str, paragraph: str) -> bool:
    """An anchor written in page text (with code or math) matched on the blanked prose."""
    return " ".join(claims.NOT_PROSE.sub(" ", anchor).split()) in paragraph


def classify(paragraph: str, page: str, claimed: set[str]) -> list[tuple[str, str]]:
    """The numbers of one paragraph that are neither claimed nor declared, with sentences."""
    declared = set(SETTINGS["*"]) | set(SETTINGS.get(page, {}))
    return [
        (n, claims.sentence(paragraph, n))
        for n in claims.scanned(paragraph)
        if n not in claimed and n not in declared
    ]


def scanned_numbers(page: str) -> list[str]:
    return [n for p in claims.prose_paragraphs(page) for n in claims.scanned(p)]


def unclassified(page: str) -> list[tuple[str, str]]:
    claimed = _claimed(page)
    return [
        found
        for i, paragraph in enumerate(claims.prose_paragraphs(page))
        for found in classify(paragraph, page, claimed.get(i, set()))
    ]
