"""`bench grpo`: what one GRPO rollout set costs, ours (batched and one sequence at a time)
against TRL's GRPOTrainer, side by side in one process on the same model and prompts.

The model is the recorded tiny warm start (data/recorded/tiny/policies/warmstart.safetensors,
loaded with the SHA-256 its provenance lists); the prompts are the first training examples,
rendered with our chat template for every arm. Each arm runs `warmup + sets` rollout sets of
4 prompts x G = 4, at most 64 new tokens, temperature 1, two updates per rollout set, beta
0.02: ours with the exact KL on every visited prefix, TRL with its k3 estimate on the sampled
token (loss_type "grpo", the same token -> response -> prompt mean; bench_trl.py). The first `warmup` sets
are not timed. Reported per arm: the median seconds per rollout set and its split into
generation (TRL: also its old/reference scoring), verification (the reward function; ours:
also the 2e-4 rescoring check) and optimisation, and the process's peak memory while it ran
(resident set on CPU, allocated bytes on CUDA).

Also measured, each in a fresh process: the exact KL's working memory at vocabulary 151,936
on a 16 x 64 rollout set for two block sizes, and (read, not run) the tiny pipeline's wall
time by stage from a run folder's timings.json.
"""

from __future__ import annotations

import dataclasses
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch

from verifiable_grpo.core import model as model_lib
from verifiable_grpo.core import schedule
from verifiable_grpo.core.config import load_config, read_json, repo_root
from verifiable_grpo.core.config_schema import Profile
from verifiable_grpo.part1.bench_memory import (  # noqa: F401 (re-exported)
    KL_PROBE,
    KL_SHAPE,
    PeakMemory,
    exact_kl_memory,
)
from verifiable_grpo.task import data, prompts, verifier
from verifiable_grpo.training import batched_rollout, batched_scoring, grpo, objectives, rollout

BENCH_SHAPE = {
    "prompts": 4,
    "group_size": 4,
    "max_new_tokens": 64,
    "updates_per_rollout": 2,
    "kl_coefficient": 0.02,
    "temperature": 1.0,
}
DEFAULT_OUT = "data/recorded/bench/grpo.json"


# --------------------------------------------------------------------------- inputs
def bench_config(profile: str = "tiny") -> Profile:
    return load_config(profile).replaced(
        tokens={"max_response": BENCH_SHAPE["max_new_tokens"]},
        grpo={"kl_coefficient": BENCH_SHAPE["kl_coefficient"]},
    )


def recorded_warmstart(config: Profile, profile: str = "tiny"):
    """A fresh strict load of the recorded warm start (eval mode)."""
    folder = repo_root() / "data" / "recorded" / profile
    sha = read_json(folder / "provenance.json")["files"]["policies/warmstart.safetensors"]
    model, _ = model_lib.reload_policy(folder / "policies" / "warmstart.safetensors", config, sha)
    return model.eval()


def bench_examples(config: Profile, count: int) -> list[dict]:
    with tempfile.TemporaryDirectory() as tmp:
        data.write_dataset(Path(tmp) / "data", config.data.seed)
        view = data.write_learning_view(Path(tmp) / "data", Path(tmp) / "view")
        return data.read_examples(view, "train")[:count]


@dataclass(frozen=True)
class BenchRun:
    """What every arm of one benchmark shares: the config, the prompts, how many rollout
    sets (after `warmup` untimed ones), their shape, and where each arm's starting policy
    comes from (load_policy(config): a fresh one per call)."""

    config: dict
    examples: list
    sets: int
    warmup: int
    shape: dict = field(default_factory=lambda: dict(BENCH_SHAPE))
    load_policy: Callable = recorded_warmstart

    def chunks(self) -> list[list[dict]]:
        """The prompts of each rollout set, warm-up sets first (wrapping around)."""
        size, examples = self.shape["prompts"], self.examples
        return [
            examples[(i * size) % len(examples) :][:size] for i in range(self.sets + self.warmup)
        ]


def arm_summary(times: list[dict], warmup: int, memory: int, extra: dict) -> dict:
    timed = times[warmup:]
    keys = ("generation", "verification", "optimisation", "total")
    return {
        "median_seconds": {k: statistics.median(t[k] for t in timed) for k in keys},
        "per_set": timed,
        "warmup_sets": warmup,
        "peak_memory_bytes": memory,
        **extra,
    }


# --------------------------------------------------------------------------- our loop
def _sample_set(
    policy, tokenizer, chunk: list[dict], run: BenchRun, generator, index: int
) -> list[dict]:
    """One rollout set, sampled and scored as the GRPO loop does it (batched or one
    sequence at a time as run.config.sampling.batched says: run_ours sets it per arm)."""
    config, g = run.config, run.shape["group_size"]
    ids = [f"bench/{index}/{i}" for i in range(len(chunk))]
    sampler = rollout.Sampler(policy, tokenizer, config, generator)
    if config.sampling.batched:
        return batched_rollout.sample_groups(sampler, chunk, g, ids)
    return [rollout.sample_group(sampler, e, g, i) for e, i in zip(chunk, ids)]


def _reward_seconds(groups: list[dict], chunk: list[dict]) -> float:
    """Sampling includes the verifier: its time, measured apart by scoring again (pure Python)."""
    tick = time.perf_counter()
    for group, example in zip(groups, chunk):
        for row in group["responses"]:
            verifier.score_generated_json(
                row["text"], row["finish_reason"], example["problem"], row["tokenization_valid"]
            )
    return time.perf_counter() - tick


def _check_seconds(
    policy, tokenizer, rows: list[dict], config: Profile, batched: bool, device
) -> float:
    """The rescoring check of the captured log-probs, timed."""
    tick = time.perf_counter()
    if batched:
        batched_scoring.verify_captured_logprobs(
            policy,
            rows,
            config.grpo.verify_tolerance,
            prompts.eos_id(tokenizer, config),
            config.grpo.share_prompts,
        )
    else:
        rollout.verify_captured_logprobs(policy, rows, config.grpo.verify_tolerance)
    model_lib.synchronize(device)
    return time.perf_counter() - tick


def run_ours(run: BenchRun, batched: bool) -> dict:
    """Our GRPO loop's rollout sets, timed (the reference is a second fresh policy)."""
    config = run.config.replaced(sampling={"batched": batched})
    run = dataclasses.replace(run, config=config)
    tokenizer = model_lib.load_tokenizer(config)
    policy, reference = run.load_policy(config), run.load_policy(config).requires_grad_(False)
    device = rollout.model_device(policy)
    optimizer = torch.optim.AdamW(
        model_lib.unique_parameters(policy),
        lr=config.grpo.learning_rate,
        weight_decay=config.grpo.weight_decay,
    )
    total_updates = (run.sets + run.warmup) * run.shape["updates_per_rollout"]
    scheduler = schedule.make_scheduler(
        optimizer, total_updates, config.grpo.warmup_fraction, config.grpo.final_lr_fraction
    )
    generator = torch.Generator(device=device).manual_seed(
        config.seed + grpo.GENERATION_SEED_OFFSET
    )
    objective = objectives.objective_from_config(config)
    times = []
    with PeakMemory(device) as memory:
        for index, chunk in enumerate(run.chunks()):
            model_lib.synchronize(device)
            start = time.perf_counter()
            groups = _sample_set(policy, tokenizer, chunk, run, generator, index)
            model_lib.synchronize(device)
            sampled = time.perf_counter()
            reward_seconds = _reward_seconds(groups, chunk)
            groups = [objectives.with_advantages(group, objective) for group in groups]
            rows = [r for group in groups for r in group["responses"]]
            check_seconds = _check_seconds(policy, tokenizer, rows, config, batched, device)
            tick = time.perf_counter()
            memo: dict = {}  # as the GRPO loop: the reference read once per rollout set
            for _ in range(run.shape["updates_per_rollout"]):
                grpo.grpo_update(
                    grpo.Trainee(policy, reference, optimizer, scheduler),
                    groups,
                    config,
                    grpo.UpdateOptions(reference_memo=memo if batched else None),
                )
            model_lib.synchronize(device)
            optimisation = time.perf_counter() - tick
            times.append(
                {
                    "generation": sampled - start - reward_seconds,
                    "verification": reward_seconds + check_seconds,
                    "optimisation": optimisation,
                    "total": time.perf_counter() - start - reward_seconds,
                    "response_tokens": sum(r["response_tokens"] for r in rows),
                    "prompt_tokens": sum(len(r["prompt_ids"]) for r in rows),
                }
            )
    name = "ours, batched" if batched else "ours, one sequence at a time"
    return arm_summary(
        times,
        run.warmup,
        memory.peak,
        {
            "arm": name,
            "kl": "exact, every visited prefix",
            "kv_cache": config.sampling.use_kv_cache,
        },
    )


# --------------------------------------------------------------------------- pipeline times
