"""The records a rollout set passes between modules, as typed dictionaries.

They stay plain dicts (JSON in a learning record, no conversion on the hot path); these
types name their keys and value types for readers and type checkers, and the tests hold
every producer to them (both samplers, the advantage step), so a key added or dropped in
one place fails until the type says so too.

  GeneratedResponse  one decoded answer (rollout.generate, batched_rollout.generate_batch)
  SampledResponse    + its id and the verifier's verdict (a member of a group)
  SampledGroup       G answers to one prompt, with rewards (rollout.sample_group,
                     batched_rollout.sample_groups)
  ScoredGroup        + the objective's advantages (objectives.with_advantages and
                     batch_with_advantages): what an update consumes
"""

from __future__ import annotations

from typing import TypedDict


class GeneratedResponse(TypedDict):
    prompt_ids: list[int]
    response_ids: list[int]
    text: str
    finish_reason: str  # "eos" or "length"
    behaviour_logprobs: list[float]  # the sampler's log-prob of each response token
    tokenization_valid: bool
    undecodable_ids: list[int]
    response_tokens: int
    seconds: float
    greedy: bool
    kv_cache: bool
    policy_digest: str | None


class SampledResponse(GeneratedResponse):
    rollout_id: str  # "<group_id>/response-NN": consumed once
    verifier: dict  # task.verifier's verdict, "reward" among its keys


class SampledGroup(TypedDict):
    group_id: str
    document_id: str
    prompt_ids: list[int]
    policy_digest: str | None
    responses: list[SampledResponse]
    rewards: list[float]
    zero_variance: bool  # every reward equal: no gradient from this group


class ScoredGroup(SampledGroup):
    advantages: list[float]
    reward_mean: float
    reward_std: float | None  # None for a rule that does not scale


RECORD_TYPES = {
    "generated": GeneratedResponse,
    "sampled": SampledResponse,
    "group": SampledGroup,
    "scored": ScoredGroup,
}


def key_problems(record: dict, kind: str) -> list[str]:
    """What differs between a record's keys and its type's (empty: they agree)."""
    kind_type = RECORD_TYPES[kind]
    expected = set(kind_type.__required_keys__ | kind_type.__optional_keys__)
    found = set(record)
    problems = [f"missing {sorted(expected - found)}"] if expected - found else []
    return problems + ([f"undeclared {sorted(found - expected)}"] if found - expected else [])
