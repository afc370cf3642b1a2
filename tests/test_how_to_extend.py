"""The how-to-extend appendix names files that exist: each recipe stays a true list."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "book" / "how-to-extend.md"
TOP_LEVEL = ("src/", "tests/", "configs/", "notebooks/", "book/", "data/")


def named_paths(text: str) -> list[str]:
    """Every `path` in backquotes that starts at a top-level folder, plus the bare names
    the page gives for files at the root."""
    quoted = re.findall(r"`([^`\s]+)`", text)
    return [q for q in quoted if q.startswith(TOP_LEVEL) or q in ("_toc.yml", "README.md")]


def test_every_file_the_page_names_exists():
    paths = named_paths(PAGE.read_text())
    assert len(paths) >= 25, "the recipes name their files in `backquotes`"
    missing = []
    for path in paths:
        # configs/NAME.yaml: a placeholder; its folder must exist
        target = ROOT / path
        if "NAME" in path:
            target = target.parent
        if not target.exists():
            missing.append(path)
    assert missing == [], "how-to-extend.md names files that are gone: update the recipes"


def test_the_page_is_in_the_book_and_the_readme():
    assert "file: book/how-to-extend" in (ROOT / "_toc.yml").read_text()
    assert "(book/how-to-extend.md)" in (ROOT / "README.md").read_text()


# names the recipes tell the reader to edit, in the file the page puts them
NAMED = [
    ("src/verifiable_grpo/training/objectives.py", "def _entry("),
    ("src/verifiable_grpo/training/surrogates.py", "def register_surrogate("),
    ("src/verifiable_grpo/training/baselines.py", "def register_baseline("),
    ("src/verifiable_grpo/training/reward_terms.py", "def register_reward_term("),
    ("src/verifiable_grpo/training/objective_refusals.py", "REFUSED: "),
    ("src/verifiable_grpo/part2/card_defaults_lock.py", "ARMS = "),
    ("src/verifiable_grpo/part3/labs.py", "LABS = "),
    ("src/verifiable_grpo/part3/merge_lab/settings.py", "class MergingSettings"),
    ("src/verifiable_grpo/core/settings_schema.py", "def option("),
    ("src/verifiable_grpo/part3/merge_lab/digit_merges.py", "def run_lab("),
    ("tests/core/test_profiles.py", "RESOLVED_SHA256 = "),
    ("src/verifiable_grpo/part1/studies.py", "STUDIES = "),
    ("src/verifiable_grpo/part1/studies.py", "PROTOCOL = "),
    ("src/verifiable_grpo/core/preregistration.py", "def stamp_folder("),
]


def test_the_names_it_points_at_are_where_it_says():
    text = PAGE.read_text()
    for path, name in NAMED:
        assert path in text
        assert name in (ROOT / path).read_text(), f"{path} has no {name.strip(' =(')}"
