"""`python -m verifiable_grpo plan --config PROFILE`: what a run will take before it starts.

Counts come from the profile (updates, iterations, responses, crash checkpoints, states, in
the pipeline's own order, one worker); sizes from the model's shape (a state holds the FP32
weights and both AdamW moments, 12 bytes per parameter; a policy 4); seconds from the cost
model (part1.run_cost) and the file speeds measured on the CPU stand-in
(data/recorded/plan/standin-steps.json: gzip level 1, SHA-256). Two answer lengths bound the
generated tokens: every answer runs to tokens.max_response (worst case), or answers are as
long as the canonical answer under a Qwen-family tokenizer (typical, recorded).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from verifiable_grpo.core.config import read_json, repo_root
from verifiable_grpo.core.config_schema import Profile
from verifiable_grpo.core.runfolder import MODES, exercise_branches
from verifiable_grpo.part1 import run_cost

STANDIN_RECORD = "data/recorded/plan/standin-steps.json"
DISK_WRITE_BYTES_PER_SECOND = 200e6  # assumed: a Colab VM's local disk, sustained writes
INFLATE_SHARE = 0.25  # assumed: inflating costs a quarter of gzip level 1
STATE_BYTES_PER_PARAMETER = 12  # FP32 weights + AdamW exp_avg + exp_avg_sq
POLICY_BYTES_PER_PARAMETER = 4  # FP32 weights (tied head saved once)
GB = 1e9


def standin_record() -> dict:
    return read_json(repo_root() / STANDIN_RECORD)


def model_shape(config: Profile) -> dict:
    """The shape a profile trains: its local model's config.json, or Qwen2.5-0.5B's."""
    m = config.model
    if m.path and (repo_root() / m.path / "config.json").is_file():
        c = read_json(repo_root() / m.path / "config.json")
        return {
            "hidden": c["hidden_size"],
            "intermediate": c["intermediate_size"],
            "layers": c["num_hidden_layers"],
            "heads": c["num_attention_heads"],
            "kv_heads": c["num_key_value_heads"],
            "vocabulary": c["vocab_size"],
        }
    if m.source == "hub" and m.name == "Qwen/Qwen2.5-0.5B-Instruct":
        return dict(run_cost.QWEN_SHAPE)
    raise ValueError(
        f"model: the plan knows no shape for source {m.source!r} name {m.name!r} "
        "(give model.path a folder with config.json)"
    )


# --------------------------------------------------------------------------- counts
def sft_crash_saves(section, mode: str) -> int:
    """Crash checkpoints one SFT mode writes (as training.sft._train decides)."""
    per_epoch = math.ceil(section.examples / section.batch_size)
    first, stop = {
        "continuous": (0, section.epochs),
        "interrupt": (0, section.interrupt_after_epochs),
        "resume": (section.interrupt_after_epochs, section.epochs),
    }[mode]
    saves, updates = 0, first * per_epoch
    for epoch in range(first, stop):
        for batch in range(per_epoch):
            updates += 1
            if batch < per_epoch - 1 and updates % section.checkpoint_every_updates == 0:
                saves += 1
        saves += epoch + 1 < stop
    return saves


def grpo_crash_saves(iterations: int, interrupt_at: int, every: int, mode: str) -> int:
    first, stop = {
        "continuous": (0, iterations),
        "interrupt": (0, interrupt_at),
        "resume": (interrupt_at, iterations),
    }[mode]
    return sum(1 for i in range(first + 1, stop + 1) if i % every == 0)


@dataclass(frozen=True)
class Branch:
    name: str
    kind: str  # sft | grpo
    crash_saves: dict  # mode -> count
    iterations: int = 0  # GRPO: iterations of one mode's whole run (continuous)
    interrupt_at: int = 0
    group_size: int = 0


def branches(config: Profile) -> list[Branch]:
    c = config
    out = [
        Branch(name, "sft", {m: sft_crash_saves(section, m) for m in MODES})
        for name, section in (("warmstart", c.warmstart), ("sft", c.sft))
    ]
    g, e = c.grpo, c.exercise
    runs = [("grpo", g.iterations, g.interrupt_at, g.group_size)] + [
        (b, e.iterations, e.interrupt_at, size)
        for b, size in zip(exercise_branches(config), e.group_sizes)
    ]
    for name, iterations, interrupt_at, size in runs:
        saves = {
            m: grpo_crash_saves(iterations, interrupt_at, g.checkpoint_every_iterations, m)
            for m in MODES
        }
        out.append(Branch(name, "grpo", saves, iterations, interrupt_at, size))
    return out


def disk_plan(config: Profile, parameters: int, gzip_ratio: float) -> dict:
    """Peak bytes held and bytes written, replaying the branches in the pipeline's order:
    each crash save holds two crash states for a moment (the new one is complete before the
    old one goes); a mode's final state is written before its crash folder is cleared;
    under keep_states digest the verify stage removes the branch's three states."""
    state = STATE_BYTES_PER_PARAMETER * parameters * gzip_ratio
    crash_state = STATE_BYTES_PER_PARAMETER * parameters
    policy = POLICY_BYTES_PER_PARAMETER * parameters
    digest = config.storage.keep_states == "digest"
    held = peak = written = 0.0
    saves = 0
    for branch in branches(config):
        for mode in MODES:
            count = branch.crash_saves[mode]
            saves += count
            written += count * crash_state
            if count:
                peak = max(peak, held + 2 * crash_state)
            final = state + (policy if mode == "resume" else 0)
            peak = max(peak, held + final + (crash_state if count else 0))
            held += final
            written += final
        if digest:
            held -= 3 * state
    return {
        "peak_bytes": peak,
        "written_bytes": written,
        "held_at_end_bytes": held,
        "crash_checkpoints": saves,
        "crash_state_bytes": crash_state,
        "state_bytes": state,
        "policy_bytes": policy,
        "states_at_end": 0 if digest else 3 * len(branches(config)),
        "policies_at_end": len(branches(config)),
    }


def generated_tokens(config: Profile, response: float) -> dict:
    """Tokens sampled (GRPO: every branch and mode; evaluation: every policy, greedy and
    draws) when each answer is `response` tokens long."""
    c = config
    grpo = sum(
        2 * b.iterations * c.grpo.prompts_per_iteration * b.group_size
        for b in branches(config)
        if b.kind == "grpo"
    )
    evaluated = len(branches(config)) * c.evaluation.problems * (1 + c.evaluation.draws)
    return {
        "grpo_responses": grpo,
        "evaluated_responses": evaluated,
        "tokens": (grpo + evaluated) * response,
    }


# --------------------------------------------------------------------------- seconds
def _generation(device, shape, rows: int, prompt: float, response: float, cfg) -> float:
    """`rows` answers to prompts of `prompt` tokens: one at a time (with or without a KV
    cache), or one padded batch decoded with a cache until its longest answer ends."""
    p, r = round(prompt), max(1, round(response))
    if not cfg.sampling.batched:
        return rows * device.generate(shape, p, r, cfg.sampling.use_kv_cache)
    step = (
        rows * 2.0 * run_cost.parameters(shape) / device.flops
        + device.weights(shape)
        + device.call_seconds
    )  # every row's token from one read of the weights
    prefill = (
        rows * run_cost.forward_flops(shape, p) / device.flops
        + device.weights(shape)
        + device.call_seconds
    )
    return prefill + (r - 1) * step


def _sft_seconds(device, shape, section, sequence: int) -> float:
    """Both SFT runs of a branch (continuous; interrupt + resume): 2 x epochs epochs."""
    per_epoch = math.ceil(section.examples / section.batch_size)
    update = (
        section.batch_size * run_cost.training_flops(shape, sequence) / device.flops
        + 2 * (device.weights(shape) + device.call_seconds)
        + device.optimizer(shape)
    )
    validation = section.validation_examples * device.forward(shape, sequence)
    return 2 * section.epochs * (per_epoch * update + validation)


def _grpo_seconds(device, shape, branch: Branch, cfg, prompt: float, response: float) -> float:
    """Both GRPO runs of a branch (2 x iterations): sampling, the 2e-4 rescoring check, and
    each update's policy forward + backward, reference forward and AdamW step."""
    rows = cfg.grpo.prompts_per_iteration * branch.group_size
    sequence = round(prompt + response)
    rescoring = rows * device.forward(shape, sequence)
    update = rows * (
        device.training(shape, sequence) + device.forward(shape, sequence)
    ) + device.optimizer(shape)
    iteration = (
        _generation(device, shape, rows, prompt, response, cfg)
        + rescoring
        + cfg.grpo.updates_per_rollout * update
    )
    return 2 * branch.iterations * iteration


def _evaluation_seconds(device, shape, config, prompt: float, response: float) -> float:
    c = config
    passes = len(branches(config)) * (1 + c.evaluation.draws)  # greedy + each draw
    return passes * _generation(device, shape, c.evaluation.problems, prompt, response, c)


def _file_seconds(disk: dict, files: dict, digest: bool, count: int) -> float:
    """Writing, compressing, hashing and reading back states, crash checkpoints, policies:
    every written byte is written once and hashed twice (when written, by the stage marker);
    each branch's interrupt state is read back by its resume, and the two compared states by
    the comparison (inflated, hashed, hashed again for its report); digest: the three states
    are hashed once more when reduced."""
    sha, gz = files["sha256_seconds_per_gb"] / GB, files["gzip_seconds_per_gb"] / GB
    raw = disk["crash_state_bytes"]
    seconds = disk["written_bytes"] * (1 / DISK_WRITE_BYTES_PER_SECOND + 2 * sha)
    seconds += 3 * count * raw * gz  # three gz states per branch
    seconds += 3 * count * (raw * gz * INFLATE_SHARE + disk["state_bytes"] * sha)
    seconds += 2 * count * disk["state_bytes"] * sha
    if digest:
        seconds += 3 * count * disk["state_bytes"] * sha
    return seconds


@dataclass(frozen=True)
class Lengths:
    """Token lengths one timing assumes: the mean prompt, the mean canonical answer (what
    SFT trains on) and each generated answer (`response`: typical or worst case)."""

    prompt: float
    answer: float
    response: float


def time_plan(
    config: Profile, device, shape: dict, lengths: Lengths, disk: dict, files: dict
) -> dict:
    """Seconds by stage group on `device` when generated answers are `lengths.response` tokens."""
    c = config
    prompt, answer, response = lengths.prompt, lengths.answer, lengths.response
    sequence = round(prompt + answer)  # SFT trains on the canonical answers
    groups = {
        "warm-start SFT": _sft_seconds(device, shape, c.warmstart, sequence),
        "further SFT": _sft_seconds(device, shape, c.sft, sequence),
    }
    for branch in branches(config):
        if branch.kind == "grpo":
            key = "GRPO" if branch.name == "grpo" else "exercise GRPO"
            groups[key] = groups.get(key, 0.0) + _grpo_seconds(
                device, shape, branch, c, prompt, response
            )
    groups["evaluation"] = _evaluation_seconds(device, shape, config, prompt, response)
    groups["files"] = _file_seconds(
        disk, files, c.storage.keep_states == "digest", len(branches(config))
    )
    return {"groups": groups, "total_seconds": sum(groups.values())}


# --------------------------------------------------------------------------- the plan
def build_plan(config: Profile, record: dict | None = None) -> dict:
    """Everything `plan` prints, as data (the README test reads the same numbers)."""
    record = record or standin_record()
    c, shape = config, model_shape(config)
    parameters = run_cost.parameters(shape)
    files = record["files"]
    disk = disk_plan(config, parameters, files["gzip_ratio"])
    tokens = record["tokens"]
    cases = {"typical": tokens["answer_mean"], "worst case": float(c.tokens.max_response)}
    generated = {case: generated_tokens(config, length) for case, length in cases.items()}
    times = {
        device.name: {
            case: time_plan(
                config,
                device,
                shape,
                Lengths(tokens["prompt_mean"], tokens["answer_mean"], length),
                disk,
                files,
            )
            for case, length in cases.items()
        }
        for device in run_cost.GPUS
    }
    return {
        "profile": c.profile,
        "parameters": parameters,
        "keep_states": c.storage.keep_states,
        "sampling": (
            "batched, KV cache"
            if c.sampling.batched
            else "one sequence at a time, "
            + ("KV cache" if c.sampling.use_kv_cache else "no KV cache")
        ),
        "answer_tokens": cases,
        "prompt_tokens": tokens["prompt_mean"],
        "disk": disk,
        "generated": generated,
        "hours": {
            gpu: {case: t["total_seconds"] / 3600 for case, t in by_case.items()}
            for gpu, by_case in times.items()
        },
        "times": times,
    }


def format_plan(plan: dict) -> str:
    d = plan["disk"]
    lines = [
        f"plan for profile {plan['profile']}: {plan['parameters']:,} parameters; sampling "
        f"{plan['sampling']}; states kept: {plan['keep_states']}",
        f"disk: peak {d['peak_bytes'] / GB:.1f} GB, written {d['written_bytes'] / GB:.0f} GB "
        f"({d['crash_checkpoints']} crash checkpoints of {d['crash_state_bytes'] / GB:.2f} GB, "
        f"one kept at a time; a state {d['state_bytes'] / GB:.2f} GB gzipped, a policy "
        f"{d['policy_bytes'] / GB:.2f} GB); left at the end {d['held_at_end_bytes'] / GB:.1f} GB "
        f"({d['states_at_end']} states, {d['policies_at_end']} policies)",
    ]
    for case, length in plan["answer_tokens"].items():
        g = plan["generated"][case]
        lines.append(
            f"generated tokens, {case} (answers of {length:.1f} tokens): "
            f"{g['tokens']:,.0f} ({g['grpo_responses']:,} GRPO responses, "
            f"{g['evaluated_responses']:,} evaluation answers)"
        )
    lines.append("time (cost model, part1/run_cost.py; no GPU measured it):")
    for gpu, by_case in plan["hours"].items():
        lines.append(
            f"  {gpu:10s} typical {by_case['typical']:6.1f} h   worst case "
            f"{by_case['worst case']:6.1f} h"
        )
    return "\n".join(lines)


def command_plan(args) -> int:
    from verifiable_grpo.core.config import load_config

    config = load_config(args.config)
    try:
        plan = build_plan(config)
    except ValueError as err:  # a model whose shape the plan cannot know
        import sys

        print(f"error: {err}", file=sys.stderr)
        return 2
    check_feasible(plan)
    print(format_plan(plan))
    return 0


MAX_PLAN_HOURS = 24 * 365  # a budget that takes more than a year on the fastest GPU


def check_feasible(plan: dict) -> None:
    """ConfigError when even the fastest GPU class needs more than MAX_PLAN_HOURS for the
    typical run: such a budget is a typo, not a plan (`run` would refuse nothing else)."""
    fastest = min(hours["typical"] for hours in plan["hours"].values())
    if fastest > MAX_PLAN_HOURS:
        from verifiable_grpo.core.config import ConfigError

        raise ConfigError(
            [
                f"profile {plan['profile']}: the budgets need {fastest:,.0f} h on the fastest "
                f"GPU class, more than a year ({MAX_PLAN_HOURS:,} h); check the counts"
            ]
        )


LOGIT_COPIES = 3  # the policy's logits, the reference's, and the gradient of the first


def machine_memory(config: Profile) -> tuple[str, int]:
    """(where, bytes): the GPU's memory when the profile computes on one, else the RAM."""
    import os

    import torch

    if config.device != "cpu" and torch.cuda.is_available():
        return "the GPU", torch.cuda.mem_get_info()[1]
    return "this machine", os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def check_memory(config: Profile) -> None:
    """ConfigError, before any stage trains, when a GRPO update cannot fit: the batched
    path holds [P x G, response, vocabulary] logits of the policy and of the reference and
    a gradient, a lower bound of its peak, so a refusal here is never a run that would
    have fitted (instead of a MemoryError after the warm start trained)."""
    try:
        vocabulary = model_shape(config)["vocabulary"]
    except ValueError:  # a model whose shape only loading it tells: nothing to bound here
        return
    group = max(config.grpo.group_size, *config.exercise.group_sizes)
    rows = config.grpo.prompts_per_iteration * group if config.sampling.batched else 1
    need = rows * config.tokens.max_response * vocabulary * 4 * LOGIT_COPIES
    where, have = machine_memory(config)
    if need > have:
        from verifiable_grpo.core.config import ConfigError

        raise ConfigError(
            [
                f"profile {config.profile}: one GRPO update holds at least {need / GB:,.1f} GB "
                f"of logits ({rows:,} responses x {config.tokens.max_response} tokens x "
                f"{vocabulary:,} words), more than the {have / GB:,.1f} GB of {where}; lower "
                "grpo.prompts_per_iteration, the group sizes or tokens.max_response"
            ]
        )
