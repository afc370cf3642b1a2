"""Batch samplers: how one training step's groups are collected (the registry's BatchSampler axis).

A sampler asks a rollout source for fresh prompts and for responses to a prompt, and
returns the groups the update will use plus what collecting them cost. Requests that do
not depend on each other's rewards go to the source together (`draw_all`): a source with
`draw_many` decodes them in one padded batch, in request order then member order. It never sees a
model: the source does (the study wraps the policy and the verifier; tests use a fake,
deterministic source), so the rules below can be tested on hand-made rewards.

- plain: P prompts, G responses each, every group kept.
- dynamic (DAPO's dynamic sampling): keep only groups whose rewards vary; draw further
  generation batches of P fresh prompts until P such groups are collected, at most
  `max_generation_batches`, else stop with DynamicSamplingExhausted (fail closed: no
  step on a short batch). Every rollout not in the kept groups counts as discarded cost.
- aero (AERO, scaled to 4 slots): `exploration_rollouts` per prompt; prompts with no
  correct exploration rollout enter a shuffled round-robin that gives one more rollout at
  a time from a `rescue_budget` shared by the step, a prompt leaving at its first success;
  then each prompt's rollouts are curated (`aero_curate`) and the groups keep the
  success/observation counts of EVERY rollout drawn for their prompt (the posterior
  advantage of a one-rollout group needs them).

A group: {"group_id", "document_id", "responses", "rewards", "zero_variance",
"successes", "observations", "strategy"}; every response row carries "reward".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import torch

from verifiable_grpo.training.objectives import BatchSampler


class RolloutSource(Protocol):
    def prompts(self, count: int) -> list[dict]:
        """`count` fresh training examples (each with a "document_id")."""

    def draw(self, example: dict, count: int, group_id: str) -> list[dict]:
        """`count` scored responses to `example` (rows with "reward", "response_tokens")."""


def draw_all(source, requests: list[tuple[dict, int, str]]) -> list[list[dict]]:
    """The rows of every (example, count, group_id) request, in request order: one call to
    `source.draw_many` when the source has it (a batched source), else one draw each."""
    if not requests:
        return []
    many = getattr(source, "draw_many", None)
    found = many(requests) if many is not None else [source.draw(*r) for r in requests]
    if [len(rows) for rows in found] != [count for _, count, _ in requests]:
        raise ValueError("the rollout source returned another number of rows than requested")
    return found


class DynamicSamplingExhausted(RuntimeError):
    """Dynamic sampling could not fill the batch within its generation-batch cap."""


@dataclass
class Cost:
    generation_batches: int = 0
    rollouts_generated: int = 0
    rollouts_discarded: int = 0
    tokens_generated: int = 0
    tokens_discarded: int = 0

    def drew(self, rows: list[dict]) -> None:
        self.rollouts_generated += len(rows)
        self.tokens_generated += sum(int(r.get("response_tokens", 0)) for r in rows)

    def discarded(self, rows: list[dict]) -> None:
        self.rollouts_discarded += len(rows)
        self.tokens_discarded += sum(int(r.get("response_tokens", 0)) for r in rows)

    def as_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class Batch:
    groups: list[dict]  # what the update uses
    cost: Cost = field(default_factory=Cost)
    drawn: list[list[float]] = field(default_factory=list)  # rewards of every prompt drawn


def _rewards(rows: list[dict]) -> list[float]:
    return [float(r["reward"]) for r in rows]


def _group(group_id, example, rows, strategy, drawn=None) -> dict:
    drawn = rows if drawn is None else drawn
    rewards = _rewards(rows)
    drawn_rewards = _rewards(drawn)
    return {
        "group_id": group_id,
        "document_id": example["document_id"],
        "responses": rows,
        "rewards": rewards,
        "zero_variance": len(set(rewards)) == 1,
        "successes": int(sum(r == 1.0 for r in drawn_rewards)),
        "observations": len(drawn),
        "strategy": strategy,
    }


def _check_counts(prompts: int, group_size: int) -> None:
    if type(prompts) is not int or prompts < 1:
        raise ValueError(f"prompts per step must be a positive integer, got {prompts!r}")
    if type(group_size) is not int or group_size < 2:
        raise ValueError(f"group_size must be an integer >= 2, got {group_size!r}")


# --------------------------------------------------------------------------- plain
def plain_batch(source: RolloutSource, prompts: int, group_size: int, step: int) -> Batch:
    _check_counts(prompts, group_size)
    batch = Batch([])
    batch.cost.generation_batches = 1
    examples = source.prompts(prompts)
    ids = [f"step-{step:04d}/prompt-{position:02d}" for position in range(len(examples))]
    drawn = draw_all(source, [(e, group_size, g) for e, g in zip(examples, ids)])
    for example, group_id, rows in zip(examples, ids, drawn):
        batch.cost.drew(rows)
        batch.drawn.append(_rewards(rows))
        batch.groups.append(_group(group_id, example, rows, "plain"))
    return batch


# --------------------------------------------------------------------------- dynamic
def dynamic_batch(
    source: RolloutSource, prompts: int, group_size: int, step: int, max_generation_batches: int
) -> Batch:
    """Groups whose rewards vary, refilled batch by batch (see the module docstring)."""
    _check_counts(prompts, group_size)
    batch = Batch([])
    for number in range(max_generation_batches):
        batch.cost.generation_batches += 1
        examples = source.prompts(prompts)
        ids = [
            f"step-{step:04d}/batch-{number:02d}/prompt-{position:02d}"
            for position in range(len(examples))
        ]
        drawn = draw_all(source, [(e, group_size, g) for e, g in zip(examples, ids)])
        for example, group_id, rows in zip(examples, ids, drawn):
            batch.cost.drew(rows)
            batch.drawn.append(_rewards(rows))
            group = _group(group_id, example, rows, "dynamic")
            if not group["zero_variance"] and len(batch.groups) < prompts:
                batch.groups.append(group)
            else:  # constant rewards (no signal), or more eligible groups than slots
                batch.cost.discarded(rows)
        if len(batch.groups) == prompts:
            return batch
    raise DynamicSamplingExhausted(
        f"step {step}: dynamic sampling found {len(batch.groups)} of {prompts} groups whose "
        f"rewards vary in {max_generation_batches} generation batches "
        f"({batch.cost.rollouts_generated} rollouts drawn, all counted as cost); the step "
        "fails closed rather than train on a short batch. The policy's rewards are (almost) "
        "constant: start from a policy with mixed rewards, or pre-register a larger "
        "max_generation_batches in a new lock"
    )


# --------------------------------------------------------------------------- AERO
def _pick(count: int, generator: torch.Generator) -> int:
    return int(torch.randint(count, (1,), generator=generator))


def aero_curate(
    explore_rewards,
    rescue_rewards,
    rejection_k: int,
    exploration_rollouts: int,
    generator: torch.Generator,
) -> tuple[list[int], str]:
    """Which of a prompt's rollouts (exploration first, then rescues) enter the update.

    all wrong, rescued   -> one random initial failure + the rescue success ("rescued")
    0 < correct < half   -> every correct + rejection_k * correct random failures ("rejection")
    half <= correct < all-> all exploration rollouts ("all")
    all correct          -> one random rollout ("single_correct")
    all wrong, no rescue -> one random exploration failure ("single_wrong")
    Returns (indices into explore + rescue, strategy).
    """
    explore, rescue = [float(r) for r in explore_rewards], [float(r) for r in rescue_rewards]
    if len(explore) != exploration_rollouts:
        raise ValueError(
            f"AERO curation needs exactly {exploration_rollouts} exploration "
            f"rollouts, got {len(explore)}"
        )
    if any(r not in (0.0, 1.0) for r in explore + rescue):
        raise ValueError("AERO curation needs binary rewards (0 or 1)")
    correct = [i for i, r in enumerate(explore) if r == 1.0]
    wrong = [i for i, r in enumerate(explore) if r == 0.0]
    if rescue and correct:
        raise ValueError("only prompts with no correct exploration rollout are rescued")
    if 1.0 in rescue[:-1]:
        raise ValueError("a rescue stops at its first success")
    if not correct:
        if rescue and rescue[-1] == 1.0:
            return [wrong[_pick(len(wrong), generator)], len(explore) + len(rescue) - 1], "rescued"
        return [wrong[_pick(len(wrong), generator)]], "single_wrong"
    if len(correct) == len(explore):
        return [correct[_pick(len(correct), generator)]], "single_correct"
    if 2 * len(correct) < len(explore):
        keep = min(len(wrong), rejection_k * len(correct))
        order = torch.randperm(len(wrong), generator=generator).tolist()[:keep]
        return correct + sorted(wrong[i] for i in order), "rejection"
    return list(range(len(explore))), "all"


def aero_batch(
    source: RolloutSource,
    prompts: int,
    sampler: BatchSampler,
    step: int,
    generator: torch.Generator,
) -> Batch:
    """AERO's exploration, rescue round-robin and curation (see the module docstring)."""
    if sampler.kind != "aero":
        raise ValueError(f"aero_batch needs an aero sampler, got {sampler.kind!r}")
    _check_counts(prompts, 2)
    batch = Batch([])
    batch.cost.generation_batches = 1
    examples = source.prompts(prompts)
    ids = [f"step-{step:04d}/prompt-{p:02d}" for p in range(len(examples))]
    explored = draw_all(
        source,
        [(ex, sampler.exploration_rollouts, f"{gid}/explore") for ex, gid in zip(examples, ids)],
    )
    for rows in explored:
        batch.cost.drew(rows)
    rescues: list[list[dict]] = [[] for _ in examples]
    waiting = [p for p, rows in enumerate(explored) if all(r["reward"] == 0.0 for r in rows)]
    waiting = [waiting[i] for i in torch.randperm(len(waiting), generator=generator).tolist()]
    budget = sampler.rescue_budget
    while budget > 0 and waiting:
        # One round: one more rollout to each prompt still waiting, in the shuffled order,
        # while the budget lasts. A prompt's success only ends its own later rounds, so a
        # round's rollouts do not depend on each other and are drawn together.
        chosen = waiting[:budget]
        rows = draw_all(
            source, [(examples[p], 1, f"{ids[p]}/rescue-{len(rescues[p]):02d}") for p in chosen]
        )
        for p, (row,) in zip(chosen, rows):
            batch.cost.drew([row])
            budget -= 1
            rescues[p].append(row)
            if row["reward"] == 1.0:
                waiting.remove(p)
    for p, example in enumerate(examples):
        drawn = explored[p] + rescues[p]
        batch.drawn.append(_rewards(drawn))
        kept, strategy = aero_curate(
            _rewards(explored[p]),
            _rewards(rescues[p]),
            sampler.rejection_k,
            sampler.exploration_rollouts,
            generator,
        )
        if len(kept) > sampler.max_rollouts:
            raise ValueError(
                f"AERO kept {len(kept)} rollouts, more than its {sampler.max_rollouts} slots"
            )
        rows = [drawn[i] for i in kept]
        batch.cost.discarded([r for i, r in enumerate(drawn) if i not in kept])
        batch.groups.append(_group(ids[p], example, rows, strategy, drawn))
    return batch


def collect(
    source: RolloutSource,
    sampler: BatchSampler,
    prompts: int,
    group_size: int,
    step: int,
    generator: torch.Generator,
) -> Batch:
    """One step's batch under the registry's sampler."""
    if sampler.kind == "plain":
        return plain_batch(source, prompts, group_size, step)
    if sampler.kind == "dynamic":
        return dynamic_batch(source, prompts, group_size, step, sampler.max_generation_batches)
    if group_size != sampler.max_rollouts:
        raise ValueError(
            f"AERO pads every prompt to {sampler.max_rollouts} slots; the step's "
            f"group_size is {group_size}"
        )
    return aero_batch(source, prompts, sampler, step, generator)
