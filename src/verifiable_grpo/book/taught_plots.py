"""Chapter "What taught it": pass@k before and after with its intervals, and the sampled
answers split into malformed, wrong number and right."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

BREAKDOWN_COLOURS = {"malformed": "C7", "wrong number": "C3", "right": "C2"}
SMALL = 0.04  # a segment under this share of the answers gets its count beside it


def plot_pass_at_k(table: dict, names=("instruct model", "after GRPO")) -> Figure:
    """pass@k against k (log2 axis) for each side of band_reading.pass_at_k_table, the 95 %
    bootstrap interval over problems as a band around each curve."""
    figure = Figure(figsize=(6.5, 3.6), layout="constrained")
    ax = figure.subplots()
    for side, name, colour in zip(("before", "after"), names, ("C0", "C1")):
        rows = table[side]
        ks = [r["k"] for r in rows]
        ax.plot(ks, [r["value"] for r in rows], "o-", color=colour, label=name)
        ax.fill_between(
            ks, [r["low"] for r in rows], [r["high"] for r in rows], color=colour, alpha=0.2
        )
    ax.set_xscale("log", base=2)
    ks = [r["k"] for r in table["before"]]
    ax.set_xticks(ks, [str(k) for k in ks])
    ax.set_ylim(0, 1)
    ax.set_xlabel("k (answers allowed per problem)")
    ax.set_ylabel("pass@k on the 200 test problems")
    ax.set_title("pass@k from the 8 stored draws (95% interval over problems)", fontsize=10)
    ax.legend(loc="lower right")
    ax.grid(alpha=0.3)
    return figure


def plot_answer_breakdown(breakdown: dict, names=("instruct model", "after GRPO")) -> Figure:
    """Stacked bars: each side's sampled answers split into malformed, wrong number, right."""
    figure = Figure(figsize=(6.5, 3.2), layout="constrained")
    ax = figure.subplots()
    sides = ("before", "after")
    left = np.zeros(len(sides))
    totals = [sum(breakdown[s].values()) for s in sides]
    for kind, colour in BREAKDOWN_COLOURS.items():
        values = np.array([breakdown[s][kind] for s in sides], dtype=float)
        bars = ax.barh(range(len(sides)), values, left=left, color=colour, label=kind)
        wide = [f"{int(v):,}" if v >= SMALL * t else "" for v, t in zip(values, totals)]
        ax.bar_label(bars, labels=wide, label_type="center")
        for row, (v, start) in enumerate(zip(values, left)):
            if not wide[row]:  # too narrow for its count: written just above the bar
                ax.annotate(
                    f"{int(v):,}",
                    (start + v / 2, row - 0.4),
                    (start + v / 2 + 25, row - 0.5),
                    va="center",
                    arrowprops={"arrowstyle": "-", "lw": 0.6},
                )
        left += values
    ax.set_yticks(range(len(sides)), names)
    total = int(left[0])
    ax.set_xlim(0, total)
    ax.set_xlabel(f"sampled test answers (of {total:,})")
    ax.invert_yaxis()
    ax.legend(ncols=3, loc="upper center", bbox_to_anchor=(0.5, -0.25), frameon=False)
    return figure


def plot_pass_at_k_curves(curves: dict[str, list[dict]]) -> Figure:
    """pass@k of several policies (the control study's second half: name -> curve rows
    with "k", "value", "low", "high"), k on a log2 axis, intervals as bands."""
    figure = Figure(figsize=(6.5, 3.6), layout="constrained")
    ax = figure.subplots()
    for index, (name, rows) in enumerate(curves.items()):
        ks = [r["k"] for r in rows]
        ax.plot(ks, [r["value"] for r in rows], color=f"C{index}", label=name)
        ax.fill_between(
            ks, [r["low"] for r in rows], [r["high"] for r in rows], color=f"C{index}", alpha=0.2
        )
    ax.set_xscale("log", base=2)
    ax.set_ylim(0, 1)
    ax.set_xlabel("k (answers allowed per problem)")
    ax.set_ylabel("pass@k")
    ax.legend(loc="lower right")
    ax.grid(alpha=0.3)
    return figure


def plot_controls(analysis: dict) -> Figure:
    """The control study's analysis (control_study.analyse): each seed's per-draw success
    as a point per arm, the arm's seed-averaged value as a bar, the instruct model as a
    line; beside it each declared contrast with its interval."""
    figure = Figure(figsize=(7.5, 3.6), layout="constrained")
    left, right = figure.subplots(1, 2, width_ratios=(1, 1.3))
    arms = [a["arm"] for a in analysis["arms"]]
    left.bar(arms, [a["per_draw"] for a in analysis["arms"]], color="0.85", label="seeds averaged")
    for position, arm in enumerate(arms):
        own = [s["per_draw"] for s in analysis["seeds"] if s["arm"] == arm]
        left.plot([position] * len(own), own, "o", color=f"C{position}")
    left.axhline(analysis["instruct_per_draw"], color="0.3", ls="--", label="instruct model")
    left.set_ylim(0, 1)
    left.set_ylabel("per-draw success (test)")
    left.legend(loc="upper right")
    contrasts = analysis["contrasts"]
    names = [c["contrast"] for c in contrasts]
    values = np.array([c["difference"] for c in contrasts])
    errors = np.array(
        [[c["difference"] - c["low"], c["high"] - c["difference"]] for c in contrasts]
    )
    right.errorbar(values, range(len(names)), xerr=errors.T, fmt="o", color="C3", capsize=3)
    right.axvline(0, color="0.3", lw=1)
    right.set_yticks(range(len(names)), names)
    right.invert_yaxis()
    right.set_xlabel("paired difference, per draw (95% interval)")
    return figure


ARM_COLOURS = {"verifier": "C2", "random": "C0", "format": "C1"}


def _smoothed(values: list[float], width: int = 5) -> np.ndarray:
    """A trailing mean over `width` iterations (the first points average what exists)."""
    cumulative = np.cumsum(np.insert(np.asarray(values, dtype=float), 0, 0.0))
    ends = np.arange(1, len(values) + 1)
    starts = np.maximum(ends - width, 0)
    return (cumulative[ends] - cumulative[starts]) / (ends - starts)


def plot_control_training(runs: list[dict]) -> Figure:
    """Each control-study run's training: the verifier's reward of its sampled answers
    (what the verifier would have paid, whatever the arm was paid) and the exact KL to the
    instruct model, per iteration, smoothed over 5; one colour per arm."""
    figure = Figure(figsize=(7.5, 3.6), layout="constrained")
    left, right = figure.subplots(1, 2)
    seen = set()
    for run in runs:
        history = run["history"]
        iterations = [h["iteration"] for h in history]
        verifier = [
            h["mean_reward"] if h["mean_verifier_reward"] is None else h["mean_verifier_reward"]
            for h in history
        ]
        label = None if run["arm"] in seen else run["arm"]
        seen.add(run["arm"])
        colour = ARM_COLOURS.get(run["arm"], "C7")
        left.plot(iterations, _smoothed(verifier), color=colour, label=label)
        right.plot(iterations, [h["mean_exact_kl"] for h in history], color=colour)
    left.set_ylim(0, 1)
    left.set_xlabel("GRPO iteration")
    left.set_ylabel("verifier's reward of the samples")
    left.legend(title="arm (reward paid)")
    right.set_xlabel("GRPO iteration")
    right.set_ylabel("exact KL to the instruct model")
    for ax in (left, right):
        ax.grid(alpha=0.3)
    return figure
