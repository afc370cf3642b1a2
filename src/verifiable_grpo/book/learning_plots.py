"""Figures of GRPO learning on fixed prompts (chapter 6) and of the held-out lift study.

The fixed-prompt record (part1.fixed_prompts) holds our per-iteration telemetry and,
when present, TRL's log on the same prompts; both share the paired before/after success
on the trained prompts, measured with the same draw seeds.
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from verifiable_grpo.book.plots import moving_average, smoothed


def _trl_series(trl: dict, key: str) -> tuple[np.ndarray, list]:
    """TRL's log entries that carry a reward, one per rollout set: x in iterations."""
    rows = [entry for entry in trl["log"] if key in entry]
    per = len(trl["log"]) / trl["setting"]["iterations"]
    return np.arange(len(rows)) / per, [entry[key] for entry in rows]


def plot_fixed_prompt_run(ours: dict, trl: dict | None = None, window: int = 5) -> Figure:
    """Six panels: reward, success before/after per prompt, KL, entropy, clip, length."""
    history = ours["history"]
    it = np.array([h["iteration"] for h in history])
    # Two panels a row: drawn for the book's column, its text stays readable there.
    figure = Figure(figsize=(7.5, 10), layout="constrained")
    axes = figure.subplots(3, 2).ravel()
    reward = [h["mean_reward"] for h in history]
    axes[0].plot(it, reward, ".", alpha=0.35, color="C0")
    axes[0].plot(it, moving_average(reward, window), color="C0", label="ours (exact KL)")
    panels = [
        (2, "mean_exact_kl", "kl", "KL to the reference"),
        (3, "mean_entropy", "entropy", "entropy per token (nats)"),
        (5, "mean_response_tokens", "completions/mean_length", "response length (tokens)"),
    ]
    for index, mine, _theirs, title in panels:
        axes[index].plot(it, [h[mine] for h in history], color="C0", label="ours")
        axes[index].set(title=title, xlabel="iteration")
    clip = [h["clip_low_fraction"] + h["clip_high_fraction"] for h in history]
    axes[4].plot(it, clip, color="C0", label="ours")
    axes[4].set(title="active clip fraction, ours\n(mean of 2 updates)", xlabel="iteration")
    if trl is not None:
        x, values = _trl_series(trl, "reward")
        # the same span of iterations as ours, however many log rows an iteration has
        span = max(1, round(window * len(values) / trl["setting"]["iterations"]))
        axes[0].plot(x, moving_average(values, span), color="C1", label="TRL (k3 KL)")
        for index, _, theirs, _ in panels:
            x, values = _trl_series(trl, theirs)
            axes[index].plot(x, values, color="C1", alpha=0.8, label="TRL")
        # TRL's kept entries are each set's first update (ratio 1, no clip): not drawn.
    axes[0].set(
        title=smoothed("reward on the trained prompts", window),
        xlabel="iteration",
        ylim=(-0.02, 1.02),
    )
    _before_after(axes[1], ours, trl)
    for ax in axes:
        if ax.get_legend_handles_labels()[0] and ax.get_legend() is None:
            ax.legend(fontsize=9)
        ax.title.set_fontsize(11)
    return figure


def _before_after(ax, ours: dict, trl: dict | None) -> None:
    draws = ours["setting"]["draws"]
    prompts = ours["prompts"]
    x = np.arange(len(prompts))
    width = 0.27 if trl is not None else 0.4
    ax.bar(
        x - width, [p["before"] / draws for p in prompts], width, color="0.6", label="warm start"
    )
    ax.bar(x, [p["after"] / draws for p in prompts], width, color="C0", label="after, ours")
    if trl is not None:
        ax.bar(
            x + width,
            [p["after"] / draws for p in trl["prompts"]],
            width,
            color="C1",
            label="after, TRL",
        )
    ax.set(
        title=f"success per trained prompt\n({draws} draws)",
        xlabel="prompt",
        ylim=(0, 1.45),
        xticks=x,
    )
    ax.legend(fontsize=9, loc="upper center", ncol=2)


METRICS = (
    ("validation_sample", "validation per-draw (selects)"),
    ("test_sample", "test per-draw (primary)"),
    ("test_greedy", "test greedy pass@1"),
)


def plot_lift_intervals(summary: dict) -> Figure:
    """Paired differences with the warm start and their 95 % intervals, per candidate."""
    rows = summary["candidates"]
    figure = Figure(figsize=(7.5, 1.5 + 0.9 * len(rows)), layout="constrained")
    axes = figure.subplots(1, len(METRICS), sharey=True)
    for ax, (key, title) in zip(axes, METRICS):
        for y, row in enumerate(rows):
            paired = row["paired"][key]
            ax.errorbar(
                paired["difference"],
                y,
                xerr=[
                    [paired["difference"] - paired["low"]],
                    [paired["high"] - paired["difference"]],
                ],
                fmt="o",
                color="C0",
                capsize=4,
            )
        ax.axvline(0, color="0.5", lw=0.8, ls="--")
        ax.set_title(title.replace(" (", "\n("), fontsize=10)
    from verifiable_grpo.part1.lift_study import display_name

    labels = [display_name(r["name"]).replace(" (", "\n(") for r in rows]
    axes[0].set(yticks=range(len(rows)), yticklabels=labels, ylim=(-0.6, len(rows) - 0.4))
    figure.supxlabel("difference from the warm start (95 % interval)", fontsize=10)
    return figure


CURVES = (
    ("mean_reward", "training reward (this iteration's prompts)"),
    ("mean_exact_kl", "exact KL to its warm start"),
    ("mean_entropy", "entropy per token (nats)"),
)


def plot_lift_curves(results: list[dict], window: int = 10) -> Figure:
    """Per-iteration training telemetry of lift-study candidates side by side (moving
    average over `window` iterations, raw values faint): each candidate's reward on the
    prompts it drew that iteration, against its own warm start."""
    # One panel a row, for the book's column: side by side, the titles ran into each other.
    figure = Figure(figsize=(7.5, 8.4), layout="constrained")
    axes = figure.subplots(len(CURVES), 1, sharex=True)
    for ax, (key, title) in zip(axes, CURVES):
        for colour, result in enumerate(results):
            values = [h[key] for h in result["history"]]
            ax.plot(np.arange(len(values)), values, color=f"C{colour}", alpha=0.25, lw=0.8)
            ax.plot(
                np.arange(len(values)),
                moving_average(values, window),
                color=f"C{colour}",
                label=result["candidate"]["name"],
            )
        ax.set_title(smoothed(title, window), fontsize=11)
    axes[-1].set_xlabel("iteration")
    axes[0].legend(fontsize=9)
    return figure


def groups_with_signal(history: list[dict]) -> list[int]:
    """Per iteration, the groups whose rewards differ: only they carry a gradient."""
    return [sum(min(g["rewards"]) != max(g["rewards"]) for g in h["groups"]) for h in history]


def plot_group_size_branches(histories: dict[str, list[dict]]) -> Figure:
    """histories: a label (e.g. "G = 8") -> a run's per-iteration history. Left, the running
    total of groups with signal; right, each iteration's mean reward, raw."""
    figure = Figure(figsize=(7.5, 3.6), layout="constrained")
    signal_ax, reward_ax = figure.subplots(1, 2, sharex=True)
    for colour, (label, history) in enumerate(histories.items()):
        iteration = [h["iteration"] for h in history]
        style = {"color": f"C{colour}", "label": label, "marker": "o", "ms": 3}
        signal_ax.plot(iteration, np.cumsum(groups_with_signal(history)), **style)
        reward_ax.plot(iteration, [h["mean_reward"] for h in history], **style)
    signal_ax.set(
        title="groups with signal, running total",
        xlabel="iteration",
        ylabel="groups (rewards not all equal)",
    )
    reward_ax.set(title="mean reward of the iteration", xlabel="iteration", ylim=(-0.02, 1.02))
    figure.legend(
        *signal_ax.get_legend_handles_labels(), loc="outside lower center", ncols=3, fontsize=10
    )
    return figure
