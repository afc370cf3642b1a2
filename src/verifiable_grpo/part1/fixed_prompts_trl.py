"""TRL's GRPOTrainer on the fixed prompts our own run trained on: the same warm start,
prompts, group size, rates and KL weight, so the two learning curves can sit side by side.

What differs is stated, not hidden: TRL's KL term is its k3 estimate on the sampled token
(ours is the exact KL over the vocabulary), its advantages divide by the sample std + 1e-4
(ours: population std + 1e-8), and it draws with its own generator (other samples). The
success on the trained prompts after training is measured by our sampler with the same
draw seeds as our run (fixed_prompts.success_counts), so the end points are paired.
"""

from __future__ import annotations

import json
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

from verifiable_grpo.core import files
from verifiable_grpo.core import model as model_lib
from verifiable_grpo.core.config import provenance
from verifiable_grpo.core.config_schema import Profile
from verifiable_grpo.core.runfolder import RunFolder
from verifiable_grpo.part1 import fixed_prompts
from verifiable_grpo.task import data, prompts, verifier
from verifiable_grpo.training import trl_config

LOGGED = (
    "reward",
    "kl",
    "entropy",
    "completions/mean_length",
    "clip_ratio/region_mean",
    "frac_reward_zero_std",
    "loss",
)


def reward_function(eos: int):
    """TRL's reward function: our verifier's reward of each completion; a completion
    without `eos` among its ids ended at the length limit."""

    def reward(prompts, completions, problem, completion_ids=None, **_):
        ends = [
            "eos" if completion_ids is None or eos in ids else "length"
            for ids in (completion_ids or [None] * len(completions))
        ]
        return [
            float(verifier.score_generated_json(c, end, json.loads(p), True)["reward"])
            for c, end, p in zip(completions, ends, problem)
        ]

    return reward


def _grpo_args(out: str, setting, cfg, device) -> object:
    """TRL's nearest to our objective (trl_config.part1_fields), with the setting's counts
    and rates: one rollout set per optimizer step, as our run."""
    return trl_config.grpo_config(
        trl_config.part1_fields(cfg.grpo.clip_epsilon, setting.kl_coefficient),
        {
            "output_dir": out,
            **trl_config.one_set_per_step(
                setting.prompts, setting.group_size, setting.updates_per_rollout
            ),
            **trl_config.PLAIN_SAMPLING,
            "max_completion_length": cfg.tokens.max_response,
            "learning_rate": setting.learning_rate,
            "weight_decay": cfg.grpo.weight_decay,
            "max_grad_norm": cfg.grpo.max_grad_norm,
            "lr_scheduler_type": "constant",
            "warmup_steps": 0,
            "max_steps": setting.iterations * setting.updates_per_rollout,
            "logging_steps": 1,
            **trl_config.in_process(device.type, cfg.seed),
        },
    )


def run_trl(base: Profile, ours_folder, out, setting=fixed_prompts.RECORDED_SETTING) -> dict:
    """Train with TRL on the prompts `ours_folder`'s run selected; returns OUT/result.json."""
    import trl
    from datasets import Dataset
    from trl import GRPOTrainer

    ours_folder, out = Path(ours_folder), Path(out)
    done = out / "result.json"
    if done.is_file():
        return files.read_cached_json(done)
    config = fixed_prompts.setting_config(base, setting)
    chosen = files.read_cached_json(ours_folder / "selection.json")
    examples = data.read_examples(ours_folder / "train" / "learning-data", "train")
    tokenizer = model_lib.load_tokenizer(config)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    warm_folder = RunFolder(ours_folder / "base")
    policy, _ = model_lib.reload_policy(
        warm_folder.policy("warmstart"), config, warm_folder.recorded_policy_sha256("warmstart")
    )
    device = policy.device
    rendered = [
        prompts.render_text(tokenizer, prompts.messages_for(e["statement"]), True) for e in examples
    ]
    for text, example in zip(rendered, examples):  # TRL must read our very prompt ids
        if tokenizer(text, add_special_tokens=False)["input_ids"] != prompts.prompt_ids(
            tokenizer, example["statement"], config
        ):
            raise ValueError("TRL would read other prompt ids than ours; the comparison is off")
    dataset = Dataset.from_list(
        [{"prompt": t, "problem": json.dumps(e["problem"])} for t, e in zip(rendered, examples)]
    )
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        # TRL builds its reference from the policy's name_or_path: a copy of the warm start.
        policy.save_pretrained(Path(scratch) / "warmstart")
        policy.config._name_or_path = str(Path(scratch) / "warmstart")
        trainer = GRPOTrainer(
            model=policy,
            reward_funcs=reward_function(prompts.eos_id(tokenizer, config)),
            args=_grpo_args(scratch, setting, config, device),
            train_dataset=dataset,
            processing_class=tokenizer,
        )
        trainer.train()
        log = [
            {k: entry[k] for k in LOGGED if k in entry}
            for entry in trainer.state.log_history
            if "reward" in entry
        ]
    policy.eval()
    after = fixed_prompts.success_counts(policy, tokenizer, config, examples, setting.draws)
    result = {
        "arm": f"TRL {trl.__version__} GRPOTrainer",
        "setting": asdict(setting),
        "prompts": [{**c, "after": a} for c, a in zip(chosen, after)],
        "log": log,
        "seconds": time.perf_counter() - started,
        "differences": [
            "KL: k3 on the sampled token",
            "advantages: sample std + 1e-4",
            "own sampling generator",
        ],
        "provenance": provenance(config),
    }
    files.save_cached_json(done, result)
    return result
