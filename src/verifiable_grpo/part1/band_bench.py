"""`bench band`: one GRPO rollout set on SmolLM2-135M-Instruct, ours against TRL.

The band study's shape (4 prompts x G = 8, answers of at most 16 tokens, two updates per
rollout set, beta 0.02, its 2-shot prompts from SmallSums-v1's training split), both arms
starting from the instruct model, in one process so that the ratio is measured under the
same load: ours batched (KV cache, each prompt read once for its 8 rows, exact KL on every
visited prefix, the 2e-4 rescoring check), TRL 1.16's GRPOTrainer (k3 on the sampled
token, loss_type grpo), and ours one sequence at a time (the path the earlier SmolLM2
candidate ran, about 3.1 s per response there), fewer sets since it is slow.
"""

from __future__ import annotations

import dataclasses
import time

import torch

from verifiable_grpo.core import model as model_lib
from verifiable_grpo.core.config import provenance
from verifiable_grpo.core.config_schema import Profile
from verifiable_grpo.part1 import band_study, bench, bench_throughput, bench_trl, lift_study
from verifiable_grpo.task import small_sums

SHAPE = {
    "prompts": band_study.SETTING["prompts_per_iteration"],
    "group_size": band_study.SETTING["group_size"],
    "max_new_tokens": 16,
    "updates_per_rollout": band_study.SETTING["updates_per_rollout"],
    "kl_coefficient": band_study.SETTING["kl_coefficient"],
    "temperature": 1.0,
}


def instruct_model(config: Profile):
    return model_lib.load_base(config)[0].eval()


def recorded_sequential_seconds() -> float:
    """Seconds per response of the recorded SmolLM2 lift candidate (one sequence at a time,
    G = 4): its GRPO training time over the responses it sampled."""
    result = lift_study.recorded_own_warm_start()["results"][0]
    candidate = result["candidate"]
    responses = (
        candidate["iterations"] * candidate["prompts_per_iteration"] * candidate["group_size"]
    )
    return result["train_seconds"] / responses


def per_response(arm: dict) -> float:
    return arm["median_seconds"]["total"] / (SHAPE["prompts"] * SHAPE["group_size"])


def band_run(sets: int, warmup: int) -> bench.BenchRun:
    """The bench's arms at the band study's shape, from the instruct model."""
    config = band_study.band_config()
    examples = small_sums.splits()["train"][: (sets + warmup) * SHAPE["prompts"]]
    return bench.BenchRun(config, examples, sets, warmup, dict(SHAPE), instruct_model)


def bench_band(sets: int = 3, warmup: int = 1, sequential_sets: int = 1) -> dict:
    run = band_run(sets, warmup)
    config = run.config
    torch.manual_seed(0)
    started = time.perf_counter()
    ours = bench.run_ours(run, batched=True)
    peak = bench_throughput.matmul_peak()  # right after our arm, under the same load
    parameters = config.model.expected_unique_parameters  # checked when the model loads
    work = bench_throughput.throughput(ours, parameters, SHAPE["updates_per_rollout"], peak)
    trl = bench_trl.run_trl(run)
    fastest = bench_trl.run_trl(run, fastest=True)
    arms = [ours, trl, fastest]
    if sequential_sets:
        sequential = dataclasses.replace(run, sets=sequential_sets, warmup=0)
        arms.append(bench.run_ours(sequential, batched=False))
    recorded = recorded_sequential_seconds()
    return {
        "shape": SHAPE,
        "sets": sets,
        "arms": arms,
        "seconds_per_response": {a["arm"]: per_response(a) for a in arms},
        "ratio_ours_to_trl": ours["median_seconds"]["total"] / trl["median_seconds"]["total"],
        "ratio_ours_to_trl_fastest": (
            ours["median_seconds"]["total"] / fastest["median_seconds"]["total"]
        ),
        "throughput": work,
        "recorded_sequential_seconds_per_response": recorded,
        "speedup_over_recorded": recorded / per_response(ours),
        "arms_seconds": time.perf_counter() - started,
        "provenance": provenance(config),
    }


def format_band_bench(result: dict) -> str:
    shape = result["shape"]
    lines = [
        f"SmolLM2-135M-Instruct, rollout set of {shape['prompts']} prompts x G="
        f"{shape['group_size']}, <= {shape['max_new_tokens']} new tokens, "
        f"{shape['updates_per_rollout']} updates; median of {result['sets']} sets"
    ]
    for arm in result["arms"]:
        median = arm["median_seconds"]["total"]
        lines.append(
            f"{arm['arm']:34} {median:7.1f} s per set, "
            f"{result['seconds_per_response'][arm['arm']]:6.3f} s per response"
        )
    if "ratio_ours_to_trl_fastest" in result:
        lines.append(
            f"ours / TRL at its fastest CPU setting: {result['ratio_ours_to_trl_fastest']:.2f}; "
            "ours: " + bench_throughput.throughput_line(result["throughput"])
        )
    lines.append(
        f"ours / TRL per rollout set: {result['ratio_ours_to_trl']:.2f}; "
        f"ours against the recorded {result['recorded_sequential_seconds_per_response']:.2f} s "
        f"per response: {result['speedup_over_recorded']:.1f}x faster"
    )
    return "\n".join(lines)
