"""The registry lists itself: every entry is classified for TRL and for Part I's loop (the
one refusal table, objective_refusals.REFUSED), and growing `Objective` itself by a
defaulted top-level field moves no recorded hash and no lock, while TRL refuses an entry
that sets it."""

from __future__ import annotations

import dataclasses
import json

import pytest

from verifiable_grpo.core.config import load_config, resolve
from verifiable_grpo.part2 import lock as lock_lib
from verifiable_grpo.training import objective_refusals, objectives, trl_parity
from verifiable_grpo.training.objectives import OBJECTIVES, Objective

# Part I's registry hash as pinned by tests/training/test_objectives.py.
PART1_SHA256 = "ef2bf299651059b242217fa904f06a7dc3a7a4503c51b6bff6ebe586d9852c38"


def _part1_refusal(entry) -> str | None:
    try:
        objectives.on_part1(entry)
    except ValueError as refused:
        return str(refused)
    return None


def unclassified(registry) -> list[str]:
    """Each entry whose behaviour on a backend disagrees with the refusal table."""
    checks = {"trl": trl_parity.refusal, "part1": _part1_refusal}
    problems = []
    for backend, refusal in checks.items():
        table = objective_refusals.refused_by(backend)
        for name, entry in registry.items():
            why = refusal(entry)
            if why is None and name in table:
                problems.append(f"{name}: runs on {backend} yet has a refusal row")
            elif why is not None and table.get(name, "\0") not in why:
                problems.append(f"{name}: refused by {backend} without its row ({why})")
    return problems


def test_every_entry_is_classified_on_every_backend():
    assert unclassified(OBJECTIVES) == []
    assert set(objective_refusals.REFUSED) <= set(OBJECTIVES)
    assert set(trl_parity.EXPRESSIBLE).isdisjoint(trl_parity.REFUSED)
    assert set(trl_parity.EXPRESSIBLE) | set(trl_parity.REFUSED) == set(OBJECTIVES)


def test_an_entry_classified_nowhere_fails_the_check():
    gmpo_like = dataclasses.replace(OBJECTIVES["gmpo"], name="gmpo_wide")
    dynamic = dataclasses.replace(OBJECTIVES["dapo"], name="dapo_again")
    grown = {**OBJECTIVES, "gmpo_wide": gmpo_like, "dapo_again": dynamic}
    assert unclassified(grown) == [
        f"gmpo_wide: refused by trl without its row ({trl_parity.refusal(gmpo_like)})",
        f"dapo_again: refused by part1 without its row ({_part1_refusal(dynamic)})",
    ]


def test_the_sections_hold_every_entry_once_in_registry_order():
    listed = [name for section in objectives.SECTIONS.values() for name in section]
    assert listed == list(OBJECTIVES)
    assert len(objectives.STUDY_ARMS) == 5 and len(objectives.NEWER) == 9
    assert lock_lib.ARMS == objectives.STUDY_ARMS == tuple(trl_parity.trl_arms())


def _grown():
    """Objective grown by a defaulted top-level field, and the registry rebuilt with it."""
    grown = dataclasses.make_dataclass(
        "ObjectiveGrown", [("entropy_bonus", float, 0.0)], bases=(Objective,), frozen=True
    )
    registry = {
        name: grown(**{f.name: getattr(entry, f.name) for f in dataclasses.fields(entry)})
        for name, entry in OBJECTIVES.items()
    }
    return grown, registry


def test_a_top_level_field_with_a_default_changes_no_recorded_hash(monkeypatch):
    grown, registry = _grown()
    assert {n: e.sha256() for n, e in registry.items()} == {
        n: e.sha256() for n, e in OBJECTIVES.items()
    }
    monkeypatch.setattr(objectives, "OBJECTIVES", registry)
    # Part I's objective as a profile builds it, and Part II's committed lock (what
    # `family lock --check` verifies), both from the grown registry.
    built = objectives.objective_from_config(load_config("tiny"))
    assert isinstance(built, grown) and built.sha256() == PART1_SHA256
    committed = json.loads(resolve(lock_lib.LOCK_PATH).read_text())
    assert lock_lib.lock_differences(committed) == []
    bonus = dataclasses.replace(registry["grpo"], name="grpo_bonus", entropy_bonus=0.1)
    assert bonus.mechanics()["entropy_bonus"] == 0.1 and bonus.sha256() != registry["grpo"].sha256()


def test_trl_refuses_a_mechanic_it_does_not_map_top_level_or_nested():
    _, registry = _grown()
    assert trl_parity.trl_arm(registry["grpo"]) == trl_parity.trl_arm(OBJECTIVES["grpo"])
    bonus = dataclasses.replace(registry["grpo"], name="grpo_bonus", entropy_bonus=0.1)
    surrogate = dataclasses.make_dataclass(
        "SurrogateGrown",
        [("delta", float | None, None)],
        bases=(objectives.Surrogate,),
        frozen=True,
    )
    two_sided = dataclasses.replace(
        OBJECTIVES["grpo"], name="two_sided", surrogate=surrogate(delta=4.0)
    )
    for entry, axis in ((bonus, "entropy_bonus"), (two_sided, "surrogate.delta")):
        with pytest.raises(trl_parity.NotExpressibleInTRL) as refused:
            trl_parity.trl_arm(entry)
        message = str(refused.value)
        assert message == (
            f"objective {entry.name}: TRL {trl_parity.TRL_VERSION}'s GRPOTrainer has no "
            f"mapping here for {axis}"
        )
