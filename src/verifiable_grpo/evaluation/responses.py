"""The responses an evaluation generates: one job per (problem, draw), answered in order.

A job names the problem, its prompt, the draw and the draw's fixed seed (the same for every
policy); the answers come one at a time or in batches, each sampled row with its own
generator, so a row's answer does not depend on its batch. Part I's staged evaluation
(evaluate.py) and the in-memory scoring of studies and sweeps (policy_scores.py) both
generate through here, so a policy gets the same answers either way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch


def draw_seed(seed_base: int, problem_index: int, draws: int, draw: int) -> int:
    """Fixed per-(problem, draw) seed, identical for every policy."""
    if not 0 <= draw < draws:
        raise ValueError(f"draw {draw} outside 0..{draws - 1}")
    return seed_base + problem_index * draws + draw


# Responses decoded together when sampling.batched (bounds the batch's memory).
EVALUATION_BATCH_ROWS = 64


def _answer(out: dict) -> dict:
    return {
        key: out[key]
        for key in ("text", "finish_reason", "tokenization_valid", "response_tokens", "seconds")
    } | {"response_ids": [int(t) for t in out["response_ids"]]}


def _respond(model, tokenizer, ids, config, generator, greedy):
    from verifiable_grpo.training import rollout

    sampler = rollout.Sampler(model, tokenizer, config, generator)
    return _answer(rollout.generate(sampler, ids, greedy=greedy))


@dataclass(frozen=True)
class ResponseJob:
    """One response to generate: which problem, its prompt, which draw, and the draw's seed
    (None for the greedy response)."""

    problem_index: int  # index in the test-input file
    page: dict  # the test input (document_id, population, statement)
    prompt_ids: list[int]
    draw: int
    seed: int | None

    def row(self, answer: dict) -> dict:
        """The inference-file row of this job's answer (keys in the files' order)."""
        return {
            "document_id": self.page["document_id"],
            "population": self.page["population"],
            "problem_index": self.problem_index,
            "draw": self.draw,
            "seed": self.seed,
            **answer,
        }


def response_jobs(selected, prompt_ids, mode: str, draws: int, seed_base: int) -> list[ResponseJob]:
    """Every response of a mode, in order: problem by problem, draw by draw."""
    count = 1 if mode == "greedy" else draws
    return [
        ResponseJob(
            index,
            page,
            ids,
            draw,
            None if mode == "greedy" else draw_seed(seed_base, index, draws, draw),
        )
        for (index, page), ids in zip(selected, prompt_ids)
        for draw in range(count)
    ]


@dataclass(frozen=True)
class Decoding:
    """How generate_answers decodes: greedy or sampled, on which device, and whether the
    draws of one problem share its prompt."""

    greedy: bool
    device: Any
    share_prompts: bool = False


def generate_answers(model, tokenizer, config, jobs, decoding: Decoding, after_each=None):
    """The answers to `jobs` (as response_jobs gives them), in order: one at a time, or
    EVALUATION_BATCH_ROWS at a time when sampling.batched (each sampled row keeps its own
    per-draw generator either way, so a row's answer does not depend on its batch).
    `after_each(job, answer)` runs after every answer (progress, interrupts).
    share_prompts (batched, KV cache): the draws of one problem read its prompt once; the
    answers are those of the unshared path up to float rounding (another order of sums)."""
    from verifiable_grpo.training import batched_rollout

    greedy, device, share_prompts = decoding.greedy, decoding.device, decoding.share_prompts
    batched = config.sampling.batched
    size = EVALUATION_BATCH_ROWS if batched else 1
    answers = []
    for start in range(0, len(jobs), size):
        chunk = jobs[start : start + size]
        generators = [
            None if job.seed is None else torch.Generator(device=device).manual_seed(job.seed)
            for job in chunk
        ]
        if batched:
            found = [
                _answer(out)
                for out in batched_rollout.generate_batch(
                    batched_rollout.Sampler(
                        model, tokenizer, config, None if greedy else generators
                    ),
                    [job.prompt_ids for job in chunk],
                    greedy=greedy,
                    share_prompts=share_prompts and config.sampling.use_kv_cache,
                )
            ]
        else:
            found = [_respond(model, tokenizer, chunk[0].prompt_ids, config, generators[0], greedy)]
        for job, answer in zip(chunk, found):
            answers.append(answer)
            if after_each is not None:
                after_each(job, answer)
    return answers
