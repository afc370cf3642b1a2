"""The loaded profile is one typed, read-only object: its hash is the loaded mapping's (as
the plain dict of earlier code hashed it), a changed setting is a new profile, and nothing
in the package re-types a profile after loading."""

from __future__ import annotations

import copy
import dataclasses
import json
import pickle
import re
from pathlib import Path

import pytest
import yaml

from verifiable_grpo.core import config as cfg
from verifiable_grpo.core import config_schema
from verifiable_grpo.part1 import sweep
from verifiable_grpo.part2 import lock as lock_lib

SRC = Path(__file__).resolve().parents[2] / "src" / "verifiable_grpo"


def _as_dict_before(name: str) -> dict:
    """What load_config returned before it returned a Profile: the checked dict plus _path."""
    path = cfg.config_path(name)
    return {**config_schema.checked(cfg.profile_settings(path), str(path)), "_path": str(path)}


@pytest.mark.parametrize("name", cfg.known_profiles())
def test_hash_and_mapping_are_those_of_the_plain_dict(name):
    before = _as_dict_before(name)
    profile = cfg.load_config(name)
    assert profile.sha256 == cfg.config_hash(before) == cfg.config_hash(profile)
    assert profile == before and profile.as_dict() == before
    assert json.loads(json.dumps(profile)) == json.loads(json.dumps(before))
    assert yaml.safe_load(yaml.safe_dump(profile)) == before  # a settings file writes back
    assert profile.path == before["_path"]


def test_the_lock_pins_the_loaded_profile():
    lock = json.loads((cfg.repo_root() / "configs/part2/lock.json").read_text())
    base = cfg.load_config(lock["base_profile"])
    assert cfg.sections_hash(base, lock["base_sections"]) == lock["base_config_sha256"]


def test_every_edit_raises(smoke_config):
    edits = [
        lambda p: p.__setitem__("seed", 1),
        lambda p: p["grpo"].__setitem__("beta", 1),
        lambda p: p["grpo"].update(learning_rate=1.0),
        lambda p: p["model"].pop("source"),
        lambda p: p["exercise"]["group_sizes"].append(4),
        lambda p: p["exercise"]["group_sizes"].__setitem__(0, 4),
        lambda p: p.setdefault("x", 1),
        lambda p: p.clear(),
        lambda p: p["model"]["random_init"].__delitem__("seed"),
    ]
    before = smoke_config.as_dict()
    for edit in edits:
        with pytest.raises(TypeError, match="read-only"):
            edit(smoke_config)
    with pytest.raises(dataclasses.FrozenInstanceError):
        smoke_config.grpo = None
    with pytest.raises(dataclasses.FrozenInstanceError):
        smoke_config.grpo.learning_rate = 1.0
    assert smoke_config.as_dict() == before


def test_copies_and_pickles_stay_profiles(smoke_config):
    """A worker process receives the profile pickled: it arrives typed, read-only, equal."""
    for other in (pickle.loads(pickle.dumps(smoke_config)), copy.deepcopy(smoke_config)):
        assert type(other) is config_schema.Profile and other == smoke_config
        assert other.grpo == smoke_config.grpo and other.sha256 == smoke_config.sha256
        with pytest.raises(TypeError):
            other["grpo"]["group_size"] = 3
    plain = smoke_config.as_dict()
    plain["grpo"]["group_size"] = 3  # a fresh plain copy is the caller's to edit
    assert smoke_config["grpo"]["group_size"] != 3


def test_replaced_hashes_the_edited_mapping_as_the_dict_edit_did(smoke_config):
    changed = smoke_config.replaced(profile="other", grpo={"learning_rate": 3e-4})
    by_hand = smoke_config.as_dict()
    by_hand["profile"] = "other"
    by_hand["grpo"]["learning_rate"] = 3e-4
    assert changed.sha256 == cfg.config_hash(by_hand) != smoke_config.sha256
    assert changed.grpo.learning_rate == 3e-4 and changed.profile == "other"
    assert changed.grpo.group_size == smoke_config.grpo.group_size
    with pytest.raises(cfg.ConfigError, match="grpo.clip_epsilon"):
        smoke_config.replaced(grpo={"clip_epsilon": 2.0})
    with pytest.raises(cfg.ConfigError, match="grpo.learning_rat: unknown key"):
        smoke_config.replaced(grpo={"learning_rat": 1e-3})


def _sweep_setting_the_old_way(base: dict, setting) -> dict:
    """part1/sweep.setting_config as it edited a plain dict before profiles were frozen."""
    config = copy.deepcopy(base)
    grpo = config["grpo"]
    grpo.update(
        learning_rate=setting.learning_rate,
        iterations=setting.iterations,
        updates_per_rollout=setting.updates_per_rollout,
        group_size=setting.group_size,
    )
    grpo["interrupt_at"] = min(grpo["interrupt_at"], setting.iterations - 1)
    grpo["share_prompts"] = False
    return config


def test_sweep_settings_equal_the_dict_edits_they_replace():
    base = cfg.load_config("tiny")
    recorded = json.loads((cfg.repo_root() / "data/recorded/tiny-sweep/sweep.json").read_text())
    assert len(recorded["results"]) == len(sweep.SETTINGS)
    for setting, row in zip(sweep.SETTINGS, recorded["results"], strict=True):
        derived = sweep.setting_config(base, setting)
        old = _sweep_setting_the_old_way(base.as_dict(), setting)
        assert derived == old and derived.sha256 == cfg.config_hash(old), setting.name
        # The values the recorded run trained with (the rest of tiny.yaml moved on since:
        # checkpoints every 5 iterations, share_prompts declared, so its hashes did too).
        for key in ("learning_rate", "iterations", "updates_per_rollout", "group_size"):
            assert derived["grpo"][key] == row["config_grpo"][key], (setting.name, key)
            assert getattr(derived.grpo, key) == row["config_grpo"][key], (setting.name, key)
        assert derived.grpo.interrupt_at == row["config_grpo"]["interrupt_at"]
    assert base == cfg.load_config("tiny")  # the base is untouched


def test_study_runs_derive_their_profile_from_the_lock():
    lock = json.loads((cfg.repo_root() / "configs/part2/lock.json").read_text())
    regime, seed = next(iter(lock["regimes"])), lock["seeds"][0]
    run = lock_lib.run_config(lock, regime, seed)
    assert run.seed == seed and run.grpo.iterations == lock["budget"]["steps"]
    assert run.grpo.kl_coefficient == lock["budget"]["beta"]
    assert cfg.sections_hash(run, lock["base_sections"]) == lock["base_config_sha256"]


# Matches a call of the old re-typing entry point, however it is imported.
_RETYPE = re.compile(r"(?<![\w.])typed\(|config_schema\.typed\b|import[^\n]*\btyped\b")


def test_no_module_retypes_a_profile():
    """load_config builds the typed profile once; code passes it, never re-types a dict."""
    found = [
        f"{path.relative_to(SRC)}:{number}: {line.strip()}"
        for path in sorted(SRC.rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if _RETYPE.search(line)
    ]
    assert found == []
    assert not hasattr(config_schema, "typed")
