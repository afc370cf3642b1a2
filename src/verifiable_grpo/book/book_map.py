"""The book's map, read from _toc.yml: parts, their chapters' titles, word counts and
reading times. The intro's map and each part page's "at a glance" block are generated
here (python -m verifiable_grpo.book.book_map --write) and a test compares them with the
pages, so adding a chapter without updating the map fails.
"""

from __future__ import annotations

import argparse
import math
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from verifiable_grpo.core.config import repo_root

# Reading speed for technical prose with formulas (ordinary prose is read at ~250 words a
# minute; a derivation or a code cell is read more slowly, so one lower rate for both).
WORDS_PER_MINUTE = 150
MARK = re.compile(r"<!-- map(?::(\w+))? -->\n.*?<!-- /map -->", re.S)


@dataclass(frozen=True)
class Chapter:
    file: str  # as _toc.yml names it, without suffix
    title: str
    words: int
    exercises: int  # cells that call a checker (check_...) on the learner's function


@dataclass(frozen=True)
class Part:
    caption: str
    page: str  # the part's landing page
    chapters: tuple[Chapter, ...]

    @property
    def words(self) -> int:
        return sum(c.words for c in self.chapters)

    @property
    def exercises(self) -> int:
        return sum(c.exercises for c in self.chapters)


def source(file: str) -> Path:
    """The file a toc entry stands for: a notebook's jupytext .py, else the .md page."""
    root = repo_root()
    for suffix in (".py", ".md"):
        if (root / f"{file}{suffix}").is_file():
            return root / f"{file}{suffix}"
    raise FileNotFoundError(f"_toc.yml names {file}, which has no .py or .md source")


def chapter(file: str) -> Chapter:
    path = source(file)
    # prose and code alike; jupytext's header and cell markers are not read by anyone
    body = re.sub(r"\A# ---\n.*?^# ---\n", "", path.read_text(), count=1, flags=re.S | re.M)
    body = re.sub(r"^# %%.*$", "", body, flags=re.M)
    heading = re.search(r"^# # (.+)$" if path.suffix == ".py" else r"^# (.+)$", body, re.M)
    if heading is None:
        raise ValueError(f"{file} has no title heading")
    words = len(re.findall(r"[A-Za-z0-9]+", body))
    exercises = len(re.findall(r"^(?:\w+ = )?check_\w+\(my_", body, re.M))
    return Chapter(file, heading.group(1).strip(), words, exercises)


def parts(toc: Path | None = None) -> list[Part]:
    """The numbered parts of _toc.yml (a caption starting "Part"), in order."""
    toc = yaml.safe_load((toc or repo_root() / "_toc.yml").read_text())
    found = []
    for entry in toc["parts"]:
        if not entry["caption"].startswith("Part"):
            continue
        (landing,) = entry["chapters"]
        chapters = tuple(chapter(s["file"]) for s in landing.get("sections", []))
        found.append(Part(entry["caption"], landing["file"], chapters))
    return found


ROMAN = ("I", "II", "III", "IV", "V")


def chapter_labels() -> dict[str, str]:
    """Every chapter's number as the book writes it, from its place in _toc.yml: the
    part's Roman numeral and the chapter's position ("notebooks/part1/12_x" -> "I.12")."""
    return {
        ch.file: f"{ROMAN[p]}.{n}"
        for p, part in enumerate(parts())
        for n, ch in enumerate(part.chapters, 1)
    }


def reading_hours(words: int, rate: int = WORDS_PER_MINUTE) -> float:
    """Hours to read `words` at `rate` words a minute, rounded up to the half hour."""
    if words < 0 or rate <= 0:
        raise ValueError("words must be >= 0 and rate > 0")
    return math.ceil(words / rate / 30) / 2


def chapter_minutes(ch: Chapter) -> int:
    """A chapter's reading time to the nearest 5 minutes (at least 5): coarse on purpose,
    so that editing a paragraph rarely changes the map."""
    return max(5, 5 * round(ch.words / WORDS_PER_MINUTE / 5))


def thousands(words: int) -> str:
    """A word count to the nearest thousand, as the map prints it ("22,000")."""
    return f"{1000 * round(words / 1000):,}"


def _hours(hours: float) -> str:
    return f"{hours:g} hour" + ("" if hours == 1 else "s")


def intro_map() -> str:
    """The intro's map: one row per part (its chapter count, words and reading time), then
    every chapter of every part with its number and title."""
    rows = [
        "| part | chapters | exercises with a checker | words | reading time |",
        "|---|---|---|---|---|",
    ]
    for part in parts():
        name = part.page.split("/")[-1]
        rows.append(
            f"| {{doc}}`{part.caption} <{name}>` | {len(part.chapters)} | {part.exercises} "
            f"| about {thousands(part.words)} | about {_hours(reading_hours(part.words))} |"
        )
    rows += ["", "Every chapter, in reading order:", ""]
    labels = chapter_labels()
    for part in parts():
        name = part.page.split("/")[-1]
        listed = " · ".join(
            f"{labels[ch.file]} {{doc}}`{ch.title} <../{ch.file}>`" for ch in part.chapters
        )
        rows.append(f"- **{{doc}}`{part.caption.split(':')[0]} <{name}>`**: {listed}")
    return "\n".join(rows)


def part_glance(part: Part) -> str:
    """A part page's block: count, reading time, and every chapter's number and title."""
    lines = [
        f"**At a glance:** {len(part.chapters)} chapters, about {thousands(part.words)} words, "
        f"about {_hours(reading_hours(part.words))} of reading at {WORDS_PER_MINUTE} words a "
        f"minute, {part.exercises} exercise{'' if part.exercises == 1 else 's'} with a "
        "checker; running the cells and solving the exercises come on top.",
        "",
    ]
    labels = chapter_labels()
    for ch in part.chapters:
        lines.append(
            f"- {labels[ch.file]} {{doc}}`{ch.title} <../{ch.file}>` ({chapter_minutes(ch)} min)"
        )
    return "\n".join(lines)


def blocks() -> dict[str, str]:
    """Page -> generated text for each marked block (intro: the map; part pages: glance)."""
    out = {"book/intro.md": intro_map()}
    for part in parts():
        out[f"{part.page}.md"] = part_glance(part)
    return out


def render(page_text: str, generated: str) -> str:
    """The page with its marked block replaced by `generated` (ValueError if unmarked)."""
    if not MARK.search(page_text):
        raise ValueError("the page has no <!-- map --> ... <!-- /map --> block")
    return MARK.sub(
        lambda m: m.group(0).split("\n", 1)[0] + f"\n{generated}\n<!-- /map -->", page_text
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="rewrite the pages' map blocks")
    args = parser.parse_args(argv)
    for page, generated in blocks().items():
        if not args.write:
            print(f"--- {page}\n{generated}\n")
            continue
        path = repo_root() / page
        text = path.read_text()
        updated = render(text, generated)
        if updated != text:
            path.write_text(updated)
            print("updated", page)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
