"""Figures of the recorded family study (matplotlib Figures, no pyplot state)."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from verifiable_grpo.book.plots import moving_average, smoothed


def plot_per_seed(
    by_regime: dict[str, dict[str, list]],
    warm_start: float,
    ylabel: str = "held-out greedy accuracy (ALL)",
) -> Figure:
    """One panel per regime: every seed's value per arm (dots), the arm's mean (bar), and
    the untrained warm start (dashed line)."""
    figure = Figure(figsize=(10, 3.4), layout="constrained")
    axes = np.atleast_1d(figure.subplots(1, len(by_regime), sharey=True))
    for ax, (regime, values) in zip(axes, by_regime.items()):
        for x, seeds in enumerate(values.values()):
            jitter = np.linspace(-0.15, 0.15, len(seeds))
            ax.plot(x + jitter, seeds, "o", alpha=0.6, ms=4)
            ax.plot([x - 0.25, x + 0.25], [np.mean(seeds)] * 2, "k-", lw=2)
        ax.axhline(warm_start, ls="--", color="grey", lw=1, label="warm start")
        ax.set_xticks(range(len(values)), list(values))
        ax.set(title=regime, ylabel=ylabel if ax is axes[0] else None)
        ax.legend(fontsize=8, loc="lower right")
    return figure


def plot_curves(by_regime: dict[str, dict[str, np.ndarray]], title: str, window: int = 5) -> Figure:
    """One panel per regime: each arm's seed-averaged curve, smoothed over `window` steps."""
    figure = Figure(figsize=(10, 3.2), layout="constrained")
    axes = np.atleast_1d(figure.subplots(1, len(by_regime), sharey=True))
    for ax, (regime, curves) in zip(axes, by_regime.items()):
        for arm, curve in curves.items():
            ax.plot(np.arange(len(curve)), moving_average(curve, window), label=arm)
        ax.set(title=smoothed(f"{title} ({regime})", window, "step"), xlabel="step")
        ax.legend(fontsize=8)
    return figure


def plot_dynamic_sampling_cost(costs: dict[str, dict]) -> Figure:
    """costs: a label of the prompts' success rates -> demos.dynamic_sampling_cost's record.
    For each set of prompts, the rollouts a plain step draws beside what dynamic sampling
    draws, split into the rollouts it trains on and those it generates and throws away."""
    figure = Figure(figsize=(7.5, 3.8), layout="constrained")
    ax = figure.subplots()
    x = np.arange(len(costs))
    plain = [cost["plain_rollouts_per_step"] for cost in costs.values()]
    drawn = [cost["rollouts_per_step"] for cost in costs.values()]
    discarded = [cost["discarded_per_step"] for cost in costs.values()]
    kept = np.subtract(drawn, discarded)
    ax.bar(x - 0.2, plain, 0.4, color="grey", label="plain step (every group trained on)")
    ax.bar(x + 0.2, kept, 0.4, color="tab:blue", label="dynamic sampling: trained on")
    ax.bar(
        x + 0.2,
        discarded,
        0.4,
        bottom=kept,
        color="tab:red",
        label="dynamic sampling: generated, discarded",
    )
    ax.set_xticks(x, list(costs))
    ax.set(
        title="Dynamic sampling pays for every group it throws away",
        xlabel="success rates of the prompts in the source",
        ylabel="rollouts per step (mean)",
    )
    ax.legend(loc="upper left")
    return figure


def plot_paired_differences(comparisons: list[dict], source: str) -> Figure:
    """comparisons: analysis.analyse's rows for one regime (arm, difference, low, high,
    verdict). Each arm's paired difference from grpo with its 95 % bootstrap interval;
    an interval that crosses the zero line cannot call the arm better or worse."""
    figure = Figure(figsize=(7.5, 1.6 + 0.55 * len(comparisons)), layout="constrained")
    ax = figure.subplots()
    y = np.arange(len(comparisons))[::-1]
    for row, comparison in zip(y, comparisons):
        ax.plot([comparison["low"], comparison["high"]], [row, row], color="tab:blue", lw=2)
        ax.plot(comparison["difference"], row, "o", color="tab:blue", ms=7)
    ax.axvline(0.0, color="black", lw=1, ls="--")
    ax.set_yticks(y, [f"{c['arm']} ({c['verdict']})" for c in comparisons])
    ax.set(
        title=f"Each arm minus grpo on the same seeds ({source})",
        xlabel="held-out accuracy, arm minus grpo (95 % paired bootstrap interval)",
    )
    return figure
