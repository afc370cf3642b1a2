"""StockArithmetic-v1 behind the loop exercise's four methods, with the strict verifier.

A loop written for micro_task.MicroTask (prompts, sample, reward, logits) runs unchanged
on a real policy through this class: the prompts are the chat-formatted problems
(prompts.prompt_ids), sampling is rollout.generate (temperature 1, KV cache, old log-probs
captured from the logits each token was drawn from), the reward is chapter 1's verifier
(verifier.score_generated_json on the decoded text) and the logits come from one
teacher-forced float32 forward pass (core.scoring), as the training loop computes them.
"""

from __future__ import annotations

import torch

from verifiable_grpo.core import scoring
from verifiable_grpo.core.config_schema import Profile
from verifiable_grpo.task import prompts as prompt_lib
from verifiable_grpo.task import verifier
from verifiable_grpo.training import rollout


class StockTask:
    """examples: learning examples (statement + problem); seed: the sampling generator's;
    device: the policy's (the generator must live there)."""

    def __init__(
        self, tokenizer, examples: list[dict], config: Profile, seed: int, device: str = "cpu"
    ):
        if not examples:
            raise ValueError("StockTask needs at least one example")
        self.tokenizer, self.config = tokenizer, config
        self.prompts = [
            tuple(prompt_lib.prompt_ids(tokenizer, e["statement"], config)) for e in examples
        ]
        self.problems = dict(zip(self.prompts, (e["problem"] for e in examples)))
        self.eos = prompt_lib.eos_id(tokenizer, config)
        self.generator = torch.Generator(device=device).manual_seed(seed)

    def sample(self, model, prompt) -> tuple[list[int], torch.Tensor]:
        sampler = rollout.Sampler(model, self.tokenizer, self.config, self.generator)
        row = rollout.generate(sampler, list(prompt))
        return row["response_ids"], torch.tensor(row["behaviour_logprobs"], dtype=torch.float32)

    def reward(self, prompt, response) -> float:
        finish_reason = "eos" if response and response[-1] == self.eos else "length"
        decoded = rollout.decode_response(self.tokenizer, list(response), finish_reason)
        score = verifier.score_generated_json(
            decoded["text"],
            finish_reason,
            self.problems[tuple(prompt)],
            decoded["tokenization_valid"],
        )
        return float(score["reward"])

    def logits(self, model, prompt, response) -> torch.Tensor:
        ids = torch.tensor([list(prompt) + list(response)], dtype=torch.long)
        logits = scoring.forward_logits(model, ids, torch.ones_like(ids))[0]
        return logits[rollout.response_slice(len(prompt), len(response))]

    def logits_of_many(self, model, pairs) -> list[torch.Tensor]:
        """logits() of each (prompt, response) pair, one forward pass each (no padding)."""
        return [self.logits(model, prompt, response) for prompt, response in pairs]
