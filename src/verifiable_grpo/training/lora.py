"""LoRA written out: a frozen nn.Linear plus a trainable low-rank update.

    y = W x + b + (alpha / r) * B (A dropout(x)),   A: r x in,  B: out x r,  B = 0 at start

Because B starts at zero the wrapped model computes exactly the base function before the
first update (the update term is a product with an all-zero matrix, so the sum adds +0.0).
The gradient reaches B through A x and reaches A only through B, so the first step moves B
alone. `merge_lora` folds W + (alpha/r) B A into one plain nn.Linear, so a merged model has
the base's parameter count and no extra matmul.

Parameter names end in `lora_A` / `lora_B`, the parts `core.model_checks.is_adapter_parameter`
recognises (as it does peft's), so `model.trainable: adapters` works with these wrappers.
The layout matches peft's LoraLayer (A kaiming-uniform like nn.Linear, B zero, scaling
alpha/r, dropout on the input of A only); tests check outputs and gradients against peft.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

# Every projection of a Llama / Qwen2 decoder block.
BLOCK_PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


class LoRALinear(nn.Module):
    """nn.Linear `base` (frozen) plus scale * B A; `base` keeps its weight and bias."""

    def __init__(self, base: nn.Linear, rank: int, alpha: float, dropout: float = 0.0):
        super().__init__()
        if not isinstance(base, nn.Linear):
            raise TypeError(f"LoRALinear wraps an nn.Linear, got {type(base).__name__}")
        if not isinstance(rank, int) or rank < 1:
            raise ValueError(f"LoRA rank must be a positive integer, got {rank!r}")
        if rank > min(base.in_features, base.out_features):
            raise ValueError(
                f"LoRA rank {rank} exceeds min(in, out) = "
                f"{min(base.in_features, base.out_features)}: no low-rank saving"
            )
        if not alpha > 0:
            raise ValueError(f"LoRA alpha must be positive, got {alpha!r}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"LoRA dropout must be in [0, 1), got {dropout!r}")
        self.base = base
        self.rank, self.alpha, self.scaling = rank, alpha, alpha / rank
        self.dropout = nn.Dropout(dropout) if dropout > 0 else nn.Identity()
        factory = dict(device=base.weight.device, dtype=base.weight.dtype)
        self.lora_A = nn.Parameter(torch.empty(rank, base.in_features, **factory))
        self.lora_B = nn.Parameter(torch.zeros(base.out_features, rank, **factory))
        if base.weight.device.type != "meta":
            nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))  # nn.Linear's own init, as peft
        for parameter in base.parameters():
            parameter.requires_grad_(False)

    @property
    def in_features(self) -> int:
        return self.base.in_features

    @property
    def out_features(self) -> int:
        return self.base.out_features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        update = F.linear(F.linear(self.dropout(x), self.lora_A), self.lora_B)
        return self.base(x) + update * self.scaling

    def delta_weight(self) -> torch.Tensor:
        return (self.lora_B @ self.lora_A) * self.scaling

    def merged(self) -> nn.Linear:
        """A plain nn.Linear computing W + scale * B A (same bias), frozen like the base."""
        merged = nn.Linear(
            self.in_features,
            self.out_features,
            bias=self.base.bias is not None,
            device=self.base.weight.device,
            dtype=self.base.weight.dtype,
        )
        with torch.no_grad():
            merged.weight.copy_(self.base.weight + self.delta_weight())
            if self.base.bias is not None:
                merged.bias.copy_(self.base.bias)
        merged.requires_grad_(False)
        return merged

    def extra_repr(self) -> str:
        return f"rank={self.rank}, alpha={self.alpha}, scaling={self.scaling:g}"


def _set_child(model: nn.Module, name: str, module: nn.Module) -> None:
    parent_name, _, child = name.rpartition(".")
    setattr(model.get_submodule(parent_name) if parent_name else model, child, module)


def attach_lora(
    model: nn.Module,
    rank: int,
    alpha: float,
    dropout: float = 0.0,
    targets: tuple[str, ...] = BLOCK_PROJECTIONS,
) -> list[str]:
    """Freeze every parameter, wrap each nn.Linear whose last name part is in `targets`.

    Returns the wrapped module names in model order. Raises if nothing matched (a typo in
    `targets` would otherwise train nothing) or if the model already holds LoRA wrappers."""
    if any(isinstance(m, LoRALinear) for m in model.modules()):
        raise ValueError("the model already holds LoRA wrappers; merge_lora(model) first")
    targets = tuple(targets)
    names = [
        name
        for name, module in model.named_modules()
        if isinstance(module, nn.Linear) and name.rpartition(".")[2] in targets
    ]
    if not names:
        found = sorted(
            {n.rpartition(".")[2] for n, m in model.named_modules() if isinstance(m, nn.Linear)}
        )
        raise ValueError(
            f"no nn.Linear named one of {list(targets)}; this model's linear "
            f"layers are named {found}"
        )
    model.requires_grad_(False)
    for name in names:
        _set_child(model, name, LoRALinear(model.get_submodule(name), rank, alpha, dropout))
    return names


def lora_modules(model: nn.Module) -> list[tuple[str, LoRALinear]]:
    return [(n, m) for n, m in model.named_modules() if isinstance(m, LoRALinear)]


def merge_lora(model: nn.Module) -> list[str]:
    """Replace every LoRALinear by its merged nn.Linear; returns the names merged."""
    merged = lora_modules(model)
    if not merged:
        raise ValueError("the model holds no LoRA wrappers to merge")
    for name, module in merged:
        _set_child(model, name, module.merged())
    return [name for name, _ in merged]


def lora_parameter_count(model: nn.Module) -> int:
    """What a hand count gives: sum over wrapped layers of rank * (in + out)."""
    return sum(m.rank * (m.in_features + m.out_features) for _, m in lora_modules(model))


def parameter_counts(model: nn.Module) -> dict:
    """Trainable and total unique parameters (a tied embedding counted once)."""
    unique = {id(p): p for p in model.parameters()}.values()
    trainable = sum(p.numel() for p in unique if p.requires_grad)
    total = sum(p.numel() for p in unique)
    return {"trainable": trainable, "total": total, "trainable_fraction": trainable / total}


def adam_moment_megabytes(parameters: int, bytes_per_value: int = 4) -> float:
    """Memory of AdamW's two moment tensors for `parameters` FP32 values, in decimal MB."""
    return 2 * parameters * bytes_per_value / 1e6
