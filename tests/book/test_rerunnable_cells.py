"""A chapter's cells can be re-run in any order a reader tries: no later cell rebinds a
function an earlier cell defined (III.5 once turned its helper `last` into a dict, so
re-running the table above raised TypeError)."""

from __future__ import annotations

import ast
from pathlib import Path

import jupytext
import pytest

from verifiable_grpo.core.config import repo_root

CHAPTERS = sorted((repo_root() / "notebooks").glob("part*/*.py"))


def _function_scopes(tree: ast.AST) -> set[int]:
    return {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        for inner in ast.walk(node)
        if inner is not node
    }


def rebound_functions(sources: list[str]) -> list[tuple[int, str]]:
    """(cell, name) for every cell that rebinds a function an earlier cell defined."""
    defined: set[str] = set()
    found = []
    for index, source in enumerate(sources):
        try:
            tree = ast.parse(source)
        except SyntaxError:  # IPython magics; the chapters' own cells are plain Python
            continue
        inside = _function_scopes(tree)
        bound = {
            n.id
            for n in ast.walk(tree)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and id(n) not in inside
        }
        found += [(index, name) for name in sorted(bound & defined)]
        defined |= {
            n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
        }
    return found


def test_the_rule():
    cells = ["def last(run):\n    return run[-1]\n", "for run in runs:\n    last = last(run)\n"]
    assert rebound_functions(cells) == [(1, "last")]
    assert rebound_functions([cells[0], "def f():\n    last = 1\n"]) == []


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_cell_rebinds_an_earlier_function(chapter: Path):
    sources = [c.source for c in jupytext.read(chapter).cells if c.cell_type == "code"]
    found = rebound_functions(sources)
    assert not found, f"{chapter.name}: (code cell, function rebound): {found}"
