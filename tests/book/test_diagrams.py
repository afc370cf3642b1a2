"""The loop diagram is drawn by code: regenerating it works and gives the committed image's
size and stages (the bytes depend on fonts and matplotlib, so they are never compared)."""

from __future__ import annotations

import struct

from verifiable_grpo.book import diagrams
from verifiable_grpo.core.config import repo_root


def _png_size(path) -> tuple[int, int]:
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", header[16:24])


def test_the_loop_diagram_regenerates_at_the_committed_size(tmp_path):
    written = diagrams.save_grpo_loop_diagram(tmp_path / "images" / "loop.png")
    committed = repo_root() / diagrams.GRPO_LOOP_IMAGE
    assert _png_size(written) == _png_size(committed) == (1320, 462)


def test_the_loop_diagram_shows_every_stage_and_the_frozen_reference():
    texts = [t.get_text() for t in diagrams.grpo_loop_diagram().axes[0].texts]
    for title, detail in diagrams.LOOP_STAGES:
        assert title in texts and detail in texts
    assert "frozen reference" in texts
    assert any(t.startswith("next iteration") for t in texts)
