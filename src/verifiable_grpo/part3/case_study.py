"""The module's running case study, as numbers: its workload, SFT and GRPO plans, a
composite reward, the bill in H100-hours and dollars, and the serving memory.

Every cost is arithmetic on `accounting`'s FLOP counts under assumptions held in one
`Prices` object. The module prints the results (about USD 7.50 for SFT, 58 for a GRPO
trial, 200 for three trials of each) but not all its assumptions; where ours are our
own, `Prices` says so, and the chapter shows both side by side.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

from verifiable_grpo.models import accounting as acc
from verifiable_grpo.part3.quantisation import bits_per_weight


def _check_positive(obj, names, integer=False) -> None:
    for name in names:
        value = getattr(obj, name)
        bad = isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0
        if bad or (integer and not isinstance(value, int)):
            kind = "a positive integer" if integer else "positive"
            raise ValueError(f"{name} must be {kind}, got {value!r}")


@dataclass(frozen=True)
class Workload:
    """One request: a stable prefix (system, schema, references) plus its own tokens."""

    stable_prompt_tokens: int = 3000
    request_tokens: int = 1000
    output_tokens: int = 2000
    requests_per_day: int = 2000

    def __post_init__(self):
        _check_positive(
            self,
            ("stable_prompt_tokens", "request_tokens", "output_tokens", "requests_per_day"),
            integer=True,
        )

    @property
    def prompt_tokens(self) -> int:
        return self.stable_prompt_tokens + self.request_tokens


@dataclass(frozen=True)
class SftPlan:
    rank: int = 64
    alpha: float = 128.0
    learning_rate: float = 1e-4
    warmup_fraction: float = 0.03
    epochs: int = 2
    tokens: float = 50e6  # total tokens per epoch, general data included
    pack_length: int = 8192
    general_share: float = 1 / 3

    def __post_init__(self):
        _check_positive(self, ("rank", "epochs", "pack_length"), integer=True)
        _check_positive(self, ("alpha", "learning_rate", "tokens"))
        for name in ("warmup_fraction", "general_share"):
            if not 0 <= getattr(self, name) < 1:
                raise ValueError(f"{name} must lie in [0, 1), got {getattr(self, name)!r}")


@dataclass(frozen=True)
class GrpoPlan:
    prompts: int = 3000
    epochs: int = 2  # sampling passes over the prompts
    group_size: int = 8
    inner_updates: int = 1
    beta: float = 0.04
    scoring_passes: int = 2  # forward passes to score rollouts: old policy + reference

    def __post_init__(self):
        _check_positive(self, ("prompts", "epochs", "group_size", "inner_updates"), integer=True)
        if self.group_size < 2:
            raise ValueError("group_size must be at least 2: a group of one has no baseline")
        if not isinstance(self.scoring_passes, int) or self.scoring_passes < 0:
            raise ValueError(
                f"scoring_passes must be a non-negative integer, got {self.scoring_passes!r}"
            )
        if not self.beta >= 0:
            raise ValueError(f"beta must be non-negative, got {self.beta!r}")

    def responses(self) -> int:
        return self.prompts * self.epochs * self.group_size


@dataclass(frozen=True)
class Prices:
    """The module's USD 2.50 per H100-hour; the rest are ours: the H100 SXM's dense BF16
    peak, 40 % of it for training-shaped passes, 25 % while generating (decoding is
    limited by memory bandwidth), and one context length for the attention term."""

    usd_per_gpu_hour: float = 2.50
    peak_flops: float = 989e12
    training_utilisation: float = 0.40
    generation_utilisation: float = 0.25
    context_length: int = 8192

    def __post_init__(self):
        _check_positive(
            self,
            ("usd_per_gpu_hour", "peak_flops", "training_utilisation", "generation_utilisation"),
        )
        _check_positive(self, ("context_length",), integer=True)
        for name in ("training_utilisation", "generation_utilisation"):
            if getattr(self, name) > 1:
                raise ValueError(f"{name} is a fraction of the peak, got {getattr(self, name)!r}")

    def hours(self, flops: float, generation: bool = False) -> float:
        share = self.generation_utilisation if generation else self.training_utilisation
        return flops / (self.peak_flops * share) / 3600


def sft_cost(shape: acc.ModelShape, plan: SftPlan, prices: Prices) -> dict:
    """LoRA SFT: every packed token goes through forward and backward once per epoch."""
    tokens = plan.epochs * plan.tokens
    flops = tokens * acc.flops_per_token(shape, plan.pack_length, "lora")
    hours = prices.hours(flops)
    return {
        "tokens": tokens,
        "flops": flops,
        "gpu_hours": hours,
        "usd": hours * prices.usd_per_gpu_hour,
    }


def grpo_cost(shape: acc.ModelShape, plan: GrpoPlan, workload: Workload, prices: Prices) -> dict:
    """One GRPO trial: generate every response, score it (old policy and reference), then
    `inner_updates` LoRA passes over prompt + response tokens."""
    tokens = plan.responses() * (workload.prompt_tokens + workload.output_tokens)
    forward = acc.forward_flops_per_token(shape, prices.context_length)
    stages = {
        "generation": prices.hours(tokens * forward, generation=True),
        "scoring": prices.hours(plan.scoring_passes * tokens * forward),
        "updates": prices.hours(
            plan.inner_updates * tokens * acc.flops_per_token(shape, prices.context_length, "lora")
        ),
    }
    hours = sum(stages.values())
    return {
        "responses": plan.responses(),
        "tokens": tokens,
        "stage_hours": stages,
        "gpu_hours": hours,
        "usd": hours * prices.usd_per_gpu_hour,
    }


def bill(
    shape: acc.ModelShape = acc.CASE_STUDY,
    sft: SftPlan = SftPlan(),
    grpo: GrpoPlan = GrpoPlan(),
    workload: Workload = Workload(),
    prices: Prices = Prices(),
    trials: int = 3,
) -> dict:
    """SFT and one GRPO trial, and `trials` of each (judges and people not included)."""
    if isinstance(trials, bool) or not isinstance(trials, int) or trials <= 0:
        raise ValueError(f"trials must be a positive integer, got {trials!r}")
    one_sft, one_grpo = sft_cost(shape, sft, prices), grpo_cost(shape, grpo, workload, prices)
    return {
        "sft": one_sft,
        "grpo": one_grpo,
        "trials": trials,
        "total_usd": trials * (one_sft["usd"] + one_grpo["usd"]),
    }


# ---------------------------------------------------------------- serving memory
def serving_memory(
    shape: acc.ModelShape = acc.CASE_STUDY,
    code_bits: float = 4,
    scale_block: int = 128,
    scale_bits: float = 16,
    table_bits: float = 8,
) -> dict:
    """Bytes to serve: block weights in `code_bits` with one scale per `scale_block`, the
    embedding and output tables in `table_bits`; and all weights at a flat 4 bits."""
    block_bits = bits_per_weight(code_bits, scale_block, scale_bits)
    if not table_bits > 0:
        raise ValueError(f"table_bits must be positive, got {table_bits!r}")
    blocks = shape.block_parameters() * block_bits / 8
    tables = shape.table_parameters() * table_bits / 8
    return {
        "block_bits": block_bits,
        "block_bytes": blocks,
        "table_bytes": tables,
        "total_bytes": blocks + tables,
        "uniform_4bit_bytes": shape.parameters() * 4 / 8,
    }


# ---------------------------------------------------------------- the composite reward
# Our weights: the module fixes only that preservation is worth 0.2, so a brief with
# nothing to preserve tops out at 0.8. Structure 0.5 and judged coverage 0.3 are ours.
REWARD_WEIGHTS = {"structure": 0.5, "preservation": 0.2, "coverage": 0.3, "degenerate": 0.3}


@dataclass(frozen=True)
class Artifact:
    """What the reward reads of one generated brief: whether it parsed, its structural
    pass fraction, its judged coverage (capped), a reviewed degeneracy flag and, for an
    edit brief only, the share of required content preserved (None: a new brief)."""

    parsed: bool
    structure: float = 0.0
    coverage: float = 0.0
    degenerate: bool = False
    preservation: float | None = None


def composite_reward(
    artifact: Artifact, renormalise: bool = False, weights: dict = REWARD_WEIGHTS
) -> float:
    """0 for an unparsable or empty artifact; else a weighted sum of the structural pass
    fraction, capped judged coverage and (edit briefs only) preserved content, minus a
    penalty for a reviewed degeneracy flag, floored at 0. `preservation=None` marks a
    non-edit brief: the term is absent, not perfect. `renormalise` divides by the brief
    type's maximum, so both types top out at 1."""
    parsed, structure, coverage = artifact.parsed, artifact.structure, artifact.coverage
    degenerate, preservation = artifact.degenerate, artifact.preservation
    if not parsed:
        return 0.0
    terms = {"structure": structure, "coverage": coverage}
    if preservation is not None:
        terms["preservation"] = preservation
    for name, value in terms.items():
        if isinstance(value, bool) or not 0 <= value <= 1:
            raise ValueError(f"{name} must be a fraction in [0, 1], got {value!r}")
    score = sum(weights[name] * value for name, value in terms.items())
    score = max(0.0, score - weights["degenerate"] * bool(degenerate))
    if renormalise:
        score /= sum(weights[name] for name in terms)
    return score


def assumptions(
    sft: SftPlan = SftPlan(),
    grpo: GrpoPlan = GrpoPlan(),
    workload: Workload = Workload(),
    prices: Prices = Prices(),
) -> list[tuple[str, object]]:
    """Every assumption as (name, value) rows, for a table beside the bill."""
    rows = []
    for group, obj in (("workload", workload), ("SFT", sft), ("GRPO", grpo), ("prices", prices)):
        rows += [(f"{group}: {k}", v) for k, v in asdict(obj).items()]
    return rows


def with_changes(obj, **changes):
    """A copy with some fields changed (the widget's controls), validated again."""
    return replace(obj, **changes)
