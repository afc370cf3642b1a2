"""Every markdown cell of every chapter is a markdown cell: a heading or an exercise's
instructions written as comments inside a code cell is invisible as prose (the book shows
it as code, and a learner meets a stub with no task), so a test finds them."""

from __future__ import annotations

import re
from pathlib import Path

import jupytext
import pytest

from verifiable_grpo.core.config import repo_root

CHAPTERS = sorted((repo_root() / "notebooks").glob("part*/*.py"))
# a markdown heading behind a comment sign ("# ## Exercise"), or an instruction to the
# learner ("Exercise", "Your task", "Write `f(...)`") in a comment
STRANDED = (
    re.compile(r"^\s*#\s*#{1,6}\s+\S"),
    re.compile(r"^\s*#.*\b(?:Exercises?\b|Your task|Try this|Write `)"),
)


def stranded_lines(source: str) -> list[str]:
    """The comment lines of a code cell's source that belong in a markdown cell."""
    return [line for line in source.splitlines() if any(p.match(line) for p in STRANDED)]


def test_the_rule_catches_a_heading_and_an_instruction_but_not_code_comments():
    assert stranded_lines("Table(rows)\n#\n# ## Exercise: groups\n") == ["# ## Exercise: groups"]
    assert stranded_lines("# Write `f(x)`: the share\nx = 1\n") == ["# Write `f(x)`: the share"]
    assert stranded_lines("raise NotImplementedError  # your code here\n# a comment\n") == []
    assert stranded_lines("x = 1  # the #2 row\n") == []


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_prose_is_stranded_in_a_code_cell(chapter: Path):
    notebook = jupytext.read(chapter)
    found = [
        (index, line)
        for index, cell in enumerate(notebook.cells)
        if cell.cell_type == "code"
        for line in stranded_lines(cell.source)
    ]
    assert not found, (
        f"{chapter.name}: a heading or instruction sits in a code cell (cell, line): {found}; "
        "move it to a markdown cell"
    )
