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
