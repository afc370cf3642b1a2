"""Worked solutions are hidden in the built book, prose included: a solution's explanation
sits in a dropdown admonition (Jupyter Book ignores hide tags on markdown cells, so a tag
would hide nothing), and the code that solves the exercise carries a hide tag."""

from __future__ import annotations

import re
from pathlib import Path

import jupytext
import pytest

from verifiable_grpo.core.config import repo_root

CHAPTERS = sorted((repo_root() / "notebooks").glob("part*/*.py"))
# Prose that opens a solution: "A worked solution ...", "### Solution, step 1",
# "**Worked solution.**", or anything that promises to be "hidden in the book".
OPENS_A_SOLUTION = re.compile(
    r"\A\s*(?:#+\s*|\*\*)?(?:A\s+)?(?:worked\s+)?solutions?\b|hidden in the book", re.I
)
ADMONITION = re.compile(r"\A\s*(`{3,}|:{3,})\{(?:admonition|dropdown)\}([^\n]*)\n(.*)", re.S)
HIDE_TAGS = {"hide-input", "hide-cell", "remove-input", "remove-cell"}


def exposed_solution(markdown: str) -> bool:
    """Whether a markdown cell shows solution prose outside a collapsed dropdown."""
    box = ADMONITION.match(markdown)
    if box is None:
        return bool(OPENS_A_SOLUTION.search(markdown))
    title, body = box.group(2), box.group(3)
    collapsed = "{dropdown}" in markdown.split("\n", 1)[0] or re.search(
        r"^:class:.*\bdropdown\b", body, re.M
    )
    return "solution" in title.lower() and not collapsed


def test_the_rule():
    assert exposed_solution("### Solution (hidden in the book)\n\nAverage each setting")
    assert exposed_solution("A worked solution (hidden in the book). Clip the ratio")
    assert exposed_solution("**Worked solution.** The signal probability")
    assert exposed_solution("```{admonition} Worked solution\nThe targets are")
    assert not exposed_solution("```{admonition} Worked solution\n:class: dropdown\nThe")
    assert not exposed_solution("## Exercise\n\nWrite `f`; a worked solution is hidden below.")


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_solutions_are_behind_a_toggle(chapter: Path):
    cells = jupytext.read(chapter).cells
    exposed = [
        i for i, c in enumerate(cells) if c.cell_type == "markdown" and exposed_solution(c.source)
    ]
    assert not exposed, (
        f"{chapter.name}: solution prose outside a dropdown in cells {exposed}; wrap it in "
        "```{admonition} ... with :class: dropdown"
    )
    unhidden = [
        i
        for i, c in enumerate(cells)
        if c.cell_type == "code"
        and re.search(r"^def solution_", c.source, re.M)
        and not HIDE_TAGS & set(c.metadata.get("tags", []))
    ]
    assert not unhidden, f"{chapter.name}: solution code without a hide tag in cells {unhidden}"
