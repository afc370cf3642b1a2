"""The keys of a TRL run configuration (configs/part2/card-*.yaml, trl-*.yaml): each with its
type, range and meaning, declared once with the profile schema's `key`, and checked by the
same machinery (core/schema_validation.py): every problem at once, one line each, naming
the key path, an unknown key with a did-you-mean. Rules that relate keys follow the
classes; run_config.py loads a file through `TrlRunConfig` and checks it against the machine.
"""

from __future__ import annotations

from dataclasses import dataclass

from verifiable_grpo.core import schema_checks as limits
from verifiable_grpo.core.config import resolve
from verifiable_grpo.core.schema_checks import (
    A_GROUP,
    above,
    at_least,
    at_most,
    closed,
    exactly,
    key,
    one_of,
)
from verifiable_grpo.core.schema_validation import rule
from verifiable_grpo.part2 import gsm8k
from verifiable_grpo.training import trl_config

SCHEMA = "verifiable-grpo-trl-run-v1"
DTYPES = ("float32", "bfloat16", "float16")
# The keys each data source needs (the others it leaves out).
DATA_KEYS = {
    "hub": ("name", "subset", "revision", "train_split", "test_split"),
    "jsonl": ("train", "test"),
}
# Optional top-level `report_to`: where TRL also logs its metrics (the manifest always has
# them). Off unless asked: W&B needs an account, TensorBoard writes RUN/checkpoints/runs.
REPORT_TO = ("none", "tensorboard", "wandb")
# Upper limits grounded in the machine (core/schema_checks says why for the shared ones):
# past one, a run cannot finish, so it is refused before a model loads.
MAX_LORA_RANK = 8192  # above a model's hidden width a rank adds nothing (an 8B model's: 4,096)
MAX_HELDOUT = 100_000  # GSM8K's test split holds 1,319 problems
POSITIVE = at_least(1)

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


@dataclass(frozen=True)
class Lora:
    r: int = key(
        "adapter rank",
        POSITIVE,
        at_most(MAX_LORA_RANK, "a rank above a model's hidden width adds nothing"),
    )
    alpha: float = key("adapter alpha: the update is scaled by alpha/r", above(0))
    dropout: float = key("dropout on the adapter's input", closed(0, 1))
    target_modules: str = key("the modules peft wraps (all-linear: every linear layer)")


@dataclass(frozen=True)
class Model:
    name_or_path: str = key("hub id or local folder of the base model")
    revision: str | None = key("pinned hub revision (null: a local folder)")
    dtype: str = key("parameter dtype", one_of(*DTYPES))
    lora: Lora = key("the LoRA adapter that trains")


@dataclass(frozen=True)
class Data:
    source: str = key("where the GSM8K items come from", one_of(*DATA_KEYS))
    instruction: str = key("the instruction put before each problem")
    chat_template_kwargs: dict = key(
        "keyword arguments of the chat template (e.g. enable_thinking)", absent={}
    )
    name: str | None = key("hub dataset id (source hub)", absent=None)
    subset: str | None = key("hub dataset subset (source hub)", absent=None)
    revision: str | None = key("pinned hub dataset revision (source hub)", absent=None)
    train_split: str | None = key("hub split the prompts come from (source hub)", absent=None)
    test_split: str | None = key("hub split held out for evaluation (source hub)", absent=None)
    train: str | None = key("JSON-lines file of training items (source jsonl)", absent=None)
    test: str | None = key("JSON-lines file of held-out items (source jsonl)", absent=None)


@dataclass(frozen=True)
class Budget:
    steps: int = key("optimizer steps", POSITIVE, limits.ROUNDS)
    prompts_per_step: int = key("prompts per optimizer step", POSITIVE, limits.MOST_PROMPTS)
    group_size: int = key("completions per prompt", at_least(2, A_GROUP), limits.BIGGEST_GROUP)
    micro_batch_rows: int = key("rows per micro-batch", POSITIVE, limits.MOST_PROMPTS)
    learning_rate: float = key("AdamW learning rate", above(0))
    lr_scheduler: str = key("transformers' learning-rate schedule name")
    warmup_steps: int = key("warmup steps of the schedule", at_least(0), limits.ROUNDS)
    weight_decay: float = key("AdamW weight decay", at_least(0))
    max_grad_norm: float = key("gradient clipping norm", above(0))
    beta: float = key("KL coefficient (must equal the lock's arm's)", at_least(0))
    temperature: float = key("sampling temperature", exactly(1.0, "the study samples at 1.0"))
    max_completion_length: int = key("longest completion in tokens", POSITIVE, limits.LONGEST)
    checkpoint_every_steps: int = key("optimizer steps between checkpoints", POSITIVE)
    gradient_checkpointing: bool = key("recompute activations in the backward pass")


@dataclass(frozen=True)
class Heldout:
    problems: int = key(
        "held-out problems scored greedily",
        POSITIVE,
        at_most(MAX_HELDOUT, "more than any test split this backend reads"),
    )
    max_new_tokens: int = key("longest held-out answer in tokens", POSITIVE, limits.LONGEST)
    batch_size: int = key("held-out problems per generation batch", POSITIVE, limits.MOST_PROMPTS)


@dataclass(frozen=True)
class TrlRunConfig:
    schema: str = key("the file's format", one_of(SCHEMA))
    name: str | None = key("the configuration's name", absent=None)
    device: str = key("where the run trains", one_of("cpu", "cuda"))
    model: Model = key("the base model and its adapter")
    data: Data = key("the GSM8K items and the prompt")
    budget: Budget = key("the run's layout, rates and budgets")
    heldout: Heldout = key("the held-out evaluation")
    trl_pins: dict = key("further GRPOConfig fields, pinned as the run had them")
    report_to: str = key("where TRL also logs its metrics", one_of(*REPORT_TO), absent="none")


@rule(Data, "source", *sorted({k for keys in DATA_KEYS.values() for k in keys}))
def _the_sources_keys(data: dict, _section):
    for name in DATA_KEYS[data["source"]]:
        if data[name] is None:
            yield name, f"missing for source {data['source']!r}"


@rule(TrlRunConfig, "trl_pins")
def _no_pin_the_lock_or_budget_sets(config: dict, _section):
    for name in sorted(set(config["trl_pins"]) & RESERVED_PINS):
        yield f"trl_pins.{name}", "set by the lock or the budget, not pinned here"


@rule(TrlRunConfig, "data", "heldout")
def _no_more_heldout_problems_than_the_file_holds(config: dict, _section):
    """`heldout.problems` is never silently cut to what a JSON-lines test file holds."""
    data, asked = config["data"], config["heldout"]["problems"]
    if data["source"] != "jsonl" or not resolve(data["test"]).is_file():
        return
    count = len(gsm8k.read_items(resolve(data["test"])))
    if asked > count:
        yield "heldout.problems", f"{asked:,} asked, {data['test']} holds {count}"
