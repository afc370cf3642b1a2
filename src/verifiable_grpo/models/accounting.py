"""Memory and compute accounting for fine-tuning a decoder: a calculator, not a measurement.

`ModelShape` holds what the arithmetic needs (vocabulary, width, layers, heads, FFN width,
tied or untied tables); `TrainingSetup` holds how it is trained (full, LoRA or QLoRA, the
storage dtype, the optimizer, sequence length and batch). `memory_table` turns the two
into rows of bytes, shown in decimal GB (10^9 bytes) and in GiB (2^30 bytes): the same
byte count reads about 7 % smaller in GiB, which is how a "80 GB" card and a "74.5 GiB"
allocator report describe one budget.

Conventions (each one named where it is used):
- mixed-precision full fine-tuning with AdamW keeps, per trained parameter, 2 bytes of
  16-bit weights, 2 of 16-bit gradients, 4 of FP32 master weights and 8 of FP32 moments:
  16 bytes before activations;
- FLOPs per token: 2 per matmul weight forward, 4 more backward, and an attention term of
  2·L·T·d forward (6·L·T·d with backward) at context length T; the input lookup is free;
- activations under full checkpointing: each layer's input stays stored, and one layer is
  recomputed at a time, whose live tensors are counted by `layer_activation_values`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

# Bytes per stored value. "nf4" is the bare 4-bit code; its scales are added by
# verifiable_grpo.part3.quantisation.bits_per_weight.
DTYPE_BYTES = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "int8": 1.0, "nf4": 0.5}
METHODS = ("full", "lora", "qlora")
# Bytes of optimizer state per trained parameter (FP32 moments).
OPTIMIZER_BYTES = {"adamw": 8.0, "sgd-momentum": 4.0, "sgd": 0.0}
PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
GB, GIB = 1e9, float(2**30)


def _positive_int(name: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")


def _known(name: str, value: str, table) -> None:
    if value not in table:
        raise ValueError(f"unknown {name} {value!r}; choose one of {', '.join(table)}")


@dataclass(frozen=True)
class ModelShape:
    """A Llama/Qwen2-style decoder: attention with grouped KV heads and a gated FFN."""

    name: str
    vocab: int
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    ffn: int
    tied: bool
    qkv_bias: bool = False
    head_dim: int | None = None

    def __post_init__(self):
        for key in ("vocab", "hidden", "layers", "heads", "kv_heads", "ffn"):
            _positive_int(key, getattr(self, key))
        if self.head_dim is not None:
            _positive_int("head_dim", self.head_dim)
        elif self.hidden % self.heads:
            raise ValueError(f"hidden ({self.hidden}) must be a multiple of heads ({self.heads})")
        if self.heads % self.kv_heads:
            raise ValueError(
                f"heads ({self.heads}) must be a multiple of kv_heads ({self.kv_heads})"
            )

    @property
    def dim_per_head(self) -> int:
        return self.head_dim or self.hidden // self.heads

    def projection_shapes(self) -> dict[str, tuple[int, int]]:
        """(in, out) features of the seven projections of one layer."""
        d, f = self.hidden, self.ffn
        q, kv = self.heads * self.dim_per_head, self.kv_heads * self.dim_per_head
        return {
            "q_proj": (d, q),
            "k_proj": (d, kv),
            "v_proj": (d, kv),
            "o_proj": (q, d),
            "gate_proj": (d, f),
            "up_proj": (d, f),
            "down_proj": (f, d),
        }

    def block_parameters(self) -> int:
        """Everything but the embedding and output tables: L layers plus the final norm."""
        shapes = self.projection_shapes()
        per_layer = sum(i * o for i, o in shapes.values()) + 2 * self.hidden  # two norms
        if self.qkv_bias:
            per_layer += sum(shapes[p][1] for p in ("q_proj", "k_proj", "v_proj"))
        return self.layers * per_layer + self.hidden

    def table_parameters(self) -> int:
        """The embedding table, plus the output head when it is not tied to it."""
        return self.vocab * self.hidden * (1 if self.tied else 2)

    def parameters(self) -> int:
        return self.block_parameters() + self.table_parameters()

    def matmul_parameters(self) -> int:
        """N - V·d: the input lookup does no arithmetic (a tied head still multiplies)."""
        return self.parameters() - self.vocab * self.hidden


def shape_from_config(name: str, config) -> ModelShape:
    """A ModelShape from a transformers config (or a dict of its fields)."""
    get = (
        config.get
        if isinstance(config, dict)
        else lambda key, default=None: getattr(config, key, default)
    )
    missing = [
        k
        for k in (
            "vocab_size",
            "hidden_size",
            "num_hidden_layers",
            "num_attention_heads",
            "intermediate_size",
        )
        if get(k) is None
    ]
    if missing:
        raise ValueError(f"config of {name} lacks {', '.join(missing)}")
    model_type = get("model_type", "")
    return ModelShape(
        name=name,
        vocab=get("vocab_size"),
        hidden=get("hidden_size"),
        layers=get("num_hidden_layers"),
        heads=get("num_attention_heads"),
        kv_heads=get("num_key_value_heads") or get("num_attention_heads"),
        ffn=get("intermediate_size"),
        tied=bool(get("tie_word_embeddings", False)),
        qkv_bias=model_type == "qwen2" or bool(get("attention_bias", False)),
        head_dim=get("head_dim"),
    )


# ---------------------------------------------------------------- LoRA
def lora_parameters(shape: ModelShape, rank: int, targets=PROJECTIONS) -> int:
    """Adapter parameters: r·(in + out) for each adapted projection of every layer."""
    _positive_int("rank", rank)
    shapes = shape.projection_shapes()
    for target in targets:
        _known("LoRA target", target, shapes)
        width = min(shapes[target])
        if rank > width:
            raise ValueError(
                f"LoRA rank {rank} exceeds the width {width} of {target} in "
                f"{shape.name}: a rank above min(in, out) adds no expressiveness"
            )
    return shape.layers * sum(rank * sum(shapes[t]) for t in targets)


def lora_scale(alpha: float, rank: int, rank_stabilised: bool = False) -> float:
    """The factor on B·A: alpha / r (LoRA) or alpha / sqrt(r) (rsLoRA)."""
    _positive_int("rank", rank)
    if not alpha > 0:
        raise ValueError(f"alpha must be positive, got {alpha!r}")
    return alpha / math.sqrt(rank) if rank_stabilised else alpha / rank


# ---------------------------------------------------------------- the setup
@dataclass(frozen=True)
class TrainingSetup:
    method: str = "full"  # full | lora | qlora
    weights_dtype: str = "bf16"  # how frozen (and trained, in compute) weights are stored
    optimizer: str = "adamw"
    sequence_length: int = 8192
    batch: int = 1  # sequences per step
    lora_rank: int = 64
    lora_targets: tuple = PROJECTIONS
    checkpointing: bool = True
    activation_dtype: str = "bf16"
    logits_dtype: str = "fp32"
    master_weights: bool = True  # FP32 master copy (mixed precision); False: train in place
    qlora_bits: float = field(default=4.127)  # per quantised block weight, scales included

    def __post_init__(self):
        _known("method", self.method, METHODS)
        _known("optimizer", self.optimizer, OPTIMIZER_BYTES)
        for key in ("weights_dtype", "activation_dtype", "logits_dtype"):
            _known(f"dtype for {key}", getattr(self, key), DTYPE_BYTES)
        for key in ("sequence_length", "batch", "lora_rank"):
            _positive_int(key, getattr(self, key))
        if not 0 < self.qlora_bits <= 32:
            raise ValueError(f"qlora_bits must be in (0, 32], got {self.qlora_bits!r}")


def trained_bytes_per_parameter(setup: TrainingSetup) -> dict[str, float]:
    """Bytes per trained parameter, by kind (16 for bf16 + FP32 master + AdamW)."""
    weight = DTYPE_BYTES[setup.weights_dtype]
    parts = {
        "weights": weight,
        "gradients": weight,
        "master weights": 4.0 if setup.master_weights and weight < 4 else 0.0,
        "optimizer moments": OPTIMIZER_BYTES[setup.optimizer],
    }
    return parts


def trained_parameters(shape: ModelShape, setup: TrainingSetup) -> int:
    if setup.method == "full":
        return shape.parameters()
    return lora_parameters(shape, setup.lora_rank, setup.lora_targets)


# ---------------------------------------------------------------- compute
def flops_per_token(shape: ModelShape, sequence_length: int, method: str) -> float:
    """Training FLOPs per token: (6 or 4)·N_matmul + 6·L·T·d (adapter overhead left out)."""
    _known("method", method, METHODS)
    _positive_int("sequence_length", sequence_length)
    weight_factor = 6 if method == "full" else 4  # frozen weights get no weight gradient
    attention = 6 * shape.layers * sequence_length * shape.hidden
    return float(weight_factor * shape.matmul_parameters() + attention)


def forward_flops_per_token(shape: ModelShape, sequence_length: int) -> float:
    """One forward pass: 2·N_matmul + 2·L·T·d (scoring or generating a token)."""
    _positive_int("sequence_length", sequence_length)
    return float(2 * shape.matmul_parameters() + 2 * shape.layers * sequence_length * shape.hidden)


# ---------------------------------------------------------------- activations
def layer_activation_values(shape: ModelShape) -> int:
    """Values per token one layer keeps for its backward pass (flash attention, so no T²):
    its input and normed input (2d), q, k, v (d + 2·kv), the attention output (d), the
    residual sum and its normed copy (2d), and gate, up and their gated product (3f)."""
    kv = shape.kv_heads * shape.dim_per_head
    q = shape.heads * shape.dim_per_head
    return 5 * shape.hidden + q + 2 * kv + 3 * shape.ffn


def activation_bytes(shape: ModelShape, setup: TrainingSetup) -> float:
    """Checkpointed: L stored layer inputs plus one recomputed layer; else every layer."""
    tokens = setup.sequence_length * setup.batch
    size = DTYPE_BYTES[setup.activation_dtype]
    one_layer = layer_activation_values(shape) * tokens * size
    if setup.checkpointing:
        return shape.layers * shape.hidden * tokens * size + one_layer
    return shape.layers * one_layer


def logits_bytes(shape: ModelShape, setup: TrainingSetup) -> float:
    """A materialised [batch, T, V] logits tensor (chunking the loss avoids it)."""
    return float(
        setup.batch * setup.sequence_length * shape.vocab * DTYPE_BYTES[setup.logits_dtype]
    )


# ---------------------------------------------------------------- the table
def frozen_weight_bytes(shape: ModelShape, setup: TrainingSetup) -> float:
    """The base under an adapter: 16-bit (LoRA), or quantised blocks with 16-bit tables (QLoRA)."""
    if setup.method == "full":
        return 0.0
    if setup.method == "lora":
        return shape.parameters() * DTYPE_BYTES[setup.weights_dtype]
    quantised = (
        shape.block_parameters() - (2 * shape.layers + 1) * shape.hidden
    )  # norms stay 16-bit
    return (
        quantised * setup.qlora_bits / 8
        + (shape.parameters() - quantised) * DTYPE_BYTES[setup.weights_dtype]
    )


def memory_rows(shape: ModelShape, setup: TrainingSetup) -> list[tuple[str, float]]:
    """(component, bytes) for one training step; the last row is the total."""
    trained = trained_parameters(shape, setup)
    rows = [("frozen base weights", frozen_weight_bytes(shape, setup))]
    rows += [
        (f"trained {kind}", trained * size)
        for kind, size in trained_bytes_per_parameter(setup).items()
    ]
    rows += [
        ("activations", activation_bytes(shape, setup)),
        ("logits", logits_bytes(shape, setup)),
    ]
    rows.append(("total", sum(b for _, b in rows)))
    return rows


def memory_table(shape: ModelShape, setup: TrainingSetup) -> list[dict]:
    """memory_rows with decimal GB and binary GiB side by side."""
    return [
        {"component": name, "bytes": size, "GB": size / GB, "GiB": size / GIB}
        for name, size in memory_rows(shape, setup)
    ]


def summary(shape: ModelShape, setup: TrainingSetup) -> dict:
    """The headline numbers of one (model, setup) pair."""
    trained = trained_parameters(shape, setup)
    return {
        "model": shape.name,
        "method": setup.method,
        "parameters": shape.parameters(),
        "trained": trained,
        "trained_fraction": trained / shape.parameters(),
        "flops_per_token": flops_per_token(shape, setup.sequence_length, setup.method),
        "total_GB": memory_rows(shape, setup)[-1][1] / GB,
    }


# ---------------------------------------------------------------- the book's three models
# The module's case-study model, reconstructed: V, d and N are printed there; L = 36 is the
# only depth that gives its FLOP figures at T = 8,192; 32 heads of 128 with 8 KV heads and
# an FFN of 15,360 then give exactly its 9,550,729,216 parameters (untied tables).
CASE_STUDY = ModelShape(
    name="case-study 9.55B",
    vocab=152_064,
    hidden=4096,
    layers=36,
    heads=32,
    kv_heads=8,
    ffn=15_360,
    tied=False,
)
# Qwen2.5-0.5B-Instruct (the qwen profile), from its published config.json.
QWEN2_5_0_5B = ModelShape(
    name="Qwen2.5-0.5B",
    vocab=151_936,
    hidden=896,
    layers=24,
    heads=14,
    kv_heads=2,
    ffn=4864,
    tied=True,
    qkv_bias=True,
)


def smollm2_135m() -> ModelShape:
    """SmolLM2-135M as the Part III labs load it (models.smollm2's config, read from the GGUF file)."""
    from verifiable_grpo.models.smollm2 import SMOLLM2_135M

    return shape_from_config("SmolLM2-135M", SMOLLM2_135M)
