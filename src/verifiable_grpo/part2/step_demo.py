"""How far 30 steps move the tiny policy's LoRA adapters, at three learning rates.

The step-power simulation assumes that a smaller learning rate shrinks the policy's movement
in proportion. This demonstration measures it on the tiny base with the card's adapter
(r16, alpha 32, all block projections, B = 0 at the start): a fixed policy-gradient batch
(8 training problems with their canonical answers, advantages +1 and -1 alternating) is
optimised for 30 Adam steps at each rate, and the change of the answers' token log-probs is
measured. Everything is seeded, so a rerun gives the same movement up to the CPU's kernels.
"""

from __future__ import annotations

import copy

import torch

from verifiable_grpo.core import model as model_lib
from verifiable_grpo.core.config import load_config, resolve
from verifiable_grpo.core.config_schema import Profile
from verifiable_grpo.part2 import lock as lock_lib
from verifiable_grpo.part2 import study
from verifiable_grpo.task import data, prompts, statements, verifier
from verifiable_grpo.training import batched_scoring


def _batch(config: Profile, tokenizer, problems: int, data_seed: int) -> dict:
    rows = []
    for problem, _ in data.generate_problem_set(data_seed)["train"][:problems]:
        statement = statements.render_statement(problem, 0)
        answer = statements.canonical_response(verifier.compute_final_stock(problem))
        row = prompts.completion_row(tokenizer, statement, answer, config)
        cut = row["prompt_length"]
        rows.append(
            {
                "prompt_ids": row["input_ids"][:cut],
                "response_ids": row["input_ids"][cut:],
                "behaviour_logprobs": [0.0] * row["response_tokens"],
            }
        )
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    return batched_scoring.rollout_batch(rows, pad, "cpu")


def _logprobs(policy, batch: dict) -> torch.Tensor:
    logits = batched_scoring.response_logits(policy, batch)
    return batched_scoring.token_logprobs(logits, batch["targets"])


def lora_movement(
    rates=(3e-4, 3e-5, 6e-6), steps: int = 30, problems: int = 8, seed: int = 11
) -> list[dict]:
    """Per rate: the mean |change| of the answers' token log-probs after `steps` Adam steps,
    and the mean signed change along the advantages (how far the objective moved)."""
    config = load_config("tiny")
    base, _ = model_lib.reload_policy(resolve(lock_lib.WARM_START), config)
    base.eval()
    tokenizer = model_lib.load_tokenizer(config)
    batch = _batch(config, tokenizer, problems, typed_seed(config))
    mask = batch["response_mask"].float()
    advantages = torch.tensor([1.0 if i % 2 == 0 else -1.0 for i in range(problems)])
    with torch.no_grad():
        before = _logprobs(base, batch)
    rows = []
    for rate in rates:
        policy = copy.deepcopy(base)
        study.attach_adapters(
            policy, {"trainable": "lora", "lora": dict(lock_lib.LORA_DEFAULTS)}, seed
        )
        trained = [p for p in policy.parameters() if p.requires_grad]
        optimizer = torch.optim.Adam(trained, lr=rate)
        for _ in range(steps):
            per_answer = (_logprobs(policy, batch) * mask).sum(1) / mask.sum(1)
            loss = -(advantages * per_answer).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        with torch.no_grad():
            change = (_logprobs(policy, batch) - before) * mask
        per_answer = change.sum(1) / mask.sum(1)
        rows.append(
            {
                "rate": rate,
                "mean_abs_change": float(change.abs().sum() / mask.sum()),
                "objective_change": float((advantages * per_answer).mean()),
            }
        )
    return rows


def typed_seed(config: Profile) -> int:
    """The data seed of the profile (the study's training problems)."""
    return config.data.seed
