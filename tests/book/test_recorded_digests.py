"""Every file the book reads recorded numbers from matches its committed SHA-256: an edit
to a plotted-only number, a family run's telemetry, a per-item score or a provenance
record fails here (book/recorded_digests)."""

from __future__ import annotations

import json
import shutil

import pytest

from verifiable_grpo.book import recorded_digests
from verifiable_grpo.core import files
from verifiable_grpo.core.config import repo_root


def test_every_recorded_file_matches_its_digest():
    assert recorded_digests.problems() == []


def test_the_list_covers_telemetry_scores_plots_and_the_base_build():
    listed = files.read_json(repo_root() / recorded_digests.LIST)["files"]
    assert "data/tiny-base/BUILD.json" in listed
    assert any(r.startswith("data/recorded/part2/runs/") for r in listed)  # telemetry
    assert any(r.startswith("data/recorded/tiny/scores/") for r in listed)  # per-item
    assert "data/recorded/tiny/provenance.json" in listed


@pytest.fixture
def copy(tmp_path):
    """The recorded data and the list in a scratch root (the repository is never edited)."""
    for covered in recorded_digests.COVERED:
        source, target = repo_root() / covered, tmp_path / covered
        target.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if source.is_dir() else shutil.copy)(source, target)
    return tmp_path


def _edit_first_number(path):
    """Change the first number in a JSON file by one unit in its last digit."""
    text = path.read_text()
    at = next(i for i, c in enumerate(text) if c.isdigit())
    digit = str((int(text[at]) + 1) % 10)
    path.write_text(text[:at] + digit + text[at + 1 :])


@pytest.mark.parametrize(
    "rel",
    [
        "data/recorded/part2/runs/on_policy/grpo-seed-11/run_manifest.json",
        "data/recorded/band/band.json",
        "data/recorded/tiny/provenance.json",
        "data/tiny-base/BUILD.json",
    ],
)
def test_an_edited_recorded_file_is_found(copy, rel):
    _edit_first_number(copy / rel)
    assert recorded_digests.problems(copy) == [
        f"{rel}: its SHA-256 differs from {recorded_digests.LIST} (edited since it was recorded)"
    ]


def test_an_edited_file_under_a_provenance_list_is_named_twice(copy):
    listed = files.read_json(copy / "data/recorded/tiny/provenance.json")["files"]
    rel = next(r for r in sorted(listed) if r.endswith(".json"))
    _edit_first_number(copy / "data/recorded/tiny" / rel)
    found = recorded_digests.problems(copy)
    assert len(found) == 2 and all(f"tiny/{rel}" in line for line in found)


def test_an_added_or_removed_recorded_file_is_found(copy):
    (copy / "data/recorded/part2/analysis.json").unlink()
    (copy / "data/recorded/extra.json").write_text(json.dumps({"accuracy": 1.0}))
    assert recorded_digests.problems(copy) == [
        f"data/recorded/part2/analysis.json: listed in {recorded_digests.LIST} but missing",
        f"data/recorded/extra.json: not listed in {recorded_digests.LIST}",
    ]
