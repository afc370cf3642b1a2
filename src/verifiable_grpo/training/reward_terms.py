"""Reward terms: what a response earns, one declared function per term, kept apart.

A response's reward is a weighted sum of terms, and each term is one registered function
`term(text, finish_reason, example, template) -> float` in [0, 1], with its declared
weight beside it. A run logs every term's mean apart (training/grpo_record.py), so a
reader can see whether a gain came from the answers or from the format.

- answer (weight 1): the strict verifier's 0/1 on the final answer (after the thinking
  block under the think-then-answer template; task/thinking_template.py);
- format (weight 0.1, small on purpose: the format must never be worth more than a right
  answer): 1 for exactly one well-formed, non-empty, closed thinking block at the start,
  followed by exactly one parseable JSON answer and EOS, whatever the number.

Adding a term is one decorated function and its test (book/how-to-extend.md, "Add a
reward term"). A profile's grpo.reward picks a declared tuple of terms (TERMS_OF), and a
study's declaration names the terms it uses, so a new term changes no recorded run.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from verifiable_grpo.task import thinking_template
from verifiable_grpo.task.thinking_template import CLOSE, OPEN
from verifiable_grpo.task.verifier import parse_generated_json
from verifiable_grpo.training.control_rewards import with_rewards


@dataclass(frozen=True)
class RewardTerm:
    """A registered term: its function and its declared weight."""

    function: Callable[[str, str, dict, str], float]
    weight: float


REWARD_TERMS: dict[str, RewardTerm] = {}
# grpo.reward -> the terms a response's reward sums ("verifier" is the answer term on
# the whole response, which is what the answer term reads under answer-only).
TERMS_OF = {"verifier": ("answer",), "answer+format": ("answer", "format")}


def register_reward_term(name: str, weight: float):
    """Register `function(text, finish_reason, example, template) -> float in [0, 1]` as
    the reward term `name` with its declared weight (the way surrogates are registered)."""

    def register(function):
        if name in REWARD_TERMS:
            raise ValueError(f"reward term {name!r} is registered twice")
        if not 0.0 < weight <= 1.0:
            raise ValueError(f"reward term {name!r}: weight must be in (0, 1], got {weight}")
        REWARD_TERMS[name] = RewardTerm(function, float(weight))
        return function

    return register


@register_reward_term("answer", weight=1.0)
def answer_reward(text: str, finish_reason: str, example: dict, template: str) -> float:
    """The strict verifier's 0/1 on the final answer."""
    row = {"text": text, "finish_reason": finish_reason, "tokenization_valid": True}
    return float(thinking_template.score(row, example["problem"], template)["reward"])


# One block at the very start, then the rest; DOTALL so the working may span lines. The
# checks after the match (non-empty, no second tag, a parseable answer) are what an
# innocent-looking regex alone gets wrong.
_BLOCK_THEN_ANSWER = re.compile(
    r"\s*" + re.escape(OPEN) + r"(?P<working>.*?)" + re.escape(CLOSE) + r"(?P<answer>.*)",
    flags=re.DOTALL,
)


def well_formed(text: str, finish_reason: str) -> bool:
    """Exactly one closed, non-empty thinking block at the start, then exactly one
    parseable JSON answer (any number), ended on EOS."""
    if text.count(OPEN) != 1 or text.count(CLOSE) != 1:
        return False
    match = _BLOCK_THEN_ANSWER.fullmatch(text)
    if match is None or not match["working"].strip():
        return False
    return parse_generated_json(match["answer"], finish_reason)["valid"]


@register_reward_term("format", weight=0.1)
def format_reward(text: str, finish_reason: str, example: dict, template: str) -> float:
    """1 for the think-then-answer shape (well_formed), else 0; never for answer-only."""
    if template != thinking_template.THINK_THEN_ANSWER:
        return 0.0
    return 1.0 if well_formed(text, finish_reason) else 0.0


def term_values(row: dict, example: dict, template: str, names: tuple[str, ...]) -> dict:
    """{term: value} of one response row (text, finish_reason) under `template`."""
    unknown = [n for n in names if n not in REWARD_TERMS]
    if unknown:
        raise ValueError(f"unknown reward terms {unknown}; registered: {sorted(REWARD_TERMS)}")
    return {
        n: REWARD_TERMS[n].function(row["text"], row["finish_reason"], example, template)
        for n in names
    }


def total(values: dict[str, float]) -> float:
    """The response's reward: each term times its declared weight, summed."""
    return sum(REWARD_TERMS[name].weight * value for name, value in values.items())


def rewarded(groups: list[dict], config, examples: list[dict]) -> list[dict]:
    """The sampled groups under the profile's grpo.reward: unchanged for the verifier
    (every earlier run's records stay as they were); for answer+format each response gets
    its terms ("reward_terms"), the group the weighted totals as rewards, the verifier's
    whole-response rewards kept beside them, and zero_variance recomputed."""
    kind = config.grpo.reward
    if kind == "verifier":
        return groups
    if "/" not in config.data.prompt:
        raise ValueError("grpo.reward answer+format needs a FAMILY/TEMPLATE data.prompt")
    template = config.data.prompt.split("/")[1]
    by_id = {e["document_id"]: e for e in examples}
    out = []
    for group in groups:
        example = by_id[group["document_id"]]
        rewards = []
        for row in group["responses"]:
            row["reward_terms"] = term_values(row, example, template, TERMS_OF[kind])
            rewards.append(total(row["reward_terms"]))
        out.append(with_rewards(group, rewards, kind))
    return out
