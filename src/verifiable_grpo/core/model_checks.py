"""Is the loaded network the one the config declares, and does it train what it should?

One table of architectures (class, model_type, how to count its parameters from its shape),
one set of checks for all of them: the class, tied embeddings as configured, FP32 only, the
attention kernel, the unique-parameter count, the vocabulary against the tokenizer, and
which tensors train. A full fine-tune must train every tensor: a frozen one is refused by
name, because a frozen layer trains nothing and says nothing. A config that declares
adapters (model.trainable: adapters) may freeze the base, as long as trainable adapter
tensors exist.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import torch

from verifiable_grpo.core.config import resolve
from verifiable_grpo.core.config_schema import Profile

# What a profile without model.architecture means (config_schema.Model reads it so), and
# the class of a v1 policy file, which did not record its class.
DEFAULT_ARCHITECTURE = "Qwen2ForCausalLM"
TRAINABLE_MODES = ("full", "adapters")
# A parameter whose dotted name has a part like these belongs to an adapter: peft's LoRA
# (lora_A, lora_B, lora_embedding_A, lora_magnitude_vector) or a module named adapter(s).
ADAPTER_PART = re.compile(r"lora_[A-Za-z0-9_]*|adapters?")


@dataclass(frozen=True)
class Architecture:
    """A decoder family the package can check and build."""

    name: str  # the transformers class, e.g. Qwen2ForCausalLM
    model_type: str  # its config's model_type, e.g. qwen2
    config_class: str  # e.g. Qwen2Config
    qkv_bias: bool  # Qwen2 has biases on q, k, v; Llama has none unless attention_bias


ARCHITECTURES = {
    a.name: a
    for a in (
        Architecture("Qwen2ForCausalLM", "qwen2", "Qwen2Config", qkv_bias=True),
        Architecture("LlamaForCausalLM", "llama", "LlamaConfig", qkv_bias=False),
    )
}


def architecture_spec(name: str) -> Architecture:
    """The entry for a class name; a clear error for any other."""
    if name not in ARCHITECTURES:
        raise ValueError(
            f"unknown model architecture {name!r}: this package checks and builds "
            f"{', '.join(ARCHITECTURES)}; set model.architecture to one of them "
            "(a new family needs an entry in model_checks.ARCHITECTURES)"
        )
    return ARCHITECTURES[name]


def declared_architecture(config: Profile) -> Architecture:
    return architecture_spec(config.model.architecture)


def trainable_mode(config: Profile, trainable: str | None = None) -> str:
    """The config's model.trainable, or the caller's `trainable` (checked here)."""
    mode = trainable or config.model.trainable
    if mode not in TRAINABLE_MODES:
        raise ValueError(f"trainable must be one of {', '.join(TRAINABLE_MODES)}, got {mode!r}")
    return mode


# ---------------------------------------------------------------- counting
def decoder_parameter_count(model_config, spec: Architecture) -> int:
    """Unique parameters of a Qwen2/Llama decoder from its shape alone (tied head counted once)."""
    c = model_config
    h, f, layers = c.hidden_size, c.intermediate_size, c.num_hidden_layers
    head_dim = getattr(c, "head_dim", None) or h // c.num_attention_heads
    q, kv = c.num_attention_heads * head_dim, c.num_key_value_heads * head_dim
    attention = h * q + 2 * h * kv + q * h
    if spec.qkv_bias:
        attention += q + 2 * kv  # Qwen2: q, k, v biases; o has none
    elif getattr(c, "attention_bias", False):
        attention += q + 2 * kv + h  # Llama's switch puts a bias on q, k, v and o
    mlp = 3 * h * f + ((2 * f + h) if getattr(c, "mlp_bias", False) else 0)
    per_layer = attention + mlp + 2 * h  # two RMSNorms
    head = 0 if c.tie_word_embeddings else c.vocab_size * h
    return c.vocab_size * h + layers * per_layer + h + head


def qwen2_parameter_count(model_config) -> int:
    """Unique parameters of a Qwen2 decoder, from its shape alone."""
    return decoder_parameter_count(model_config, ARCHITECTURES["Qwen2ForCausalLM"])


def is_adapter_parameter(name: str) -> bool:
    return any(ADAPTER_PART.fullmatch(part) for part in name.split("."))


def named_unique_parameters(model) -> list[tuple[str, torch.nn.Parameter]]:
    """(first name, parameter) for each parameter once, even where two names share it."""
    seen, unique = set(), []
    for name, parameter in model.named_parameters(remove_duplicate=False):
        if id(parameter) not in seen:
            seen.add(id(parameter))
            unique.append((name, parameter))
    return unique


def all_unique_parameters(model) -> list[torch.nn.Parameter]:
    """Every parameter once (tied embeddings counted once), trainable or not."""
    return [p for _, p in named_unique_parameters(model)]


def unique_parameters(model) -> list[torch.nn.Parameter]:
    """What the optimizer gets: each trainable parameter once."""
    return [p for p in all_unique_parameters(model) if p.requires_grad]


def base_model_of(model):
    """The network under an adapter wrapper (peft's PeftModel), else the model itself."""
    get_base = getattr(model, "get_base_model", None)
    return get_base() if callable(get_base) else model


def expected_parameter_count(model, config: Profile) -> int:
    """The config's count when given, else the local base's BUILD.json, else the shape's formula."""
    m = config.model
    if m.expected_unique_parameters is not None:
        return m.expected_unique_parameters
    folder = resolve(m.path) if m.path else None
    if m.source == "local" and folder is not None and (folder / "BUILD.json").is_file():
        build = json.loads((folder / "BUILD.json").read_text())
        for key in ("unique_parameters", "parameters"):
            if isinstance(build.get(key), int):
                return build[key]
    spec = ARCHITECTURES.get(type(base_model_of(model)).__name__, declared_architecture(config))
    return decoder_parameter_count(model.config, spec)


# ---------------------------------------------------------------- the checks
def _listed(names: list[str], limit: int = 5) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def trainability_problems(model, mode: str) -> list[str]:
    """What is wrong with which tensors train, under full or adapters."""
    named = named_unique_parameters(model)
    frozen = [n for n, p in named if not p.requires_grad]
    adapters = [(n, p) for n, p in named if is_adapter_parameter(n)]
    if mode == "full":
        if adapters:
            return [
                f"adapter tensors ({_listed([n for n, _ in adapters])}) in a full fine-tune: "
                "set model.trainable: adapters to train adapters"
            ]
        if frozen:
            return [
                f"{len(frozen)} parameter tensors do not require gradients "
                f"({_listed(frozen)}): a full fine-tune trains every tensor; unfreeze them, "
                "or declare model.trainable: adapters if only adapters should train"
            ]
        return []
    frozen_adapters = [n for n, p in adapters if not p.requires_grad]
    if not adapters:
        return [
            "model.trainable is adapters but the model has no adapter tensors (names with "
            "lora_* or adapter): attach the adapters before training"
        ]
    if frozen_adapters:
        return [
            f"{len(frozen_adapters)} adapter tensors do not require gradients "
            f"({_listed(frozen_adapters)}): adapters are what trains"
        ]
    return []


def architecture_problems(model, config: Profile, tokenizer=None) -> list[str]:
    """What differs from the declared architecture (class, embeddings, dtype, size, attention,
    vocabulary); the base's count excludes adapter tensors."""
    m = config.model
    spec = declared_architecture(config)
    base = base_model_of(model)
    problems = []
    name = type(base).__name__
    if name != spec.name:
        problems.append(f"architecture is {name}, expected {spec.name}")
    want_tied = m.tie_word_embeddings
    tied = bool(getattr(base.config, "tie_word_embeddings", False))
    shared = base.get_output_embeddings().weight is base.get_input_embeddings().weight
    if want_tied and not (tied and shared):
        problems.append(
            f"embeddings not tied (config flag {tied}, lm_head.weight is the "
            f"embedding tensor: {shared})"
        )
    if not want_tied and shared:
        problems.append("embeddings are tied, but model.tie_word_embeddings is false")
    named = named_unique_parameters(model)
    count = sum(p.numel() for n, p in named if not is_adapter_parameter(n))
    expected = expected_parameter_count(base, config)
    if count != expected:
        problems.append(f"{count:,} unique parameters, expected {expected:,}")
    dtypes = sorted({str(p.dtype) for _, p in named})
    if named and dtypes != ["torch.float32"]:
        problems.append(f"parameter dtypes {dtypes}, expected only torch.float32")
    attention = getattr(base.config, "_attn_implementation", None)
    if attention != m.attn_implementation:
        problems.append(
            f"attention implementation {attention!r}, expected {m.attn_implementation!r}"
        )
    rows = base.get_output_embeddings().weight.shape[0]
    vocabulary = getattr(base.config, "vocab_size", rows)
    if rows != vocabulary:
        problems.append(
            f"the output layer has {rows} rows but the config's vocabulary is {vocabulary}"
        )
    if tokenizer is not None and len(tokenizer) > vocabulary:
        problems.append(
            f"the tokenizer has {len(tokenizer)} tokens but the model's vocabulary "
            f"is {vocabulary}: ids past it have no embedding; load the tokenizer "
            "that belongs to these weights"
        )
    return problems


def architecture_report(
    model,
    config: Profile,
    tokenizer=None,
    trainable: str | None = None,
    check_training: bool = True,
) -> dict:
    """Raise ValueError listing every problem; else a summary of what was checked."""
    mode = trainable_mode(config, trainable)
    problems = architecture_problems(model, config, tokenizer)
    if check_training:
        problems += trainability_problems(model, mode)
    if problems:
        raise ValueError("Model fails the architecture checks: " + "; ".join(problems))
    base = base_model_of(model)
    named = named_unique_parameters(model)
    return {
        "architecture": type(base).__name__,
        "unique_parameters": sum(p.numel() for n, p in named if not is_adapter_parameter(n)),
        "trainable_parameters": sum(p.numel() for p in unique_parameters(model)),
        "adapter_parameters": sum(p.numel() for n, p in named if is_adapter_parameter(n)),
        "trainable": mode,
        "tied_embeddings": base.get_output_embeddings().weight
        is base.get_input_embeddings().weight,
        "dtype": "float32",
        "attn_implementation": getattr(base.config, "_attn_implementation", None),
    }
