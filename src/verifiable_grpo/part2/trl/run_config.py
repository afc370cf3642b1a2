"""The TRL backend's run configuration (configs/part2/card-*.yaml, trl-*.yaml) and the
checks that must pass before any model loads.

A run configuration fixes the model (base, revision, dtype, LoRA shape), the data
(GSM8K from the Hub at a pinned revision, or a JSON-lines file of GSM8K-format items),
the budgets and the held-out evaluation; the treatment lock fixes the arms, the seeds and
the analysis. Every refusal is one line naming the key (ConfigError: exit 2).
"""

from __future__ import annotations

import os
from pathlib import Path

from verifiable_grpo.core import files
from verifiable_grpo.core import schema_checks as limits
from verifiable_grpo.core.config import ConfigError, read_yaml, resolve
from verifiable_grpo.part2 import gsm8k
from verifiable_grpo.training import trl_config

SCHEMA = "verifiable-grpo-trl-run-v1"
SECTIONS = {
    "model": {"name_or_path": str, "revision": (str, type(None)), "dtype": str, "lora": dict},
    "data": {"source": str, "instruction": str},
    "budget": {
        "steps": int,
        "prompts_per_step": int,
        "group_size": int,
        "micro_batch_rows": int,
        "learning_rate": float,
        "lr_scheduler": str,
        "warmup_steps": int,
        "weight_decay": float,
        "max_grad_norm": float,
        "beta": float,
        "temperature": float,
        "max_completion_length": int,
        "checkpoint_every_steps": int,
        "gradient_checkpointing": bool,
    },
    "heldout": {"problems": int, "max_new_tokens": int, "batch_size": int},
    "trl_pins": {},
}
DATA_KEYS = {
    "hub": ("name", "subset", "revision", "train_split", "test_split"),
    "jsonl": ("train", "test"),
}
LORA_KEYS = ("r", "alpha", "dropout", "target_modules")
DTYPES = ("float32", "bfloat16", "float16")
# Arms whose sampler draws a reward-dependent number of generation batches: every
# process would call TRL's collective gathers a different number of times.
SINGLE_PROCESS_SAMPLERS = ("dynamic", "aero")


# GRPOConfig fields the backend sets from the lock or the budget: never from trl_pins.
# An objective's own fields (trl_config.OBJECTIVE_ONLY) are refused here, in one line
# before any model loads, rather than by the GRPOConfig builder at the start of a run.
RESERVED_PINS = trl_config.OBJECTIVE_ONLY | {
    "num_iterations",
    "num_generations",
    "temperature",
    "learning_rate",
    "max_steps",
    "max_completion_length",
    "seed",
    "save_steps",
    "per_device_train_batch_size",
    "gradient_accumulation_steps",
    "steps_per_generation",
    "output_dir",
    "chat_template_kwargs",
    "report_to",
}
# Optional top-level `report_to`: where TRL also logs its metrics (the manifest always has
# them). Off unless asked: W&B needs an account, TensorBoard writes RUN/checkpoints/runs.
REPORT_TO = ("none", "tensorboard", "wandb")


def _typed(value, kind) -> bool:
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


def load_run_config(path) -> dict:
    """The checked run configuration at `path` (a file name, or a name under configs/part2)."""
    target = resolve(path)
    if not target.is_file() and not str(path).endswith(".yaml"):
        target = resolve(f"configs/part2/{path}.yaml")
    if not target.is_file():
        raise ConfigError([f"no TRL run configuration at {path}"])
    config = read_yaml(target)
    name = target.name
    if not isinstance(config, dict) or config.get("schema") != SCHEMA:
        raise ConfigError([f"{name}: schema must be {SCHEMA!r}"])
    if config.get("device") not in ("cpu", "cuda"):
        raise ConfigError([f"{name}: device must be 'cpu' or 'cuda', got {config.get('device')!r}"])
    for section, keys in SECTIONS.items():
        if not isinstance(config.get(section), dict):
            raise ConfigError([f"{name}: {section}: missing section"])
        for key, kind in keys.items():
            if key not in config[section]:
                raise ConfigError([f"{name}: {section}.{key}: missing"])
            if not _typed(config[section][key], kind):
                raise ConfigError(
                    [f"{name}: {section}.{key}: wrong type {type(config[section][key]).__name__}"]
                )
    _check_sections(config, name)
    if config.get("report_to", "none") not in REPORT_TO:
        raise ConfigError([f"{name}: report_to: one of {REPORT_TO}, got {config['report_to']!r}"])
    config["_source_file"] = str(path)
    return config


def _check_sections(config: dict, name: str) -> None:
    model, data, budget = config["model"], config["data"], config["budget"]
    if model["dtype"] not in DTYPES:
        raise ConfigError([f"{name}: model.dtype: one of {DTYPES}, got {model['dtype']!r}"])
    missing = [k for k in LORA_KEYS if k not in model["lora"]]
    if missing:
        raise ConfigError([f"{name}: model.lora.{missing[0]}: missing"])
    if data["source"] not in DATA_KEYS:
        raise ConfigError(
            [f"{name}: data.source: one of {tuple(DATA_KEYS)}, got {data['source']!r}"]
        )
    if not isinstance(data.setdefault("chat_template_kwargs", {}), dict):
        raise ConfigError([f"{name}: data.chat_template_kwargs: must be a mapping"])
    missing = [k for k in DATA_KEYS[data["source"]] if k not in data]
    if missing:
        raise ConfigError([f"{name}: data.{missing[0]}: missing for source {data['source']!r}"])
    for key in (
        "steps",
        "prompts_per_step",
        "micro_batch_rows",
        "max_completion_length",
        "checkpoint_every_steps",
    ):
        if budget[key] < 1:
            raise ConfigError([f"{name}: budget.{key}: must be >= 1, got {budget[key]}"])
    clash = [k for k in config["trl_pins"] if k in RESERVED_PINS]
    if clash:
        raise ConfigError(
            [f"{name}: trl_pins.{clash[0]}: set by the lock or the budget, not pinned here"]
        )
    if budget["group_size"] < 2:
        raise ConfigError([f"{name}: budget.group_size: must be >= 2"])
    _check_limits(config, name)
    if budget["temperature"] != 1.0:
        raise ConfigError([f"{name}: budget.temperature: the study samples at 1.0"])


# Upper limits grounded in the machine (core/schema_checks says why for the shared ones):
# past one, a run cannot finish, so it is refused before a model loads.
MAX_LORA_RANK = 8192  # above a model's hidden width a rank adds nothing (an 8B model's: 4,096)
MAX_HELDOUT = 100_000  # GSM8K's test split holds 1,319 problems
LIMITS = {
    ("budget", "steps"): (limits.MAX_ITERATIONS, limits.ITERATIONS_WHY),
    ("budget", "group_size"): (limits.MAX_GROUP, limits.GROUP_WHY),
    ("budget", "prompts_per_step"): (limits.MAX_ROLLOUT_ROWS, limits.GROUP_WHY),
    ("budget", "micro_batch_rows"): (limits.MAX_ROLLOUT_ROWS, limits.GROUP_WHY),
    ("budget", "warmup_steps"): (limits.MAX_ITERATIONS, limits.ITERATIONS_WHY),
    ("budget", "max_completion_length"): (limits.MAX_TOKENS, limits.TOKENS_WHY),
    ("heldout", "problems"): (MAX_HELDOUT, "more than any test split this backend reads"),
    ("heldout", "max_new_tokens"): (limits.MAX_TOKENS, limits.TOKENS_WHY),
    ("heldout", "batch_size"): (limits.MAX_ROLLOUT_ROWS, limits.GROUP_WHY),
}


def _check_limits(config: dict, name: str) -> None:
    """Every bounded count in range, LoRA's rank included, and no more held-out problems
    than a JSON-lines test file holds (`heldout.problems` is never silently cut)."""
    for (section, key), (most, why) in LIMITS.items():
        value = config[section][key]
        if not 1 <= value <= most and not (key == "warmup_steps" and value == 0):
            raise ConfigError(
                [f"{name}: {section}.{key}: must be in 1..{most:,} ({why}), got {value:,}"]
            )
    rank = config["model"]["lora"]["r"]
    if not _typed(rank, int) or not 1 <= rank <= MAX_LORA_RANK:
        raise ConfigError(
            [
                f"{name}: model.lora.r: must be an integer in 1..{MAX_LORA_RANK} (a rank above "
                f"a model's hidden width adds nothing), got {files.shorten(repr(rank), 40)}"
            ]
        )
    data = config["data"]
    if data["source"] == "jsonl" and resolve(data["test"]).is_file():
        count = len(gsm8k.read_items(resolve(data["test"])))
        if config["heldout"]["problems"] > count:
            raise ConfigError(
                [
                    f"{name}: heldout.problems: {config['heldout']['problems']:,} asked, "
                    f"{data['test']} holds {count}"
                ]
            )


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
    if not _typed(count, int) or count < 1:
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
