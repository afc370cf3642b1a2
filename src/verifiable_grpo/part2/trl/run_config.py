"""The TRL backend's run configuration (configs/part2/card-*.yaml, trl-*.yaml) and the
checks that must pass before any model loads.

A run configuration fixes the model (base, revision, dtype, LoRA shape), the data
(GSM8K from the Hub at a pinned revision, or a JSON-lines file of GSM8K-format items),
the budgets and the held-out evaluation; the treatment lock fixes the arms, the seeds and
the analysis. Its keys are declared once, in run_schema.py; every refusal is one line naming
the key (ConfigError: exit 2).
"""

from __future__ import annotations

import copy
import os
from pathlib import Path

from verifiable_grpo.core.config import ConfigError, read_yaml, resolve
from verifiable_grpo.core.schema_validation import build, check_section
from verifiable_grpo.part2.trl.run_schema import TrlRunConfig

# Arms whose sampler draws a reward-dependent number of generation batches: every
# process would call TRL's collective gathers a different number of times.
SINGLE_PROCESS_SAMPLERS = ("dynamic", "aero")


def load_run_config(path) -> dict:
    """The checked run configuration at `path` (a file name, or a name under configs/part2):
    a new mapping, checked whole against run_schema.TrlRunConfig (ConfigError: every problem,
    one line each naming the key), with `_source_file` noting where it came from."""
    target = resolve(path)
    if not target.is_file() and not str(path).endswith(".yaml"):
        target = resolve(f"configs/part2/{path}.yaml")
    if not target.is_file():
        raise ConfigError([f"no TRL run configuration at {path}"])
    raw, problems = read_yaml(target), []
    given = check_section(TrlRunConfig, copy.deepcopy(raw), "", "", problems)
    if problems:
        raise ConfigError([f"{target.name}: {problem}" for problem in problems])
    settings = build(TrlRunConfig, given)
    # The run's identity hash (backend.bind_run_config) has always covered the chat
    # template's keyword arguments, {} when the file leaves them out.
    data = {**given["data"], "chat_template_kwargs": settings.data.chat_template_kwargs}
    return {**given, "data": data, "_source_file": str(path)}


def process_counts(config: dict) -> list[int]:
    """The process counts one run can use: those that split a step's prompts x group_size
    rows into whole groups (the divisors of prompts_per_step). A group never straddles
    processes, so each process's telemetry (rewards, ZVF) sees whole groups. The card's
    4 prompts allow 1, 2 or 4 processes; a bigger node runs several runs at once
    (`family study --devices`)."""
    prompts = config["budget"]["prompts_per_step"]
    return [n for n in range(1, prompts + 1) if prompts % n == 0]


def step_layout(config: dict, processes: int) -> dict:
    """GRPOConfig's batch fields for `processes` processes: one generation batch of
    prompts x group_size rows per optimizer step, split into micro-batches."""
    budget = config["budget"]
    rows = budget["prompts_per_step"] * budget["group_size"]
    micro = budget["micro_batch_rows"]
    counts = process_counts(config)
    if processes not in counts:
        raise ConfigError(
            [
                f"{config.get('name')}: {rows} rows per step ({budget['prompts_per_step']} "
                f"prompts x {budget['group_size']}) split into whole groups over "
                f"{', '.join(map(str, counts))} process(es), not {processes}: set "
                "accelerate's num_processes to one of these (more GPUs: run several runs "
                "at once with `family study --devices`)"
            ]
        )
    share = rows // processes
    if share % micro:
        fits = [m for m in range(1, share + 1) if share % m == 0]
        raise ConfigError(
            [
                f"{config.get('name')}: budget.micro_batch_rows {micro} does not divide the "
                f"{share} rows each of {processes} process(es) gets per step: use one of "
                f"{', '.join(map(str, fits))}"
            ]
        )
    accumulation = share // micro
    return {
        "per_device_train_batch_size": micro,
        "gradient_accumulation_steps": accumulation,
        "steps_per_generation": accumulation,
        "num_generations": budget["group_size"],
    }


def read_process_count(accelerate_file) -> int:
    """num_processes of an accelerate config file (1 when absent)."""
    path = resolve(accelerate_file)
    if not path.is_file():
        raise ConfigError([f"no accelerate config at {accelerate_file}"])
    found = read_yaml(path) or {}
    count = found.get("num_processes", 1)
    if type(count) is not int or count < 1:
        raise ConfigError([f"{Path(path).name}: num_processes must be a positive integer"])
    return count


def check_machine(config: dict, processes: int, sampler_kind: str, cuda_count=None) -> None:
    """Before any model loads: a CUDA config needs CUDA, the process count must fit the
    GPUs, and an arm that samples per process refuses several processes."""
    if cuda_count is None:
        import torch

        cuda_count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    name = config.get("name")
    if config["device"] == "cuda" and cuda_count == 0:
        raise ConfigError(
            [
                f"{name}: device 'cuda' but this machine has no CUDA GPU; nothing "
                f"was loaded (run {config['model']['name_or_path']} on a GPU "
                "machine, or use a device: cpu config such as trl-smoke)"
            ]
        )
    if config["device"] == "cuda" and processes > cuda_count:
        raise ConfigError(
            [
                f"{name}: accelerate num_processes is {processes} but this machine "
                f"has {cuda_count} CUDA GPU(s): set num_processes <= {cuda_count}"
            ]
        )
    if processes > 1 and sampler_kind in SINGLE_PROCESS_SAMPLERS:
        raise ConfigError(
            [
                f"{name}: the {sampler_kind} sampler draws a reward-dependent number "
                f"of generation batches, which TRL cannot split over {processes} "
                "processes: run this arm with configs/accelerate/one-gpu.yaml"
            ]
        )
    step_layout(config, processes)


def world_size() -> int:
    """The process count of the current launch (accelerate sets WORLD_SIZE)."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def process_rank() -> int:
    """This process's rank in the launch (0 alone or when not launched by accelerate)."""
    return int(os.environ.get("RANK", "0"))
