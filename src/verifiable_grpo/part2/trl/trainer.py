"""TRL's GRPOTrainer with the family study's samplers and telemetry.

grpo, drgrpo and gspo (and dapo's clip-higher) are GRPOConfig fields (training/trl_parity
maps them); for these arms TRL generates, scores and computes advantages itself and this
subclass only records what the step drew. dapo's dynamic sampling and AERO's rescue and
curation have no GRPOConfig field: for them `_generate_and_score_completions` hands the
step to our own sampler (training/samplers.collect), drawing every rollout through TRL's
`_generate`, and builds the batch TRL's loss reads. AERO's groups of fewer than
group_size rows are padded with rows whose loss mask is 0 (they add 0 to the loss but
count in the row mean, as our runner's `slots`).

Prompts: the first prompts of a step are the ones TRL's dataloader chose; the refills of
dynamic sampling, and AERO's random picks, draw from generators seeded by (seed, step),
so a resumed run redraws them without any saved sampler state.
"""

from __future__ import annotations

import hashlib
import time

import torch
from accelerate.utils import gather_object
from transformers import TrainerCallback
from trl import GRPOTrainer

from verifiable_grpo.core import files, interrupts
from verifiable_grpo.core.faults import fault_point
from verifiable_grpo.part2 import gsm8k
from verifiable_grpo.part2.trl import checkpoints as trl_checkpoints
from verifiable_grpo.training import objectives, samplers

REFILL_SEED_OFFSET = 600
CURATION_SEED_OFFSET = 700
TELEMETRY_FILE = "family_telemetry.json"


def step_generator(seed: int, step: int, offset: int) -> torch.Generator:
    """A generator for one step's refills (REFILL_SEED_OFFSET) or curation picks
    (CURATION_SEED_OFFSET): a function of (seed, step) only, so a resume redraws it."""
    return torch.Generator().manual_seed(seed * 1_000_003 + offset + 7919 * step)


def _text(completion) -> str:
    """A completion as text (TRL passes conversational ones as a message list)."""
    return completion[-1]["content"] if isinstance(completion, list) else completion


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class GSM8KReward:
    """TRL reward function: GSM8K exact match; remembers the rows of its last call."""

    __name__ = "gsm8k_exact_match"

    def __init__(self):
        self.last: list[dict] = []

    def __call__(self, prompts, completions, answer, document_id, completion_ids=None, **_):
        texts = [_text(c) for c in completions]
        lengths = (
            [len(ids) for ids in completion_ids] if completion_ids is not None else [0] * len(texts)
        )
        rewards = [gsm8k.reward(t, a) for t, a in zip(texts, answer)]
        self.last = [
            {
                "document_id": d,
                "reward": r,
                "response_tokens": n,
                "completion_sha256": text_sha256(t),
            }
            for d, r, n, t in zip(document_id, rewards, lengths, texts)
        ]
        return rewards


class TrainerSource:
    """samplers.RolloutSource over a GRPOTrainer: rollouts from TRL's own `_generate`."""

    def __init__(self, trainer: FamilyGRPOTrainer, first: list[dict], step: int):
        self.trainer, self.first, self.calls = trainer, list(first), 0
        self.refill = step_generator(trainer.family_seed, step, REFILL_SEED_OFFSET)

    def prompts(self, count: int) -> list[dict]:
        self.calls += 1
        if self.calls == 1 and len(self.first) == count:
            return self.first
        pool = self.trainer.family_pool
        picks = torch.randperm(len(pool), generator=self.refill)[:count].tolist()
        return [pool[i] for i in picks]

    def draw_many(self, requests) -> list[list[dict]]:
        trainer = self.trainer
        examples = [ex for ex, count, _ in requests for _ in range(count)]
        ids = [f"{gid}/response-{m:02d}" for _, count, gid in requests for m in range(count)]
        prompt_ids, completion_ids, _, completions, *_ = trainer._generate(
            [ex["prompt"] for ex in examples]
        )
        rewards = trainer.family_reward(
            [ex["prompt"] for ex in examples],
            completions,
            [ex["answer"] for ex in examples],
            [ex["document_id"] for ex in examples],
            completion_ids=completion_ids,
        )
        rows = [
            {**meta, "rollout_id": rid, "reward": r, "prompt_ids": p, "completion_ids": c}
            for meta, rid, r, p, c in zip(
                trainer.family_reward.last, ids, rewards, prompt_ids, completion_ids
            )
        ]
        found, start = [], 0
        for _, count, _ in requests:
            found.append(rows[start : start + count])
            start += count
        return found


def _pad(rows: list[list[int]], value: int, left: bool, device) -> torch.Tensor:
    width = max(len(r) for r in rows)
    out = torch.full((len(rows), width), value, dtype=torch.long)
    for i, r in enumerate(rows):
        if r and left:
            out[i, width - len(r) :] = torch.tensor(r)
        elif r:
            out[i, : len(r)] = torch.tensor(r)
    return out.to(device)


class FamilyGRPOTrainer(GRPOTrainer):
    """GRPOTrainer + the arm's sampler + one telemetry record per rollout set."""

    def __init__(
        self,
        *args,
        objective: objectives.Objective,
        seed: int,
        pool: list[dict],
        reward: GSM8KReward,
        **kwargs,
    ):
        super().__init__(*args, reward_funcs=[reward], **kwargs)
        self.family_objective, self.family_seed = objective, seed
        self.family_pool, self.family_reward = pool, reward
        self.family_telemetry: list[dict] = []

    # TRL calls this once per rollout set (every steps_per_generation x num_iterations)
    def _generate_and_score_completions(self, inputs):
        started = time.perf_counter()
        step = len(self.family_telemetry)
        if self.family_objective.sampler.kind == "plain":
            output = super()._generate_and_score_completions(inputs)
            size = self.num_generations
            # every process's rows (whole groups each), so the record covers the step
            rows = gather_object(self.family_reward.last)
            groups = [rows[i : i + size] for i in range(0, len(rows), size)]
            cost = samplers.Cost(generation_batches=1)
            cost.drew(rows)
            self._record(
                step,
                groups,
                [[r["reward"] for r in g] for g in groups],
                ["plain"] * len(groups),
                cost,
                started,
            )
            return output
        return self._sampled_batch(inputs, step, started)

    def _sampled_batch(self, inputs, step: int, started: float) -> dict:
        size = self.num_generations
        first = [inputs[i] for i in range(0, len(inputs), size)]
        curation = step_generator(self.family_seed, step, CURATION_SEED_OFFSET)
        batch = samplers.collect(
            TrainerSource(self, first, step),
            self.family_objective.sampler,
            len(first),
            size,
            step,
            curation,
        )
        groups = [
            objectives.with_advantages(
                g,
                self.family_objective,
                g["successes"] if len(g["rewards"]) == 1 else None,
                g["observations"] if len(g["rewards"]) == 1 else None,
            )
            for g in batch.groups
        ]
        self._record(
            step,
            [g["responses"] for g in groups],
            batch.drawn,
            [g["strategy"] for g in groups],
            batch.cost,
            started,
        )
        return self.assemble(groups, size)

    def assemble(self, groups: list[dict], slots: int) -> dict:
        """The batch TRL's loss reads, each group padded to `slots` rows (mask 0)."""
        device = self.accelerator.device
        pad_id = self._tokenizer.pad_token_id
        prompt, completion, real, advantages = [], [], [], []
        for g in groups:
            rows = list(zip(g["responses"], g["advantages"]))
            if len(rows) > slots:
                raise ValueError(f"a group of {len(rows)} rows does not fit {slots} slots")
            filler = (g["responses"][0], 0.0)
            for i, (row, advantage) in enumerate(rows + [filler] * (slots - len(rows))):
                prompt.append(row["prompt_ids"])
                completion.append(row["completion_ids"] or [pad_id])
                real.append(i < len(rows) and bool(row["completion_ids"]))
                advantages.append(advantage)
        prompt_ids = _pad(prompt, pad_id, True, device)
        prompt_mask = _pad([[1] * len(p) for p in prompt], 0, True, device)
        completion_ids = _pad(completion, pad_id, False, device)
        completion_mask = _pad([[1] * len(c) for c in completion], 0, False, device)
        completion_mask = completion_mask * torch.tensor(real, device=device).long().unsqueeze(1)
        output = {
            "prompt_ids": prompt_ids,
            "prompt_mask": prompt_mask,
            "completion_ids": completion_ids,
            "completion_mask": completion_mask,
            "advantages": torch.tensor(advantages, dtype=torch.float32, device=device),
            "num_items_in_batch": self.accelerator.gather(completion_mask.sum()).sum(),
        }
        generate_every = self.args.steps_per_generation * self.num_iterations
        if self.args.gradient_accumulation_steps % generate_every != 0:  # off-policy updates
            with torch.no_grad():
                output["old_per_token_logps"], _, _ = self._get_per_token_logps_and_entropies(
                    self.model,
                    torch.cat([prompt_ids, completion_ids], dim=1),
                    torch.cat([prompt_mask, completion_mask], dim=1),
                    completion_ids.size(1),
                    batch_size=self.args.per_device_train_batch_size,
                )
        return output

    def _record(self, step, groups, drawn, strategies, cost, started) -> None:
        rewards = [[float(r["reward"]) for r in g] for g in groups]
        zero_variance_fraction = sum(len(set(r)) == 1 for r in rewards) / len(rewards)
        flat = [r for g in rewards for r in g]
        flat_drawn = [r for d in drawn for r in d]
        self.family_telemetry.append(
            {
                "step": step,
                "document_ids": [g[0]["document_id"] for g in groups],
                "rewards": rewards,
                "strategies": strategies,
                "mean_reward": sum(flat) / len(flat),
                "mean_reward_drawn": sum(flat_drawn) / len(flat_drawn),
                "zero_variance_fraction": zero_variance_fraction,
                "gu": 1.0 - zero_variance_fraction,
                "zero_variance_fraction_drawn": sum(len(set(d)) == 1 for d in drawn) / len(drawn),
                **cost.as_dict(),
                "tokens_trained": sum(r["response_tokens"] for g in groups for r in g),
                "completion_sha256": [[r["completion_sha256"] for r in g] for g in groups],
                "generation_seconds": time.perf_counter() - started,
            }
        )


class TelemetryCheckpoint(TrainerCallback):
    """Writes the telemetry so far and the run's identity into every checkpoint folder
    (TRL's checkpoint does not know them), after TRL has written the folder, then seals
    the folder and anchors its seal (trl/checkpoints: checked before a resume)."""

    def __init__(self, trainer: FamilyGRPOTrainer, identity: dict, stamp_sha256=None):
        self.trainer, self.identity, self.stamp_sha256 = trainer, identity, stamp_sha256

    def on_save(self, args, state, control, **kwargs):
        self.trainer.accelerator.wait_for_everyone()  # every process's RNG file is written
        if not state.is_world_process_zero:
            return control
        folder = f"{args.output_dir}/checkpoint-{state.global_step}"
        files.save_json(
            f"{folder}/{TELEMETRY_FILE}",
            {
                "identity": self.identity,
                "global_step": state.global_step,
                "telemetry": self.trainer.family_telemetry,
            },
        )
        fault_point("trl-before-seal")  # TRL's files and the telemetry written, no seal
        trl_checkpoints.seal(folder)
        trl_checkpoints.anchor(folder, self.stamp_sha256)
        return control


class StopAfter(TrainerCallback):
    """Stop with a checkpoint after `steps` optimizer steps (None: never), or after the
    step in flight when a SIGINT/SIGTERM arrived (core.interrupts): the rerun continues."""

    def __init__(self, steps: int | None):
        self.steps = steps

    def on_step_end(self, args, state, control, **kwargs):
        asked = self.steps is not None and state.global_step >= self.steps
        if (asked or interrupts.requested()) and state.global_step < state.max_steps:
            control.should_save = True
            control.should_training_stop = True
        return control
