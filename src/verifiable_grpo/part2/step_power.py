"""What a smaller effective step does to the power of an eight-seed study: a simulation.

A policy-gradient step moves the policy by about the learning rate times the update
direction, so over a short run (30 steps) an arm's difference from the baseline, and the
part of the seed-to-seed spread that training causes, both shrink in proportion to the step.
What does not shrink is the spread that is there even when the policy barely moves:
evaluation noise and the numerics of generation. Each seed's paired difference (arm minus
baseline, same seed) is modelled as

    d = s·delta + sqrt((s·sigma_train)^2 + sigma_floor^2) · z,    z ~ N(0, 1),

with s the step relative to an appropriate one. The study's own test, the exact two-sided
sign-flip test over the seeds (part2/analysis.py), then rejects at level alpha with some
probability: the power. The inputs come from recorded numbers: sigma_train is the spread of
the paired differences in Part II's recorded tiny study (where the policy moved); the floor
is the seed spread that the study card reports for its arms at lr 1e-6 (where, by the
argument of the chapter, it barely moved), read from the card's 95 % intervals.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from verifiable_grpo.part2 import results

# The card's per-arm 95 % percentile-bootstrap intervals over 8 seeds (held-out accuracy).
CARD_INTERVALS = {
    "aero": (0.6300, 0.6350),
    "dapo": (0.6298, 0.6388),
    "drgrpo": (0.6252, 0.6372),
    "grpo": (0.6275, 0.6388),
    "gspo": (0.6342, 0.6415),
}
CARD_SEEDS = 8
Z_95 = 1.959963984540054


def spread_from_interval(low: float, high: float, seeds: int = CARD_SEEDS) -> float:
    """The seed standard deviation a normal-theory 95 % interval of a mean of `seeds` implies."""
    if not high >= low:
        raise ValueError(f"interval high ({high}) must not be below low ({low})")
    if isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 2:
        raise ValueError(f"seeds must be an integer of at least 2, got {seeds!r}")
    return (high - low) / (2 * Z_95) * math.sqrt(seeds)


def card_floor() -> float:
    """The floor of a paired difference: the median per-arm spread of the card, times sqrt(2)
    (two independent runs per pair: the card does not say how its seeds were paired)."""
    spreads = sorted(spread_from_interval(*ci) for ci in CARD_INTERVALS.values())
    return math.sqrt(2) * spreads[len(spreads) // 2]


def recorded_training_spread(record: dict | None = None) -> dict:
    """The standard deviation over seeds of (arm - grpo) in the recorded tiny study, for every
    regime and non-baseline arm whose differences are not all zero, and their median."""
    record = results.load() if record is None else record
    spreads = {}
    for regime in record["analysis"]["regimes"]:
        values = results.per_seed(record, regime)
        base = np.asarray(values["grpo"])
        for arm, seeds in values.items():
            differences = np.asarray(seeds) - base
            if arm != "grpo" and np.any(differences != 0):
                spreads[f"{regime}/{arm}"] = float(np.std(differences, ddof=1))
    return {"per_comparison": spreads, "median": float(np.median(list(spreads.values())))}


def _sign_patterns(seeds: int) -> np.ndarray:
    return np.array(list(itertools.product((1.0, -1.0), repeat=seeds)))


def sign_flip_power(
    effect: float,
    spread: float,
    seeds: int = CARD_SEEDS,
    alpha: float = 0.05,
    trials: int = 4000,
    rng_seed: int = 0,
) -> float:
    """The share of simulated studies whose exact sign-flip p-value is at most alpha."""
    if not spread > 0:
        raise ValueError(f"spread must be positive, got {spread!r}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    if isinstance(seeds, bool) or not isinstance(seeds, int) or not 2 <= seeds <= 16:
        raise ValueError(f"seeds must be an integer from 2 to 16, got {seeds!r}")
    rng = np.random.default_rng(rng_seed)
    differences = effect + spread * rng.standard_normal((trials, seeds))
    observed = np.abs(differences.sum(axis=1))
    flipped = np.abs(differences @ _sign_patterns(seeds).T)
    pvalues = np.mean(flipped >= (observed - 1e-12 * np.maximum(1.0, observed))[:, None], axis=1)
    return float(np.mean(pvalues <= alpha))


@dataclass(frozen=True)
class SeedSpread:
    """The seed-to-seed spread of a paired difference (arm minus baseline): `train`, the part
    training causes at the full step (it shrinks with the step), and `floor`, evaluation noise
    and the numerics of generation (it does not)."""

    train: float  # sigma_train
    floor: float  # sigma_floor


def power_table(
    effects,
    step_factors,
    spread: SeedSpread,
    seeds: int = CARD_SEEDS,
    alpha: float = 0.05,
    trials: int = 4000,
) -> list[dict]:
    """One row per (effect at the full step, step factor): the shrunken effect, the spread,
    and the power; every cell draws its own fixed stream so the table is reproducible."""
    sigma_train, sigma_floor = spread.train, spread.floor
    if sigma_train < 0 or not sigma_floor > 0:
        raise ValueError(
            "spread.train (sigma_train) must be >= 0 and spread.floor (sigma_floor) > 0, "
            f"got {sigma_train!r} and {sigma_floor!r}"
        )
    rows = []
    for i, effect in enumerate(effects):
        for j, factor in enumerate(step_factors):
            if not 0 < factor <= 1:
                raise ValueError(f"step factor must be in (0, 1], got {factor!r}")
            at_step = math.hypot(factor * sigma_train, sigma_floor)
            rows.append(
                {
                    "effect": effect,
                    "step_factor": factor,
                    "shrunken_effect": factor * effect,
                    "spread": at_step,
                    "power": sign_flip_power(
                        factor * effect, at_step, seeds, alpha, trials, rng_seed=1000 * i + j
                    ),
                }
            )
    return rows


def plot_power(rows: list[dict], alpha: float = 0.05):
    """Power against the step factor (log axis), one line per effect at the full step."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(6.4, 3.4), layout="constrained")
    ax = figure.subplots()
    for effect in sorted({row["effect"] for row in rows}):
        mine = sorted((r for r in rows if r["effect"] == effect), key=lambda r: r["step_factor"])
        ax.plot(
            [r["step_factor"] for r in mine],
            [r["power"] for r in mine],
            "o-",
            label=f"{100 * effect:g} points at the full step",
        )
    ax.axhline(alpha, ls="--", color="grey", lw=1, label=f"the test's level ({alpha:g})")
    ax.set_xscale("log")
    ax.set(xlabel="effective step / appropriate step", ylabel="power with 8 seeds", ylim=(0, 1))
    ax.legend(fontsize=8, loc="upper left")
    return figure
