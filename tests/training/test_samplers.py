"""The batch samplers on a fake, scripted rollout source: dynamic sampling's refill loop,
cap and cost; AERO's rescue round-robin, curation rules and posterior counts."""

from __future__ import annotations

import pytest
import torch

from verifiable_grpo.training import objectives, samplers
from verifiable_grpo.training.objectives import OBJECTIVES, BatchSampler


class ScriptedSource:
    """Prompts p0, p1, ... in order; each prompt's rewards come from its script in order
    (the last value repeats once the script is used up). Every response is 3 tokens."""

    def __init__(self, scripts):
        self.scripts = {k: list(v) for k, v in scripts.items()}
        self.next_prompt = 0
        self.drawn: list[tuple[str, str]] = []

    def prompts(self, count):
        chosen = [{"document_id": f"p{self.next_prompt + i}"} for i in range(count)]
        self.next_prompt += count
        return chosen

    def draw(self, example, count, group_id):
        script = self.scripts.setdefault(example["document_id"], [0.0])
        rows = []
        for i in range(count):
            reward = script.pop(0) if len(script) > 1 else script[0]
            self.drawn.append((example["document_id"], group_id))
            rows.append({"reward": reward, "response_tokens": 3, "rollout_id": f"{group_id}/{i}"})
        return rows


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


# --------------------------------------------------------------------------- plain, dynamic
def test_plain_keeps_every_group_and_counts_its_cost():
    source = ScriptedSource({"p0": [1.0, 0.0], "p1": [1.0]})
    batch = samplers.collect(source, BatchSampler(), 2, 4, step=0, generator=_gen())
    assert [g["rewards"] for g in batch.groups] == [[1.0, 0.0, 0.0, 0.0], [1.0] * 4]
    assert [g["zero_variance"] for g in batch.groups] == [False, True]
    assert batch.cost.as_dict() == {
        "generation_batches": 1,
        "rollouts_generated": 8,
        "rollouts_discarded": 0,
        "tokens_generated": 24,
        "tokens_discarded": 0,
    }


def test_dynamic_sampling_refills_until_enough_groups_vary():
    # batch 0: p0 varies, p1 constant; batch 1: p2 constant, p3 varies -> done after 2.
    source = ScriptedSource({"p0": [1.0, 0.0], "p1": [0.0], "p2": [1.0], "p3": [0.0, 1.0]})
    batch = samplers.collect(source, OBJECTIVES["dapo"].sampler, 2, 4, 7, _gen())
    assert [g["document_id"] for g in batch.groups] == ["p0", "p3"]
    assert batch.groups[1]["group_id"] == "step-0007/batch-01/prompt-01"
    assert not any(g["zero_variance"] for g in batch.groups)
    assert batch.cost.as_dict() == {
        "generation_batches": 2,
        "rollouts_generated": 16,
        "rollouts_discarded": 8,
        "tokens_generated": 48,
        "tokens_discarded": 24,
    }
    assert source.next_prompt == 4  # refills use fresh prompts


def test_dynamic_sampling_discards_eligible_groups_beyond_the_batch():
    source = ScriptedSource({f"p{i}": [1.0, 0.0] for i in range(4)})
    batch = samplers.dynamic_batch(source, 3, 2, 0, max_generation_batches=10)
    assert len(batch.groups) == 3 and batch.cost.generation_batches == 1
    source = ScriptedSource({"p0": [1.0, 0.0], "p1": [0.0], "p2": [1.0, 0.0], "p3": [1.0, 0.0]})
    batch = samplers.dynamic_batch(source, 2, 2, 0, max_generation_batches=10)
    assert [g["document_id"] for g in batch.groups] == ["p0", "p2"]
    assert batch.cost.rollouts_discarded == 4  # p1 (constant) and p3 (no slot left)


def test_dynamic_sampling_fails_closed_after_its_cap():
    source = ScriptedSource({"p0": [1.0, 0.0]})  # every other prompt is all wrong
    with pytest.raises(
        samplers.DynamicSamplingExhausted,
        match=r"found 1 of 4 groups whose rewards vary in 10 generation batches "
        r"\(160 rollouts drawn",
    ):
        samplers.collect(source, OBJECTIVES["dapo"].sampler, 4, 4, 0, _gen())
    assert source.next_prompt == 40


# --------------------------------------------------------------------------- AERO curation
@pytest.mark.parametrize(
    "explore, rescue, strategy, kept_rewards",
    [
        ([1, 0, 1], [], "all", [1, 0, 1]),
        ([1, 1, 0], [], "all", [1, 1, 0]),
        ([1, 0, 0], [], "rejection", [1, 0]),
        ([1, 1, 1], [], "single_correct", [1]),
        ([0, 0, 0], [], "single_wrong", [0]),
        ([0, 0, 0], [0, 0, 0, 0], "single_wrong", [0]),
        ([0, 0, 0], [0, 1], "rescued", [0, 1]),
        ([0, 0, 0], [1], "rescued", [0, 1]),
    ],
)
def test_aero_curation_rules(explore, rescue, strategy, kept_rewards):
    kept, found = samplers.aero_curate(explore, rescue, 1, 3, _gen())
    drawn = explore + rescue
    assert found == strategy and [drawn[i] for i in kept] == kept_rewards
    if strategy == "rescued":  # exactly one initial failure plus the rescue success
        assert kept[0] < 3 and kept[1] == len(drawn) - 1


def test_aero_curation_refuses_what_it_cannot_curate():
    with pytest.raises(ValueError, match="exactly 3 exploration rollouts"):
        samplers.aero_curate([1, 0], [], 1, 3, _gen())
    with pytest.raises(ValueError, match="binary rewards"):
        samplers.aero_curate([1, 0.5, 0], [], 1, 3, _gen())
    with pytest.raises(ValueError, match="first success"):
        samplers.aero_curate([0, 0, 0], [1, 1], 1, 3, _gen())
    with pytest.raises(ValueError, match="only prompts with no correct"):
        samplers.aero_curate([1, 0, 0], [1], 1, 3, _gen())


def test_aero_rescue_is_a_round_robin_with_a_shared_budget():
    # p0 and p1 all wrong in exploration; p1's second rescue succeeds; p0 never does.
    source = ScriptedSource(
        {"p0": [0.0], "p1": [0.0, 0.0, 0.0, 0.0, 1.0], "p2": [1.0, 0.0, 1.0], "p3": [1.0]}
    )
    batch = samplers.collect(source, OBJECTIVES["aero"].sampler, 4, 4, 0, _gen(0))
    rescues = [d for d, g in source.drawn if "rescue" in g]
    # 4 rescue rollouts alternate between the two waiting prompts (shuffled order); p1
    # stops at its first success (its 2nd), p0 takes what is left of the budget.
    assert len(rescues) == 4 and rescues.count("p1") == 2 and rescues.count("p0") == 2
    assert rescues[:2] in (["p0", "p1"], ["p1", "p0"])
    by_id = {g["document_id"]: g for g in batch.groups}
    assert (by_id["p1"]["strategy"], by_id["p1"]["rewards"]) == ("rescued", [0.0, 1.0])
    assert (by_id["p1"]["successes"], by_id["p1"]["observations"]) == (1, 5)
    assert (by_id["p0"]["strategy"], by_id["p0"]["rewards"]) == ("single_wrong", [0.0])
    assert (by_id["p0"]["successes"], by_id["p0"]["observations"]) == (0, 5)
    assert by_id["p2"]["strategy"] == "all" and by_id["p2"]["rewards"] == [1.0, 0.0, 1.0]
    assert (by_id["p3"]["strategy"], by_id["p3"]["observations"]) == ("single_correct", 3)
    kept = sum(len(g["rewards"]) for g in batch.groups)
    assert batch.cost.rollouts_generated == 16 and kept == 7
    assert batch.cost.rollouts_discarded == 16 - kept


def test_aero_advantages_follow_the_reference_tables():
    aero = OBJECTIVES["aero"]
    mixed = objectives.advantages(aero, torch.tensor([[1.0, 0.0, 1.0]], dtype=torch.float64))
    assert mixed.values[0].tolist() == pytest.approx([0.57725, -1.1545, 0.57725], abs=1e-4)
    pair = objectives.advantages(aero, torch.tensor([[1.0, 0.0]], dtype=torch.float64))
    assert pair.values[0].tolist() == pytest.approx([0.70701, -0.70701], abs=1e-5)
    one = objectives.advantages(aero, torch.tensor([[0.0]], dtype=torch.float64), [0], [7])
    assert one.values.item() == pytest.approx(-0.35344, abs=1e-5)


def test_aero_is_deterministic_given_its_generator():
    scripts = {"p0": [0.0], "p1": [0.0], "p2": [0.0], "p3": [1.0, 0.0, 0.0]}
    first = samplers.collect(ScriptedSource(scripts), OBJECTIVES["aero"].sampler, 4, 4, 0, _gen(5))
    again = samplers.collect(ScriptedSource(scripts), OBJECTIVES["aero"].sampler, 4, 4, 0, _gen(5))
    assert [g["responses"] for g in first.groups] == [g["responses"] for g in again.groups]
    with pytest.raises(ValueError, match="pads every prompt to 4 slots"):
        samplers.collect(ScriptedSource(scripts), OBJECTIVES["aero"].sampler, 4, 3, 0, _gen())


class BatchedSource(ScriptedSource):
    """The scripted source with draw_many: records the size of every batch it decodes."""

    def __init__(self, scripts):
        super().__init__(scripts)
        self.batches: list[int] = []

    def draw_many(self, requests):
        self.batches.append(sum(count for _, count, _ in requests))
        return [self.draw(*request) for request in requests]


def test_independent_requests_are_drawn_as_one_batch():
    scripts = {"p0": [0.0], "p1": [0.0, 0.0, 0.0, 0.0, 1.0], "p2": [1.0, 0.0, 1.0], "p3": [1.0]}
    plain = BatchedSource({"p0": [1.0, 0.0]})
    samplers.collect(plain, BatchSampler(), 3, 4, 0, _gen())
    assert plain.batches == [12]  # every prompt's group together
    dynamic = BatchedSource({"p0": [1.0, 0.0], "p3": [0.0, 1.0]})
    samplers.collect(dynamic, OBJECTIVES["dapo"].sampler, 2, 4, 0, _gen())
    assert dynamic.batches == [8, 8]  # one batch per generation batch
    # AERO: the exploration together, then one batch per rescue round (two prompts wait;
    # the budget of 4 gives two rounds of 2), and the same groups as one-at-a-time drawing.
    batched = BatchedSource(scripts)
    together = samplers.collect(batched, OBJECTIVES["aero"].sampler, 4, 4, 0, _gen(0))
    assert batched.batches == [12, 2, 2]
    alone = samplers.collect(ScriptedSource(scripts), OBJECTIVES["aero"].sampler, 4, 4, 0, _gen(0))
    assert [g["responses"] for g in together.groups] == [g["responses"] for g in alone.groups]


def test_a_source_returning_the_wrong_number_of_rows_is_refused():
    class Short(ScriptedSource):
        def draw_many(self, requests):
            return [self.draw(example, count - 1, group) for example, count, group in requests]

    with pytest.raises(ValueError, match="another number of rows than requested"):
        samplers.collect(Short({}), BatchSampler(), 2, 4, 0, _gen())
