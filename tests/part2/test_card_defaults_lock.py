"""The card-defaults sensitivity (part2/card_defaults_lock): declared before it runs,
pinned like every lock, each arm differing from its committed counterpart in exactly the
choice it tests, and its command a valid `family study` under that lock."""

import copy
import shlex

import pytest

from verifiable_grpo import cli
from verifiable_grpo.core.config import ConfigError
from verifiable_grpo.part2 import card_defaults_lock as sensitivity
from verifiable_grpo.part2 import lock as lock_lib
from verifiable_grpo.training import objectives, trl_parity


def test_the_sensitivity_lock_is_pinned_and_verifies():
    lock, sha = lock_lib.read_lock(sensitivity.PATH)
    assert sha == sensitivity.PINNED_SHA256 == lock_lib.read_pin(sensitivity.PATH)["lock_sha256"]
    assert lock == sensitivity.build()
    lock_lib.check_lock(lock, path=sensitivity.PATH)
    committed, _ = lock_lib.read_lock()
    for key in ("seeds", "regimes", "budget", "evaluation", "analysis", "warm_start"):
        assert lock[key] == committed[key]  # only the arms differ
    for arm in ("grpo", "gspo"):  # the committed arms, unchanged
        assert lock["arms"][arm] == committed["arms"][arm]
    edited = copy.deepcopy(lock)
    edited["arms"].pop("gspo_paper")
    with pytest.raises(ConfigError, match="arms.gspo_paper"):
        lock_lib.check_lock(edited, path=sensitivity.PATH)


def test_each_arm_changes_only_the_choice_it_tests():
    grpo, gspo = (objectives.get_objective(n).mechanics() for n in ("grpo", "gspo"))
    token = objectives.get_objective("dapo_token").mechanics()
    paper = objectives.get_objective("gspo_paper")
    assert {k for k in token if token[k] != grpo.get(k)} == {"aggregation"}
    assert {k for k in paper.mechanics() if paper.mechanics()[k] != gspo.get(k)} == {"clip"}
    assert trl_parity.trl_arm(objectives.get_objective("dapo_token")).config["loss_type"] == "dapo"
    fields = trl_parity.trl_arm(paper).config
    assert (fields["epsilon"], fields["epsilon_high"]) == (3e-4, 4e-4)
    assert fields["importance_sampling_level"] == "sequence"


def test_the_declared_command_and_its_duration():
    args = cli.build_parser().parse_args(shlex.split(sensitivity.COMMAND)[3:])
    assert (args.family, args.lock, args.backend) == ("study", sensitivity.PATH, "ours")
    lock, _ = lock_lib.read_lock(args.lock)
    for regime in lock["regimes"]:
        for arm in lock["arms"]:
            lock_lib.check_request(lock, arm, lock["seeds"][0], regime)
    minutes = sensitivity.expected_seconds() / 60
    assert 0 < minutes < 24 * 60
