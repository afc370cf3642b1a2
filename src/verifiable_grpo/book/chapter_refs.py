"""Every "chapter I.12" the book writes, checked against _toc.yml.

A chapter's number is its place in _toc.yml (book_map.chapter_labels). Prose names a
chapter as "chapter II.6", "Part II, chapter 6", "Part I's chapters 2, 3 and 6", or, on
a page of the same part, "chapter 6". Each reference must name a chapter that exists; one
written as a link must link to the chapter with that number; one beside the word "quiz"
must name a quiz; and a page outside the parts (the intro, the glossary, the README) must
say which part it means.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from verifiable_grpo.book import book_map
from verifiable_grpo.core.config import repo_root

_NUMBER = r"(?:(?:III|II|I)\.)?\d+"
REFERENCE = re.compile(
    r"(?:\bPart (?P<part>III|II|I)(?:'s|,)?\s+)?\b[Cc]hapters?\s+"
    rf"(?P<numbers>{_NUMBER}(?:(?:, | and | to | or ){_NUMBER})*)\b"
)
# what follows a reference written as a link: a MyST {doc} role's target or a markdown link's
LINK = re.compile(r"\A[^<`\]]{0,40}?(?:<(?P<doc>[^>]+)>`|\]\((?P<url>[^)]+)\))")


@dataclass(frozen=True)
class Reference:
    page: str
    label: str  # "I.12"
    text: str  # the words around it, for a failure message
    target: str | None  # the toc file its link points to, if it is a link
    near_quiz: bool


def page_part(page: str) -> str | None:
    """The part a page belongs to ("I" for notebooks/part1/... and book/part1.md)."""
    found = re.search(r"part(\d)", Path(page).stem if page.startswith("book/") else page)
    return book_map.ROMAN[int(found.group(1)) - 1] if found else None


def _target(link: str, page: str) -> str:
    """A link's target as a toc file: "../notebooks/part1/12_x" -> "notebooks/part1/12_x"."""
    link = re.sub(r"\.(?:ipynb|md|html)$", "", link.split("#")[0])
    base = (repo_root() / page).parent
    resolved = (base / link).resolve() if link.startswith(".") else repo_root() / link
    if not link.startswith(".") and not (repo_root() / f"{link}.py").exists():
        resolved = (base / link).resolve()
    return resolved.relative_to(repo_root().resolve()).as_posix()


def references(page: str, text: str | None = None) -> list[Reference]:
    """The chapter references of a page (its whole text: prose and code comments)."""
    text = (repo_root() / page).read_text() if text is None else text
    text = re.sub(r"\n#? ?", " ", text)  # a reference may span a line break or a comment mark
    home = page_part(page)
    found = []
    for match in REFERENCE.finditer(text):
        link = LINK.match(text[match.end() :])
        target = None
        if link:
            target = _target(link.group("doc") or link.group("url"), page)
        before = text[max(0, match.start() - 30) : match.start()].lower()
        for number in re.findall(_NUMBER, match.group("numbers")):
            part = number.split(".")[0] if "." in number else match.group("part") or home
            label = f"{part}.{number.split('.')[-1]}" if part else f"?.{number}"
            context = text[max(0, match.start() - 40) : match.end() + 20]
            found.append(Reference(page, label, context, target, "quiz" in before))
    return found


def problems(reference: Reference, labels: dict[str, str]) -> list[str]:
    """What is wrong with one reference, given file -> label from _toc.yml."""
    by_label = {label: file for file, label in labels.items()}
    where = f"{reference.page}: {reference.text!r}"
    if reference.label.startswith("?."):
        return [f"{where}: say which part (chapter I.N, II.N or III.N)"]
    if reference.label not in by_label:
        return [f"{where}: _toc.yml has no chapter {reference.label}"]
    out = []
    if reference.target and labels.get(reference.target) != reference.label:
        actual = labels.get(reference.target, "no chapter")
        out.append(f"{where}: links to {reference.target}, which is {actual}")
    if reference.near_quiz and "quiz" not in by_label[reference.label]:
        out.append(f"{where}: chapter {reference.label} is not a quiz")
    return out


def pages() -> list[str]:
    """Where the book refers to chapters: the markdown pages, the chapters, the README."""
    root = repo_root()
    found = [root / "README.md", *sorted(root.glob("book/*.md"))]
    found += sorted(root.glob("notebooks/part*/*.py"))
    return [p.relative_to(root).as_posix() for p in found]
