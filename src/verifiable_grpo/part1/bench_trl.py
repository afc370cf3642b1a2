"""The TRL arm of `bench grpo` and `bench band`: TRL's GRPOTrainer on the same starting
policy, prompts and rollout-set shape as our arms (bench.BenchRun), timed from inside
(its generation and training steps wrapped in timers).
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

from verifiable_grpo.core import model as model_lib
from verifiable_grpo.part1.bench import BenchRun, arm_summary
from verifiable_grpo.part1.bench_memory import PeakMemory
from verifiable_grpo.task import prompts
from verifiable_grpo.training import rollout, trl_config

# TRL's fastest CPU setting for a model this small: GRPOConfig's default
# gradient_checkpointing=True recomputes activations in the backward pass to save memory
# that a 135M model does not need; switched off, nothing else changes. (transformers 5
# names the field activation_checkpointing, gradient_checkpointing its deprecated alias.)
FASTEST = {"activation_checkpointing": False}


def trl_arguments(run: BenchRun, out: str, device_type: str, fastest: bool = False):
    """The TRL arm's GRPOConfig: our clip and KL weight on TRL's grpo loss
    (trl_config.part1_fields), the bench's shape, our rates at a constant schedule; TRL's
    defaults otherwise, or its fastest CPU setting (FASTEST)."""
    cfg, shape = run.config, run.shape
    updates = shape["updates_per_rollout"]
    return trl_config.grpo_config(
        trl_config.part1_fields(cfg.grpo.clip_epsilon, shape["kl_coefficient"]),
        {
            "output_dir": out,
            **trl_config.one_set_per_step(shape["prompts"], shape["group_size"], updates),
            **trl_config.PLAIN_SAMPLING,
            "max_completion_length": shape["max_new_tokens"],
            "learning_rate": cfg.grpo.learning_rate,
            "weight_decay": cfg.grpo.weight_decay,
            "max_grad_norm": cfg.grpo.max_grad_norm,
            "lr_scheduler_type": "constant",
            "max_steps": (run.sets + run.warmup) * updates,
            "logging_steps": 10_000,
            **trl_config.in_process(device_type, cfg.seed),
            **(FASTEST if fastest else {}),
        },
    )


def _trl_dataset(run: BenchRun, tokenizer):
    """The prompts as TRL reads them: rendered with our chat template, checked to be the
    very token ids our arms read."""
    from datasets import Dataset

    chunk = [e for s in run.chunks() for e in s]
    rendered = [
        prompts.render_text(tokenizer, prompts.messages_for(e["statement"], run.config), True)
        for e in chunk
    ]
    for text, example in zip(rendered, chunk):
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        if ids != prompts.prompt_ids(tokenizer, example["statement"], run.config):
            raise ValueError("TRL would read other prompt ids than ours; the comparison is off")
    return Dataset.from_list(
        [{"prompt": t, "problem": json.dumps(e["problem"])} for t, e in zip(rendered, chunk)]
    )


def _timed_reward(eos: int, seconds: list):
    """fixed_prompts_trl's reward function, each call's seconds appended to `seconds`."""
    from verifiable_grpo.part1.fixed_prompts_trl import reward_function

    score = reward_function(eos)

    def reward(**kwargs):  # TRL names the reward's metrics after the function: "reward"
        tick = time.perf_counter()
        scores = score(**kwargs)
        seconds.append(time.perf_counter() - tick)
        return scores

    return reward


def _time_trainer(trainer, device) -> tuple[list, list]:
    """Wrap the trainer's generation and training step in timers: (generation seconds,
    (start, end) of each step), filled while it trains."""
    generation, steps = [], []
    inner_generate = trainer._generate_and_score_completions
    inner_step = trainer.training_step

    def timed_generate(*a, **k):
        tick = time.perf_counter()
        result = inner_generate(*a, **k)
        model_lib.synchronize(device)
        generation.append(time.perf_counter() - tick)
        return result

    def timed_step(*a, **k):
        tick = time.perf_counter()
        result = inner_step(*a, **k)
        model_lib.synchronize(device)
        steps.append((tick, time.perf_counter()))
        return result

    trainer._generate_and_score_completions = timed_generate
    trainer.training_step = timed_step
    return generation, steps


def _trl_set_times(generation: list, steps: list, verification: list, per: int) -> list[dict]:
    """Each rollout set's split, from the timers: a set runs from its first step's start to
    the start of the next set's first step (the optimizer step and the scheduler sit
    between training_step calls)."""
    times = []
    for index in range(len(generation)):
        first, last = steps[index * per], steps[index * per + per - 1]
        end = steps[(index + 1) * per][0] if (index + 1) * per < len(steps) else last[1]
        total = end - first[0]
        times.append(
            {
                "generation": generation[index] - verification[index],
                "verification": verification[index],
                "optimisation": total - generation[index],
                "total": total,
            }
        )
    return times


def run_trl(run: BenchRun, fastest: bool = False) -> dict:
    """TRL's GRPOTrainer on the same starting policy and rendered prompts, timed from inside
    (at TRL's defaults, or at its fastest CPU setting)."""
    import trl
    from trl import GRPOTrainer

    tokenizer = model_lib.load_tokenizer(run.config)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    policy = run.load_policy(run.config)
    device = rollout.model_device(policy)
    dataset = _trl_dataset(run, tokenizer)
    verification: list[float] = []
    with tempfile.TemporaryDirectory() as out:
        # TRL builds its reference from the policy's name_or_path: point it at a copy of the
        # warm start, so that both arms start with policy == reference.
        policy.save_pretrained(Path(out) / "warmstart")
        policy.config._name_or_path = str(Path(out) / "warmstart")
        trainer = GRPOTrainer(
            model=policy,
            reward_funcs=_timed_reward(prompts.eos_id(tokenizer, run.config), verification),
            args=(arguments := trl_arguments(run, out, device.type, fastest)),
            train_dataset=dataset,
            processing_class=tokenizer,
        )
        generation, steps = _time_trainer(trainer, device)
        with PeakMemory(device) as memory:
            trainer.train()
    per = run.shape["updates_per_rollout"]
    return arm_summary(
        _trl_set_times(generation, steps, verification, per),
        run.warmup,
        memory.peak,
        {
            "arm": f"TRL {trl.__version__} GRPOTrainer" + (", fastest" if fastest else ""),
            "gradient_checkpointing": bool(arguments.activation_checkpointing),
            "kl": "k3 on the sampled token",
            "loss_type": "grpo",
        },
    )
