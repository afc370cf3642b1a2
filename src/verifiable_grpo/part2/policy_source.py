"""The family study's rollout source: fresh training prompts (a seeded permutation) and
scored responses from the policy, the interface training/samplers.py collects a batch
through."""

from __future__ import annotations

from verifiable_grpo.task import prompts, verifier
from verifiable_grpo.training import batched_rollout, rollout


class PolicySource:
    """Fresh training prompts (a seeded permutation) and scored responses from the policy.

    With sampling.batched every request of a `draw_many` call is decoded in one padded
    batch (batched_rollout.generate_batch, one generator stream, rows in request then
    member order); otherwise one response at a time, in the same order."""

    def __init__(self, run):  # a study.StudyRun
        self.run = run

    def prompts(self, count: int) -> list[dict]:
        return [self.run.examples[i] for i in self.run.order.take(count)]

    def draw(self, example: dict, count: int, group_id: str) -> list[dict]:
        return self.draw_many([(example, count, group_id)])[0]

    def draw_many(self, requests: list[tuple[dict, int, str]]) -> list[list[dict]]:
        run = self.run
        jobs = []  # (example, prompt ids, rollout id) of every row
        for example, count, group_id in requests:
            prompt = prompts.prompt_ids(run.tokenizer, example["statement"], run.config)
            jobs += [(example, prompt, f"{group_id}/response-{m:02d}") for m in range(count)]
        sampler = rollout.Sampler(run.policy, run.tokenizer, run.config, run.generator)
        if run.config.sampling.batched:
            generated = batched_rollout.generate_batch(
                sampler, [prompt for _, prompt, _ in jobs], greedy=False
            )
        else:
            generated = [rollout.generate(sampler, prompt, greedy=False) for _, prompt, _ in jobs]
        rows = []
        for (example, _, rollout_id), row in zip(jobs, generated):
            row["rollout_id"] = rollout_id
            verdict = verifier.score_generated_json(
                row["text"], row["finish_reason"], example["problem"], row["tokenization_valid"]
            )
            row["reward"] = float(verdict["reward"])
            rows.append(row)
        found, start = [], 0
        for _, count, _ in requests:
            found.append(rows[start : start + count])
            start += count
        return found
