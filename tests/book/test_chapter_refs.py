"""Chapter numbers come from one source, _toc.yml: every "chapter I.12" the prose writes
names a chapter that exists, links to the chapter with that number, calls a quiz a quiz,
and names its part outside the part's own pages; the chapter files are numbered in the
toc's order; and the intro's map lists every chapter."""

from __future__ import annotations

import re

import pytest

from verifiable_grpo.book import book_map, chapter_refs
from verifiable_grpo.core.config import repo_root

LABELS = book_map.chapter_labels()


@pytest.mark.parametrize("page", chapter_refs.pages())
def test_every_chapter_reference_matches_the_toc(page):
    found = [p for r in chapter_refs.references(page) for p in chapter_refs.problems(r, LABELS)]
    assert not found, "\n".join(found)


def _problems(page, text, labels):
    return [
        p for r in chapter_refs.references(page, text) for p in chapter_refs.problems(r, labels)
    ]


def test_a_wrong_number_link_quiz_or_part_fails():
    labels = {
        "notebooks/part1/11_quiz": "I.12",
        "notebooks/part1/12_pretrained_model": "I.11",
        "notebooks/part2/01_the_arms": "II.1",
    }
    headline = "({doc}`chapter I.12 <../notebooks/part1/12_pretrained_model>`)"
    assert "which is I.11" in _problems("book/intro.md", headline, labels)[0]
    assert "not a quiz" in _problems("book/part1.md", "A short quiz (chapter 11)", labels)[0]
    assert _problems("book/part1.md", "A short quiz (chapter 12)", labels) == []
    assert "which part" in _problems("book/glossary.md", "a fair coin (chapter 8)", labels)[0]
    assert "no chapter II.7" in _problems("book/glossary.md", "(Part II,\n  chapter 7)", labels)[0]
    assert _problems("notebooks/part2/04_results.py", "# chapter 1 says why", labels) == []
    readme = "([chapter I.11](notebooks/part1/12_pretrained_model.ipynb))"
    assert _problems("README.md", readme, labels) == []


def test_the_chapter_files_are_numbered_in_toc_order():
    for part in book_map.parts():
        numbers = [int(c.file.rsplit("/", 1)[1].split("_")[0]) for c in part.chapters]
        assert numbers == list(range(1, len(numbers) + 1)), (
            f"{part.caption}: file numbers {numbers} differ from the toc's order"
        )


def test_the_intro_map_lists_every_chapter_with_its_number():
    text = (repo_root() / "book/intro.md").read_text()
    block = re.search(r"<!-- map -->\n(.*?)<!-- /map -->", text, re.S).group(1)
    for file, label in LABELS.items():
        assert f"{label} {{doc}}`" in block and f"<../{file}>`" in block, file
    assert len(LABELS) == sum(len(p.chapters) for p in book_map.parts())
