"""The diagrams are drawn by code: redrawing each into a temporary folder gives the committed
image pixel for pixel (PNGs carry no timestamp; matplotlib is pinned and ships its own font
and rasteriser), each is placed in a chapter with alt text, and the numbers they show are
the package's."""

from __future__ import annotations

import re
import struct

import numpy as np
import pytest
from PIL import Image

from verifiable_grpo.book import diagrams
from verifiable_grpo.core.config import repo_root
from verifiable_grpo.training.objectives import STUDY_ARMS, get_objective

REGENERATE = "python -m verifiable_grpo.book.diagrams"


def _png_size(path) -> tuple[int, int]:
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", header[16:24])


@pytest.fixture(scope="module")
def redrawn(tmp_path_factory):
    folder = tmp_path_factory.mktemp("diagrams")
    return {path.stem: path for path in diagrams.save_diagrams(folder)}


def test_every_committed_diagram_is_current(redrawn):
    stale = []
    for name, fresh in redrawn.items():
        committed = repo_root() / diagrams.IMAGES / f"{name}.png"
        assert committed.is_file(), f"{committed} is missing: run {REGENERATE}"
        new, old = np.asarray(Image.open(fresh)), np.asarray(Image.open(committed))
        if new.shape != old.shape or (new != old).any():
            stale.append(name)
    assert not stale, f"committed diagrams differ from their code: {stale}; run {REGENERATE}"
    assert _png_size(redrawn["grpo_loop"]) == (774, 422)  # 7.0 x 3.8 in: for the column


def test_there_are_at_least_ten_mechanism_diagrams():
    assert len(diagrams.DIAGRAMS) >= 11  # the GRPO loop and ten mechanisms


def test_every_diagram_is_placed_in_a_chapter_with_alt_text():
    sources = [*repo_root().joinpath("notebooks").rglob("*.py")]
    sources += repo_root().joinpath("book").glob("*.md")
    text = "\n".join(p.read_text() for p in sources)
    for name in diagrams.DIAGRAMS:
        found = re.findall(rf"!\[([^\]]*)\]\([./]*book/images/{name}\.png\)", text)
        assert found, f"{name}.png is not shown in any chapter"
        alt = " ".join(" ".join(line.lstrip("# ") for line in found[0].splitlines()).split())
        assert len(alt) >= 60, f"{name}.png has too short an alt text: {alt!r}"


def _texts(figure) -> str:
    return "\n".join(t.get_text() for ax in figure.axes for t in ax.texts)


def test_the_family_diagram_shows_the_registry():
    shown = _texts(diagrams.DIAGRAMS["family_axes"]()).replace("\n", " ")
    for name in STUDY_ARMS:
        row = get_objective(name).as_row()
        for axis in ("advantages", "ratio", "clip", "KL", "sampler"):
            assert row[axis] in shown, (name, axis)


def test_the_group_diagram_shows_its_groups_advantages():
    shown = _texts(diagrams.DIAGRAMS["group_advantages"]())
    assert shown.count("A = +1.00") == 2 and shown.count("A = -1.00") == 2
    assert "mean = 0.5" in shown and "std = 0.5" in shown


def test_the_loop_diagram_shows_every_stage_and_the_frozen_reference():
    texts = [t.get_text() for t in diagrams.grpo_loop_diagram().axes[0].texts]
    for title, detail in diagrams.LOOP_STAGES:
        assert title in texts and detail in texts
    assert "frozen reference" in texts
    assert any(t.startswith("next iteration") for t in texts)


def test_an_unknown_diagram_name_is_refused(tmp_path):
    with pytest.raises(ValueError, match="unknown diagrams"):
        diagrams.save_diagrams(tmp_path, ["no_such_diagram"])
