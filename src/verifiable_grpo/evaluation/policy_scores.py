"""Answers of a policy held in memory, scored: greedy and per-draw on chosen problems.

Part I's evaluation writes inference files first and scores them in a later stage; a
study or a sweep that trains many policies scores each one as soon as it is trained. Both
use the same jobs, draw seeds, batching and verifier (evaluation.evaluate), so a policy
gets the same answers either way. Labels are read by the caller and passed in only after
every answer exists.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from verifiable_grpo.core.config_schema import Profile
from verifiable_grpo.core.runfolder import INFERENCE_MODES
from verifiable_grpo.evaluation import evaluate, responses
from verifiable_grpo.task import data, prompts
from verifiable_grpo.training import rollout

ANSWER_KEYS = ("text", "finish_reason", "tokenization_valid", "response_tokens", "seconds")


@dataclass(frozen=True)
class Questions:
    """What a policy is asked: the (index, page) problems, `draws` sampled answers each
    with responses.draw_seed(seed_base, index, ...), each problem's prompt when a task
    renders its own (prompt_rows), and share_prompts as in responses.generate_answers."""

    selected: list[tuple[int, dict]]
    draws: int
    seed_base: int
    prompt_rows: list[list[int]] | None = None
    share_prompts: bool = False


@torch.no_grad()
def answer(policy, tokenizer, config: Profile, questions: Questions) -> dict[str, list[dict]]:
    """{"greedy": rows, "sample": rows} for the questions' problems: one greedy answer
    each and `questions.draws` sampled answers."""
    if policy.training:
        raise ValueError("scoring a policy needs it in eval mode (dropout off)")
    device = rollout.model_device(policy)
    selected, draws, seed_base = questions.selected, questions.draws, questions.seed_base
    prompt_rows = questions.prompt_rows
    if prompt_rows is None:
        prompt_rows = [
            prompts.prompt_ids(tokenizer, page["statement"], config) for _, page in selected
        ]
    found = {}
    for mode in INFERENCE_MODES:
        jobs = responses.response_jobs(selected, prompt_rows, mode, draws, seed_base)
        decoding = responses.Decoding(mode == "greedy", device, questions.share_prompts)
        answers = responses.generate_answers(policy, tokenizer, config, jobs, decoding)
        found[mode] = [job.row({k: a[k] for k in ANSWER_KEYS}) for job, a in zip(jobs, answers)]
    return found


def score(answers: dict[str, list[dict]], gold: dict[str, dict]) -> dict[str, list[dict]]:
    """The verifier's verdict on every answer of `answer`'s result."""
    return {mode: evaluate.score_rows(rows, gold) for mode, rows in answers.items()}


def score_test_set(policy, tokenizer, config: Profile, data_dir) -> tuple[list, dict]:
    """(selected test problems, scored rows per mode) on the evaluation's test subset, with
    its draws and seeds; the labels are read only after every answer exists."""
    ev = config.evaluation
    selected = evaluate.select_test_pages(data.read_test_inputs(data_dir), ev.problems)
    answers = answer(policy, tokenizer, config, Questions(selected, ev.draws, ev.seed_base))
    return selected, score(answers, data.read_gold(data_dir))
