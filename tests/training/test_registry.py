"""The registry lists itself: every entry is classified for TRL and for Part I's loop (the
one refusal table, objective_refusals.REFUSED); growing `Objective` itself by a defaulted
top-level field moves no recorded hash and no lock, while TRL refuses an entry that sets
it; a new surrogate or baseline is one registered function plus its entry."""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch

from verifiable_grpo.core.config import load_config, resolve
from verifiable_grpo.part2 import lock as lock_lib
from verifiable_grpo.training import (
    baselines,
    objective_refusals,
    objectives,
    surrogates,
    trl_parity,
)
from verifiable_grpo.training.objectives import OBJECTIVES, AdvantageRule, Objective, Surrogate

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
    # The committed study declares its own arms; the lock file agrees with them.
    lock, _ = lock_lib.read_lock(lock_lib.LOCK_PATH)
    assert list(lock_lib.ARMS) == list(lock["arms"]) == lock_lib.read_pin()["choices"]["arms"]
    assert set(trl_parity.trl_arms(lock_lib.ARMS)) == set(lock_lib.ARMS)


def test_a_declared_list_refuses_an_unknown_or_repeated_name_and_a_list():
    assert objectives.declared_entries(("grpo", "cispo"), declared_by="t") == ("grpo", "cispo")
    with pytest.raises(ValueError, match="t: not in the objectives registry: grpo_nope"):
        objectives.declared_entries(("grpo", "grpo_nope"), declared_by="t")
    with pytest.raises(ValueError, match="distinct"):
        objectives.declared_entries(("grpo", "grpo"), declared_by="t")
    with pytest.raises(ValueError, match="tuple"):
        objectives.declared_entries(["grpo"], declared_by="t")


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


def _batch():
    """Two groups of two one-to-three-token responses, on policy (old == current)."""
    generator = torch.Generator().manual_seed(5)
    mask = torch.arange(3)[None, :] < torch.tensor([3, 1, 2, 3])[:, None]
    old = -0.5 - torch.rand(4, 3, dtype=torch.float64, generator=generator)
    return old, torch.tensor([1.0, -1.0, 0.5, -0.5], dtype=torch.float64), mask


def _gradient(entry, old, advantages, mask):
    current = old.clone().requires_grad_(True)
    objectives.objective_loss(
        entry,
        objectives.TokenLogProbs(current, old, mask),
        advantages,
        None,
        objectives.Normalisation(group_size=2),
    )[0].backward()
    return current.grad


def test_a_surrogate_is_one_decorated_function_plus_its_entry(monkeypatch):
    monkeypatch.setattr(surrogates, "SURROGATES", dict(surrogates.SURROGATES))

    @surrogates.register_surrogate("unclipped")
    def _unclipped(objective, batch, advantages):
        """PPO's ratio without its clip: -rho A."""
        ratio = torch.exp(batch.current - batch.old.detach())
        return torch.where(batch.mask, -ratio * advantages[:, None].detach(), 0.0), {}

    entry = objectives._entry("unclipped", "rho A, no clip", surrogate=Surrogate("unclipped"))
    old, advantages, mask = _batch()
    # On policy the ratio is 1 and PPO's clip cannot bind: the grpo arm's gradient (float64).
    ours, grpo = (_gradient(e, old, advantages, mask) for e in (entry, OBJECTIVES["grpo"]))
    torch.testing.assert_close(ours, grpo, rtol=1e-12, atol=0)
    assert ours.abs().max() > 0
    assert entry.mechanics()["surrogate"]["kind"] == "unclipped"
    assert objectives.format_registry([entry]).splitlines()[-1].startswith("unclipped ")
    with pytest.raises(ValueError, match="surrogate 'unclipped' is registered twice"):
        surrogates.register_surrogate("unclipped")(_unclipped)
    with pytest.raises(trl_parity.NotExpressibleInTRL, match="surrogate 'unclipped'"):
        trl_parity.trl_arm(entry)


def test_a_baseline_is_one_decorated_function_plus_its_entry(monkeypatch):
    monkeypatch.setattr(baselines, "BASELINES", dict(baselines.BASELINES))

    @baselines.register_baseline("group_max")
    def _group_max(objective, rewards, successes=None, observations=None):
        """r minus the group's best reward (every advantage <= 0)."""
        rewards = torch.as_tensor(rewards)
        best = rewards.max(dim=1, keepdim=True).values
        return rewards - best, best, None

    entry = objectives._entry(
        "group_max", "r - the group's best", advantages=AdvantageRule("group_max", None, None)
    )
    result = objectives.advantages(entry, [[1.0, 0.0, 0.5], [2.0, 2.0, 2.0]])
    assert result.values.tolist() == [[0.0, -1.0, -0.5], [0.0, 0.0, 0.0]]
    assert entry.advantages.describe() == "group_max" and not entry.advantages.batch_level
    with pytest.raises(ValueError, match="group_max advantage rule takes no correction"):
        AdvantageRule("group_max", 1, 1e-4)
