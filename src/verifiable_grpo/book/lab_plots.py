"""Figures of Part III's recorded labs (matplotlib Figures, no pyplot state).

Each function takes the rows a chapter already reads from its lab's record and draws them
for the book's column (7.5 in wide, text at 10 pt), so a reader can look instead of read.
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from verifiable_grpo.part3.expert_iteration_lab.group_relative import mixed_group_probability

COLUMN_INCHES = 7.5


def _figure(height: float, panels: int = 1):
    figure = Figure(figsize=(COLUMN_INCHES, height), layout="constrained")
    return figure, figure.subplots(1, panels)


def plot_calibration(calibration: list[list], ece: float) -> Figure:
    """calibration: the reward lab's rows [bin, pairs, mean predicted, observed]. A point per
    bin, its area proportional to the bin's pairs; a calibrated model sits on the diagonal."""
    figure, ax = _figure(4.6)
    pairs = np.array([row[1] for row in calibration], dtype=float)
    predicted = [row[2] for row in calibration]
    observed = [row[3] for row in calibration]
    ax.plot([0, 1], [0, 1], ls="--", color="grey", lw=1, label="perfectly calibrated")
    ax.plot(predicted, observed, "-", color="tab:blue", lw=1)
    ax.scatter(
        predicted,
        observed,
        s=20 + 300 * pairs / pairs.max(),
        color="tab:blue",
        zorder=3,
        label="MLP, one bin (area: its pairs)",
    )
    ax.set(
        xlim=(0, 1),
        ylim=(0, 1),
        aspect="equal",
        title=f"MLP reward model: ten-bin ECE {ece:.3f}",
        xlabel="mean predicted P(first point wins)",
        ylabel="observed share of first-point wins",
    )
    ax.legend(loc="upper left")
    return figure


def plot_pass_rates(categories: list[dict]) -> Figure:
    """categories: rows with category, model, pass and its Wilson interval. Per category,
    each model's pass rate with its 95 % interval, one model above the other."""
    names = list(dict.fromkeys(row["category"] for row in categories))
    models = list(dict.fromkeys(row["model"] for row in categories))
    figure, ax = _figure(1.4 + 0.6 * len(names))
    offsets = np.linspace(0.15, -0.15, len(models))
    for model, offset, colour in zip(models, offsets, ("tab:grey", "tab:blue", "tab:orange")):
        rows = [row for row in categories if row["model"] == model]
        y = np.array([len(names) - 1 - names.index(row["category"]) for row in rows]) + offset
        for row, level in zip(rows, y):
            ax.plot(row["wilson"], [level, level], color=colour, lw=2)
        ax.plot([row["pass"] for row in rows], y, "o", color=colour, ms=7, label=model)
    ax.set_yticks(range(len(names)), names[::-1])
    ax.set(
        xlim=(-0.02, 1.02),
        title="Pass rate per category, with Wilson 95 % intervals",
        xlabel="share of the category's items passed",
    )
    ax.legend(loc="lower right")
    return figure


JUDGE_BARS = {
    "true_win": "true preference",
    "first": "judge, A shown first",
    "second": "judge, A shown second",
    "swapped": "judge, both orders",
    "length_controlled": "length-controlled",
}


def plot_judge_win_rates(metrics: dict) -> Figure:
    """metrics: the judge lab's record. A's win rate as the truth has it, as the judge
    reports it in each order, averaged over both orders, and with length controlled."""
    figure, ax = _figure(3.6)
    values = [metrics[key] for key in JUDGE_BARS]
    colours = ["tab:green", "tab:red", "tab:red", "tab:blue", "tab:blue"]
    ax.bar(range(len(values)), values, color=colours)
    ax.axhline(metrics["true_win"], color="tab:green", ls="--", lw=1)
    ax.set_xticks(range(len(values)), [label.replace(", ", ",\n") for label in JUDGE_BARS.values()])
    ax.set(
        ylim=(0, 1),
        ylabel="share of pairs A wins",
        title=f"One judge, {metrics['pairs']} pairs: the order moves the verdict",
    )
    return figure


def plot_reward_by_reply(rewards: dict[str, tuple[float, float]]) -> Figure:
    """rewards: reply -> (initial reward, revised reward). Side by side per reply."""
    figure, ax = _figure(3.6)
    x = np.arange(len(rewards))
    initial = [pair[0] for pair in rewards.values()]
    revised = [pair[1] for pair in rewards.values()]
    for bars in (
        ax.bar(x - 0.2, initial, 0.4, color="tab:grey", label="initial reward"),
        ax.bar(x + 0.2, revised, 0.4, color="tab:blue", label="revised reward"),
    ):
        ax.bar_label(bars, fmt="%.2f")  # a reward of 0 is a bar of no height: say it
    ax.axhline(0.0, color="black", lw=0.8)
    ax.set_xticks(x, list(rewards))
    ax.set(
        ylim=(0, 1.15),
        title="The same replies under the two rewards",
        xlabel="reply",
        ylabel="reward",
    )
    ax.legend()
    return figure


def plot_scores_by_model(rows: dict[str, dict[str, float]], columns: list[str]) -> Figure:
    """rows: model -> score per column (the merging lab's table). One bar per column and
    model, models top to bottom in the table's order."""
    figure, ax = _figure(1.2 + 0.55 * len(rows))
    y = np.arange(len(rows))[::-1]
    height = 0.8 / len(columns)
    for k, column in enumerate(columns):
        ax.barh(
            y + 0.4 - height * (k + 0.5),
            [scores[column] for scores in rows.values()],
            height,
            label=column,
        )
    ax.set_yticks(y, list(rows))
    ax.set(
        xlim=(0, 1),
        title="Each model on each half of the prompts",
        xlabel="probability of the exact answer (mean over the prompts)",
    )
    ax.legend(loc="lower right")
    return figure


def plot_zero_variance_check(runs: dict[str, list[dict]], group_size: int) -> Figure:
    """runs: label -> a GRPO run's records (iteration, sampled_reward, zero_variance). The
    observed zero-variance fraction beside what i.i.d. rewards at the batch's success rate
    predict, 1 - P(mixed group)."""
    figure, ax = _figure(3.8)
    for (label, records), colour in zip(runs.items(), ("tab:blue", "tab:orange", "tab:green")):
        logged = [r for r in records if r["zero_variance"] is not None]
        iterations = [r["iteration"] for r in logged]
        ax.plot(
            iterations,
            [r["zero_variance"] for r in logged],
            "o-",
            color=colour,
            label=f"{label}: observed",
        )
        predicted = [1 - mixed_group_probability(r["sampled_reward"], group_size) for r in logged]
        ax.plot(iterations, predicted, "--", color=colour, label=f"{label}: predicted")
    ax.set(
        ylim=(0, 1),
        xlabel="iteration",
        ylabel="share of groups with one reward",
        title=f"Zero-variance groups against the i.i.d. prediction (G = {group_size})",
    )
    ax.legend(loc="upper left")
    return figure


def plot_packing(packing: dict, layouts: tuple[str, ...] = ("padded", "packed", "naive")) -> Figure:
    """packing: the packing lab's record. Left, the slots each layout computes for the same
    conversations; right, the loss per target token each layout reports."""
    figure, (slots_ax, loss_ax) = _figure(3.4, panels=2)
    colours = ["tab:grey", "tab:blue", "tab:red"]
    slots_ax.bar(layouts, [packing[name]["slots"] for name in layouts], color=colours)
    slots_ax.set(title="Work: slots computed", ylabel="token slots")
    loss_ax.bar(layouts, [packing[name]["loss"] for name in layouts], color=colours)
    loss_ax.set(title="Loss on the same targets", ylabel="nats per target token")
    for ax in (slots_ax, loss_ax):
        ax.set_xlabel("layout")
    return figure
