"""Every chapter but a quiz shows at least one figure: an image its code drew (a png or svg
output) or a diagram its prose embeds. Reads the executed notebooks' JSON; runs nothing."""

from __future__ import annotations

import json
import re

import yaml

from verifiable_grpo.core.config import repo_root

IMAGE_OUTPUTS = ("image/png", "image/svg+xml")
# markdown that embeds a picture: ![alt](path), a MyST figure or image directive, an <img>
EMBEDDED_PICTURE = re.compile(r"!\[|```\{(figure|image)\}|<img\b")

# chapters whose figure is still to be drawn, each with who draws it; the test below fails
# once one of them has a figure, so the list only shrinks
WAITING_FOR_A_FIGURE: dict[str, str] = {}


def _chapters() -> list[str]:
    toc = yaml.safe_load((repo_root() / "_toc.yml").read_text())
    found = []
    for part in toc["parts"]:
        for chapter in part["chapters"]:
            found += [s["file"] for s in chapter.get("sections", [])]
    return [name for name in found if name.startswith("notebooks/")]


def _is_quiz(chapter: str) -> bool:
    return "quiz" in chapter.rsplit("/", 1)[-1]


def _has_a_figure(chapter: str) -> bool:
    cells = json.loads((repo_root() / f"{chapter}.ipynb").read_text())["cells"]
    for cell in cells:
        if cell["cell_type"] == "markdown" and EMBEDDED_PICTURE.search("".join(cell["source"])):
            return True
        for output in cell.get("outputs", []):
            if any(kind in output.get("data", {}) for kind in IMAGE_OUTPUTS):
                return True
    return False


def test_every_chapter_but_a_quiz_shows_a_figure():
    chapters = [c for c in _chapters() if not _is_quiz(c) and c not in WAITING_FOR_A_FIGURE]
    assert len(chapters) > 20  # the toc was read
    missing = [c for c in chapters if not _has_a_figure(c)]
    assert not missing, f"chapters without a figure: {missing}"


def test_the_waiting_list_only_names_chapters_still_without_one():
    chapters = set(_chapters())
    for chapter in WAITING_FOR_A_FIGURE:
        assert chapter in chapters, f"{chapter} is not in _toc.yml"
        assert not _has_a_figure(chapter), f"{chapter} has its figure now: take it off the list"


def test_a_chapter_without_a_figure_is_caught(tmp_path, monkeypatch):
    notebook = {
        "cells": [
            {"cell_type": "markdown", "source": ["# Title\n", "No picture."]},
            {"cell_type": "code", "source": ["1"], "outputs": [{"data": {"text/plain": ["1"]}}]},
        ]
    }
    (tmp_path / "chapter.ipynb").write_text(json.dumps(notebook))
    monkeypatch.setattr("test_every_chapter_has_a_figure.repo_root", lambda: tmp_path)
    assert not _has_a_figure("chapter")
    notebook["cells"][1]["outputs"].append({"data": {"image/png": "iVBOR"}})
    (tmp_path / "chapter.ipynb").write_text(json.dumps(notebook))
    assert _has_a_figure("chapter")
