"""What the study card's family study costs on a GPU: a calculator, not a measurement.

The card trained Qwen3-8B with LoRA adapters through TRL's GRPOTrainer on GSM8K: 30 steps of
4 prompts x 4 completions, completions capped at 1,024 tokens, a held-out evaluation on 500
test problems, five arms x eight seeds. This module turns those budgets into token counts,
FLOPs, memory per GPU class and a wall-time estimate. Every assumption that is not one of
the card's numbers is a named field of `Assumptions`, so a reader can change it and see
what moves. The arithmetic of a decoder is `models/accounting.py`'s (the same FLOP and
activation conventions as Part III's memory chapter); this module adds what GRPO does on top
of training: generating the completions (memory-bound decoding) and scoring the held-out set.

Conventions (each one used below):
- training FLOPs per scored token: 4·N_matmul for LoRA (frozen weights get no weight
  gradient), 6·N_matmul for full fine-tuning, plus 6·L·T·d of attention, plus a recomputed
  forward (2·N_matmul + 2·L·T·d) under gradient checkpointing, which TRL turns on by default;
- with beta = 0 and one update per generation batch TRL loads no reference model and computes
  no old log-probabilities, so training is one forward and backward per scored token;
- decoding a batch is memory-bound: every new token position reads every weight once and
  the batch's KV cache so far; a padded batch decodes until its longest completion ends;
- memory at the peak: weights and trained state always, then the larger of generation (KV
  cache) and training (checkpointed activations and the completion logits).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass, fields

from verifiable_grpo.models import accounting

GB = 1e9

# Qwen3-8B's config.json: 36 layers of width 4,096, 32 query heads of 128 with 8 KV heads,
# FFN 12,288, vocabulary 151,936, untied tables, no q/k/v bias. Qwen3 adds an RMSNorm on
# every query and key head (two 128-wide weights per layer) that accounting's shape lacks.
QWEN3_8B = accounting.ModelShape(
    name="Qwen3-8B",
    vocab=151_936,
    hidden=4096,
    layers=36,
    heads=32,
    kv_heads=8,
    ffn=12_288,
    tied=False,
    head_dim=128,
)
QK_NORM_PARAMETERS = QWEN3_8B.layers * 2 * QWEN3_8B.dim_per_head

# What the card states (None: the card does not say).
CARD = {
    "model": "Qwen/Qwen3-8B",
    "trl": "1.8.0",
    "gpu": "1x A100-SXM4-40GB (Colab)",
    "arms": 5,
    "seeds": 8,
    "steps": 30,
    "prompts_per_step": 4,
    "completions_per_prompt": 4,
    "max_completion_tokens": 1024,
    "heldout_problems": 500,
    "learning_rate": 1e-6,
    "lora_rank": 16,
    "lora_alpha": 32,
    "beta": 0.0,
    "temperature": 1.0,
    "checkpoint_every_steps": 5,
    "wall_time": None,
    "untrained_heldout_accuracy": None,
}

# name -> (memory the driver reports in MiB, dense 16-bit tensor peak FLOP/s, memory bandwidth
# B/s, bf16 support): the totals nvidia-smi shows (ECC and firmware reserve take some of the
# nominal size), the peaks and bandwidths of the vendors' data sheets (SXM parts for A100
# and H100); the T4 has no bf16 units.
GPU_CLASSES = {
    "A100-40GB": (40_960, 312e12, 1555e9, True),
    "A100-80GB": (81_920, 312e12, 2039e9, True),
    "H100-80GB": (81_559, 989e12, 3350e9, True),
    "L4-24GB": (23_034, 121e12, 300e9, True),
    "T4-16GB": (15_360, 65e12, 320e9, False),
}
MIB = 2**20
METHODS = ("lora", "full")


def _check_positive(owner: str, values: dict, integer: bool) -> None:
    for key, value in values.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"{owner}.{key} must be a number, got {value!r}")
        if integer and not isinstance(value, int):
            raise ValueError(f"{owner}.{key} must be a whole number, got {value!r}")
        if not value > 0 or math.isinf(value):
            raise ValueError(f"{owner}.{key} must be positive, got {value!r}")


@dataclass(frozen=True)
class Plan:
    """The card's budgets (defaults) for one run, and the study's size."""

    steps: int = CARD["steps"]
    prompts_per_step: int = CARD["prompts_per_step"]
    completions_per_prompt: int = CARD["completions_per_prompt"]
    max_completion_tokens: int = CARD["max_completion_tokens"]
    heldout_problems: int = CARD["heldout_problems"]
    arms: int = CARD["arms"]
    seeds: int = CARD["seeds"]
    lora_rank: int = CARD["lora_rank"]
    method: str = "lora"

    def __post_init__(self):
        if self.method not in METHODS:
            raise ValueError(
                f"plan.method must be one of {', '.join(METHODS)}, got {self.method!r}"
            )
        _check_positive(
            "plan",
            {f.name: getattr(self, f.name) for f in fields(self) if f.name != "method"},
            integer=True,
        )

    @property
    def completions_per_step(self) -> int:
        return self.prompts_per_step * self.completions_per_prompt

    @property
    def runs(self) -> int:
        return self.arms * self.seeds


@dataclass(frozen=True)
class Assumptions:
    """What the card does not state; each a guess a reader can change."""

    prompt_tokens: int = 160  # a GSM8K question in Qwen3's chat template
    completion_tokens: int = 1024  # tokens computed per completion: a padded batch runs to its
    # longest member, and thinking-mode answers often hit the cap
    micro_batch: int = 4  # sequences per forward/backward (4 micro-steps per step)
    eval_batch: int = 16  # held-out prompts decoded together
    compute_efficiency: float = 0.35  # share of the tensor peak that training sustains
    bandwidth_efficiency: float = 0.4  # share of memory bandwidth that HF generate() sustains
    runtime_overhead_gb: float = 1.5  # CUDA context, allocator fragmentation

    def __post_init__(self):
        values = asdict(self)
        whole = {"prompt_tokens", "completion_tokens", "micro_batch", "eval_batch"}
        _check_positive("assumptions", {k: v for k, v in values.items() if k in whole}, True)
        _check_positive("assumptions", {k: v for k, v in values.items() if k not in whole}, False)
        for key in ("compute_efficiency", "bandwidth_efficiency"):
            if values[key] > 1:
                raise ValueError(
                    f"assumptions.{key} is a share of the peak: at most 1, got {values[key]!r}"
                )


def gpu_class(name: str) -> dict:
    """The data-sheet numbers of a GPU class; an unknown name is refused with the known ones."""
    if name not in GPU_CLASSES:
        raise ValueError(f"unknown GPU class {name!r}; known: {', '.join(GPU_CLASSES)}")
    mebibytes, flops, bandwidth, bf16 = GPU_CLASSES[name]
    return {
        "name": name,
        "memory_gb": mebibytes * MIB / GB,
        "peak_flops": flops,
        "bandwidth": bandwidth,
        "bf16": bf16,
    }


def parameters(shape: accounting.ModelShape = QWEN3_8B) -> int:
    """Qwen3-8B's 8,190,735,360: accounting's decoder plus the per-head q/k norms."""
    return shape.parameters() + QK_NORM_PARAMETERS


def lora_parameters(plan: Plan, shape: accounting.ModelShape = QWEN3_8B) -> int:
    """Adapters r·(in + out) on all seven linear projections of every layer (all-linear)."""
    return accounting.lora_parameters(shape, plan.lora_rank)


def kv_bytes_per_token(shape: accounting.ModelShape = QWEN3_8B) -> int:
    """K and V of every layer, 16-bit: 2 · L · kv_heads · head_dim · 2 bytes."""
    return 2 * shape.layers * shape.kv_heads * shape.dim_per_head * 2


def tokens(plan: Plan, assume: Assumptions = Assumptions()) -> dict:
    """Token counts of one run and of the study (completions at the assumed length)."""
    completions = plan.steps * plan.completions_per_step
    sequence = assume.prompt_tokens + assume.completion_tokens
    run = {
        "completions": completions,
        "generated": completions * assume.completion_tokens,
        "generated_at_cap": completions * plan.max_completion_tokens,
        "scored": completions * sequence,
        "heldout_generated": plan.heldout_problems * assume.completion_tokens,
    }
    return {"run": run, "study": {k: v * plan.runs for k, v in run.items()}}


def flops(
    plan: Plan, assume: Assumptions = Assumptions(), shape: accounting.ModelShape = QWEN3_8B
) -> dict:
    """FLOPs of one run: generating, training (with the checkpointing recompute), scoring
    the held-out set. Decoding attends to the prompt and half the completion on average."""
    count = tokens(plan, assume)["run"]
    sequence = assume.prompt_tokens + assume.completion_tokens
    decode_context = assume.prompt_tokens + assume.completion_tokens // 2
    per_decoded = accounting.forward_flops_per_token(shape, decode_context)
    per_trained = accounting.flops_per_token(
        shape, sequence, plan.method
    ) + accounting.forward_flops_per_token(shape, sequence)  # recompute
    generation = count["generated"] * per_decoded
    training = count["scored"] * per_trained
    heldout = count["heldout_generated"] * per_decoded
    return {
        "generation": generation,
        "training": training,
        "heldout": heldout,
        "total": generation + training + heldout,
    }


def memory_rows(
    plan: Plan, assume: Assumptions = Assumptions(), shape: accounting.ModelShape = QWEN3_8B
) -> list[tuple[str, float]]:
    """(component, bytes) on one GPU at the peak; the last row is the total."""
    n = parameters(shape)
    sequence = assume.prompt_tokens + assume.completion_tokens
    if plan.method == "lora":
        weights, trained = n * 2.0, lora_parameters(plan, shape) * 16.0
    else:  # 16-bit weights and gradients, FP32 master copy and AdamW moments
        weights, trained = 0.0, n * 16.0
    kv = plan.completions_per_step * sequence * kv_bytes_per_token(shape)
    setup = accounting.TrainingSetup(
        method=plan.method,
        sequence_length=sequence,
        batch=assume.micro_batch,
        lora_rank=plan.lora_rank,
    )
    activations = accounting.activation_bytes(shape, setup)
    logits = assume.micro_batch * assume.completion_tokens * shape.vocab * 4.0  # FP32
    rows = [
        ("weights, bf16" + (" (frozen base)" if plan.method == "lora" else ""), weights),
        (f"trained state ({plan.method}: weights, grads, AdamW)", trained),
        (f"KV cache ({plan.completions_per_step} x {sequence} tokens)", kv),
        (f"activations (checkpointed, {assume.micro_batch} x {sequence})", activations),
        (f"completion logits, FP32 ({assume.micro_batch} x {assume.completion_tokens})", logits),
        ("runtime overhead", assume.runtime_overhead_gb * GB),
    ]
    peak = weights + trained + max(kv, activations + logits) + assume.runtime_overhead_gb * GB
    rows.append(("peak (generation and training do not overlap)", peak))
    return rows


def seconds(
    plan: Plan,
    gpu: str,
    assume: Assumptions = Assumptions(),
    shape: accounting.ModelShape = QWEN3_8B,
) -> dict:
    """Wall-time estimate of one run on one GPU of the class (if it fits)."""
    card = gpu_class(gpu)
    read_per_position = parameters(shape) * 2.0  # bf16 weights read once per position
    kv_token = kv_bytes_per_token(shape)
    bandwidth = card["bandwidth"] * assume.bandwidth_efficiency
    half_context = assume.prompt_tokens + assume.completion_tokens / 2

    def decode(batches: int, batch: int) -> float:
        per_position = read_per_position + batch * half_context * kv_token
        return batches * assume.completion_tokens * per_position / bandwidth

    generation = decode(plan.steps, plan.completions_per_step)
    sustained = card["peak_flops"] * assume.compute_efficiency
    training = flops(plan, assume, shape)["training"] / sustained
    heldout = decode(math.ceil(plan.heldout_problems / assume.eval_batch), assume.eval_batch)
    return {
        "generation": generation,
        "training": training,
        "heldout": heldout,
        "total": generation + training + heldout,
    }


def gpu_table(plan: Plan = Plan(), assume: Assumptions = Assumptions()) -> list[dict]:
    """One row per GPU class: does one run fit, and its hours per run and per study."""
    peak = memory_rows(plan, assume)[-1][1]
    rows = []
    for name in GPU_CLASSES:
        card = gpu_class(name)
        fits = peak <= card["memory_gb"] * GB
        run = seconds(plan, name, assume)["total"] / 3600 if fits else None
        rows.append(
            {
                "gpu": name,
                "memory_gb": card["memory_gb"],
                "peak_gb": peak / GB,
                "fits": fits,
                "bf16": card["bf16"],
                "hours_per_run": run,
                "hours_per_study": None if run is None else run * plan.runs,
            }
        )
    return rows


def card_beside_ours(plan: Plan = Plan(), assume: Assumptions = Assumptions()) -> list[list]:
    """[quantity, the card's value, this model's value] for what both can state."""
    count = tokens(plan, assume)
    return [
        ["runs (arms x seeds)", CARD["arms"] * CARD["seeds"], plan.runs],
        ["optimizer steps per run", CARD["steps"], plan.steps],
        [
            "completions per step",
            CARD["prompts_per_step"] * CARD["completions_per_prompt"],
            plan.completions_per_step,
        ],
        [
            "completions per run",
            CARD["steps"] * CARD["prompts_per_step"] * CARD["completions_per_prompt"],
            count["run"]["completions"],
        ],
        ["completion tokens per run, at most", None, count["run"]["generated_at_cap"]],
        ["held-out problems per run", CARD["heldout_problems"], plan.heldout_problems],
        ["trained parameters (LoRA r16, all-linear)", None, lora_parameters(plan)],
        ["wall time per run", CARD["wall_time"], None],
    ]


# What scripts/gpu_check.py measured on a lent GPU (one JSON record per run of it).
GPU_CHECKS = "data/recorded/gpu-check"


def gpu_checks(folder: str = GPU_CHECKS) -> list[dict]:
    """Every record of scripts/gpu_check.py, oldest first; [] before a GPU has run it."""
    from verifiable_grpo.core import files
    from verifiable_grpo.core.config import resolve

    where = resolve(folder)
    return [files.read_json(p) for p in sorted(where.glob("*.json"))] if where.is_dir() else []


def gpu_check_rows(records: list[dict]) -> list[list]:
    """[GPU, part, median seconds per step, peak GB] per record and measured part."""
    rows = []
    for r in records:
        for part in ("trl_smoke", "card_standin"):
            median = statistics.median(r[part]["seconds_per_step"])
            rows.append([r["device"], part, median, r[part]["peak_memory_bytes"] / GB])
        p1 = r["part1_standin"]
        rows.append(
            [
                r["device"],
                "part1_standin sft 8x96",
                p1["sft_update_8x96_seconds"],
                p1["peak_memory_bytes"] / GB,
            ]
        )
    return rows
