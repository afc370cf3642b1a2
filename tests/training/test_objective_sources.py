"""Every registry entry names its paper, and the paper is on the references page."""

import re

import pytest

from verifiable_grpo.core.config import repo_root
from verifiable_grpo.training import objective_sources
from verifiable_grpo.training.objectives import OBJECTIVES

ANCHORS = set(
    re.findall(
        r"^\((ref-[a-z0-9-]+)\)=$", (repo_root() / "book" / "references.md").read_text(), re.M
    )
)


def test_every_registry_entry_has_a_source_and_no_stale_one():
    assert set(objective_sources.SOURCES) == set(OBJECTIVES)


@pytest.mark.parametrize("name", sorted(OBJECTIVES))
def test_each_source_is_an_anchor_of_the_references_page(name):
    source = objective_sources.source_of(name)
    assert source.anchor in ANCHORS, (
        f"{name}: {source.anchor} is not an anchor of book/references.md"
    )
    assert source.cite.strip() and source.takes.strip()


def test_an_unknown_name_is_refused():
    with pytest.raises(ValueError, match="unknown objective 'grpoo'"):
        objective_sources.source_of("grpoo")
