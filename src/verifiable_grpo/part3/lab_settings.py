"""The settings schema of every synthetic Part III lab (configs/part3/NAME.yaml).

Each lab's YAML holds keyword arguments of its function; here each key has its type, its
range and a one-line meaning, checked with the profile schema's machinery
(core/config_schema.check_settings) before any compute: a bad value is refused in one line
naming the file and the key, an unknown key gets a did-you-mean. A key left out keeps the
function's default (`absent` below only stands in for the checks).
"""

from __future__ import annotations

from dataclasses import dataclass

from verifiable_grpo.core.config_schema import check_settings
from verifiable_grpo.core.schema_checks import (
    BIGGEST_GROUP,
    NON_EMPTY,
    SEED,
    above,
    at_least,
    at_most,
    closed,
    each,
    key,
    one_of,
    open_between,
)

# Lab 3's best-of-n grid (best_of_n.SIZES; spelled here so that checking needs no numpy).
GRID = tuple(4**k for k in range(8))
ON_GRID = one_of(*GRID)
POSITIVE = at_least(1)
# each count is a step, a pair or a sample of at least a millisecond: past this, hours to
# weeks of CPU that were surely not meant (refused before any compute)
COUNTED = at_most(10_000_000, "more than a synthetic lab can get through")


@dataclass(frozen=True)
class RewardModelSettings:
    sizes: tuple[int, ...] = key("best-of-n grid sizes", NON_EMPTY, each(ON_GRID), absent=GRID)
    trials: int = key("selections averaged per n", POSITIVE, COUNTED, absent=200)
    seed: int = key("numpy and torch seed", SEED, absent=0)
    softmax_n: int | None = key(
        "n of the softmax-selection variant (null: skip it)", ON_GRID, absent=1024
    )
    temperatures: tuple[float, ...] = key(
        "softmax temperatures", NON_EMPTY, each(above(0)), absent=(0.1, 0.3, 1.0, 3.0)
    )


@dataclass(frozen=True)
class DPOSettings:
    betas: tuple[float, ...] = key(
        "bandit KL coefficients", NON_EMPTY, each(above(0)), absent=(0.25, 0.5, 1.0, 2.0)
    )
    pairs: int = key("bandit preference pairs", POSITIVE, COUNTED, absent=20_000)
    bandit_steps: int = key("Adam steps per beta", POSITIVE, COUNTED, absent=1000)
    beta: float = key("digit-policy DPO coefficient", above(0), absent=0.1)
    steps: int = key("digit-policy DPO steps per condition", POSITIVE, COUNTED, absent=300)
    variant_beta: float | None = key(
        "the on-policy condition again at this beta (null: skip)", above(0), absent=0.5
    )


@dataclass(frozen=True)
class ExpertIterationSettings:
    betas: tuple[float, ...] = key(
        "GRPO KL coefficients with the exact verifier",
        NON_EMPTY,
        each(at_least(0)),
        absent=(0.04, 0.5),
    )
    substring_beta: float = key(
        "KL coefficient with the flawed substring verifier", at_least(0), absent=0.04
    )
    iterations: int = key("GRPO iterations per run", POSITIVE, COUNTED, absent=150)
    group_size: int = key(
        "responses per prompt", at_least(2, "a group needs a spread"), BIGGEST_GROUP, absent=8
    )
    expert_rounds: int = key("expert-iteration rounds", POSITIVE, COUNTED, absent=3)
    variants: bool = key("also Part I's population std and beta 0", absent=True)


@dataclass(frozen=True)
class JudgeSettings:
    pairs: int = key("judged pairs", at_least(10), absent=400)
    seed: int = key("numpy seed", SEED, absent=22)
    length_weight: float = key("how much the judge weighs the length gap", absent=0.4)
    position_bias: float = key("the first slot's advantage", absent=0.5)
    mean_length_gap: float = key("mean length gap between A and B", absent=0.8)


@dataclass(frozen=True)
class FaultTreeSettings:
    """The fault-tree exercise has no settings: its fixtures are fixed."""


@dataclass(frozen=True)
class MergingSettings:
    steps: int = key("SFT steps per fine-tune", POSITIVE, COUNTED, absent=100)
    seed: int = key("fine-tune A's seed (B: seed + 1; DARE's masks)", SEED, absent=0)
    density: float = key("TIES: share of each task vector kept", closed(0, 1), absent=0.2)
    drops: tuple[float, ...] = key(
        "DARE drop probabilities", NON_EMPTY, each(open_between(0, 1)), absent=(0.5, 0.9)
    )
    scales: tuple[float, ...] = key("task-arithmetic scales", NON_EMPTY, absent=(0.25, 0.5))
    soup_weights: tuple[float, ...] = key(
        "weight on fine-tune A in a two-model soup", NON_EMPTY, each(closed(0, 1)), absent=(0.5,)
    )


@dataclass(frozen=True)
class TryThisSettings:
    grpo_iterations: int = key(
        "GRPO iterations per Lab 5 variant run", POSITIVE, COUNTED, absent=150
    )
    grpo_seeds: tuple[int, ...] = key(
        "seeds of the exact and substring runs", NON_EMPTY, each(SEED), absent=(41, 42, 43)
    )
    reward_seeds: tuple[int, ...] = key(
        "Lab 3 seeds (200 against 4,000 pairs)", NON_EMPTY, each(SEED), absent=(0, 1, 2)
    )
    small_pairs: int = key(
        "the small training set of Lab 3's first variant", at_least(2), absent=200
    )
    label_bias: float = key("the labeller's weight on x2 (Lab 3)", absent=0.5)
    dpo_steps: int = key("steps per Lab 4 variant run", POSITIVE, COUNTED, absent=300)
    sft_weight: float = key(
        "weight of the SFT term on chosen replies (Lab 4)", at_least(0), absent=1.0
    )


@dataclass(frozen=True)
class PackingSettings:
    row_length: int = key("slots per packed row", at_least(16), absent=256)
    batch: int = key("conversations per padded batch", POSITIVE, COUNTED, absent=10)


SCHEMAS = {
    "reward-model": RewardModelSettings,
    "dpo": DPOSettings,
    "expert-iteration": ExpertIterationSettings,
    "judge": JudgeSettings,
    "fault-tree": FaultTreeSettings,
    "merging": MergingSettings,
    "try-this": TryThisSettings,
    "sft-packing": PackingSettings,
}


def check(name: str, raw, source: str) -> dict:
    """Lab `name`'s settings as YAML gave them, checked (ConfigError: '<source>: <key>: ...');
    None (an empty file) reads as no settings."""
    return check_settings(SCHEMAS[name], {} if raw is None else raw, source)
