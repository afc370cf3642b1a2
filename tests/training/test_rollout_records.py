"""Every producer of a rollout record matches its declared type (training.rollout_records)."""

from __future__ import annotations

import pytest
import torch

from verifiable_grpo.core import model as model_lib
from verifiable_grpo.core.config import load_config
from verifiable_grpo.task import data
from verifiable_grpo.training import batched_rollout, objectives, rollout
from verifiable_grpo.training.rollout_records import key_problems

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def micro(learning_view_dir):
    config = load_config("smoke").replaced(model={"source": "random"}, tokens={"max_response": 8})
    policy, tokenizer = model_lib.load_base(config)
    examples = data.read_examples(learning_view_dir, "train")[:2]
    return config, policy, tokenizer, examples


def _check(group):
    assert key_problems(group, "group") == []
    for response in group["responses"]:
        assert key_problems(response, "sampled") == []


def test_both_samplers_and_the_advantage_step_produce_the_declared_records(micro):
    config, policy, tokenizer, examples = micro
    sampler = rollout.Sampler(policy, tokenizer, config, torch.Generator().manual_seed(0))
    one = rollout.sample_group(sampler, examples[0], 2, group_id="g")
    _check(one)
    sampler = rollout.Sampler(policy, tokenizer, config, torch.Generator().manual_seed(0))
    batched = batched_rollout.sample_groups(sampler, examples, 2, ["a", "b"])
    for group in batched:
        _check(group)
    for name in ("part1", "reinforce_pp"):
        for scored in objectives.batch_with_advantages(batched, objectives.OBJECTIVES[name]):
            assert key_problems(scored, "scored") == []


def test_a_record_that_drifts_from_its_type_is_named(micro):
    config, policy, tokenizer, examples = micro
    sampler = rollout.Sampler(policy, tokenizer, config, torch.Generator().manual_seed(0))
    group = rollout.sample_group(sampler, examples[0], 2, group_id="g")
    drifted = {**group, "extra": 1}
    del drifted["rewards"]
    assert key_problems(drifted, "group") == ["missing ['rewards']", "undeclared ['extra']"]
