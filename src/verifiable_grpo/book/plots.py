"""Figures of recorded runs for the chapters (matplotlib Figures, no pyplot state).

Each function takes the JSON records the pipeline writes (or their exported copies in
data/recorded/<profile>/) and returns a Figure; notebooks display it with notebook.show.
"""

from __future__ import annotations

import math

import numpy as np
from matplotlib.figure import Figure

from verifiable_grpo.core.runfolder import order_policies

POPULATIONS = ("ALL", "ID50", "OOD100")


def moving_average(values, window: int) -> np.ndarray:
    """Trailing mean over up to `window` points (the first points average what exists)."""
    values = np.asarray(values, dtype=np.float64)
    if window < 1:
        raise ValueError("window must be >= 1")
    sums = np.cumsum(np.insert(values, 0, 0.0))
    idx = np.arange(1, len(values) + 1)
    start = np.maximum(0, idx - window)
    return (sums[idx] - sums[start]) / (idx - start)


def smoothed(title: str, window: int, unit: str = "iteration") -> str:
    """A panel title that says its line is a trailing mean, and over how many points, so a
    reader comparing the panel with a quoted peak knows the peak is flattened."""
    return f"{title}\n(line: mean of last {window} {unit}s)"  # two lines: fits a panel


def plot_sft_curves(records: dict) -> Figure:
    """records: branch -> continuous learning record (warmstart, sft)."""
    figure = Figure(figsize=(10, 3.2), layout="constrained")
    loss_ax, nll_ax, lr_ax = figure.subplots(1, 3)
    for branch, record in records.items():
        updates = [h["update"] for h in record["history"]]
        loss_ax.plot(updates, [h["loss"] for h in record["history"]], lw=0.8, label=branch)
        epochs = record["validation_history"]
        nll_ax.plot([e["updates"] for e in epochs], [e["nll"] for e in epochs], "o-", label=branch)
        lr_ax.plot(updates, [h["learning_rate"] for h in record["history"]], label=branch)
    loss_ax.set(title="training loss per update", xlabel="update", ylabel="token cross-entropy")
    nll_ax.set(title="validation NLL after each epoch", xlabel="update", ylabel="NLL per token")
    lr_ax.set(title="learning rate", xlabel="update")
    for ax in (loss_ax, nll_ax, lr_ax):
        ax.legend(fontsize=8)
    return figure


def plot_grpo_telemetry(record: dict, window: int = 10) -> Figure:
    """record: the continuous GRPO learning record (history per iteration)."""
    history = record["history"]
    it = np.array([h["iteration"] for h in history])
    # Two panels a row: drawn for the book's column, its text stays readable there.
    figure = Figure(figsize=(7.5, 9.6), layout="constrained")
    axes = figure.subplots(3, 2).ravel()
    reward = [h["mean_reward"] for h in history]
    axes[0].plot(it, reward, ".", alpha=0.4, label="per iteration (16 responses)")
    axes[0].plot(it, moving_average(reward, window), label=f"mean of last {window}")
    axes[0].set(title=smoothed("mean reward", window), xlabel="iteration")
    zero_variance = [h["zero_variance_fraction"] for h in history]
    axes[1].plot(it, zero_variance, ".", alpha=0.4)
    axes[1].plot(it, moving_average(zero_variance, window))
    axes[1].set(
        title=smoothed("zero-variance groups (share)", window),
        xlabel="iteration",
        ylim=(-0.05, 1.05),
    )
    axes[2].plot(it, [h["mean_exact_kl"] for h in history])
    axes[2].set(title="mean exact KL to the reference", xlabel="iteration")
    for update in (0, 1):
        low = [h["updates"][update]["clip_low_fraction"] for h in history]
        high = [h["updates"][update]["clip_high_fraction"] for h in history]
        axes[3].plot(it, np.add(low, high), label=f"update {update + 1} of the set")
    axes[3].set(title="active clip fraction (low + high)", xlabel="iteration")
    axes[3].legend(fontsize=9)
    axes[4].plot(it, [h["grad_norm"] for h in history])
    axes[4].set(title="gradient norm (before clipping)", xlabel="iteration")
    axes[5].plot(it, [h["learning_rate"] for h in history])
    axes[5].set(title="learning rate (first update)", xlabel="iteration")
    axes[0].legend(fontsize=9)
    for ax in axes:
        ax.title.set_fontsize(11)
    return figure


def _error_bars(cells: list[dict]) -> np.ndarray:
    """[2, k] distances from each rate down and up to its 95% Wilson interval, counted as if
    each problem gave one observation: the draws of one problem are not independent, so a
    per-draw rate gets the (wider, conservative) interval of its problem count. For greedy
    pass@1 there is one response per problem and this is the plain Wilson interval."""
    from verifiable_grpo.evaluation.statistics import Z_95, wilson_interval

    bars = []
    for cell in cells:
        z = Z_95 * math.sqrt(cell["responses"] / cell["problems"])
        low, high = wilson_interval(cell["correct"], cell["responses"], z=z)
        bars.append((cell["success_rate"] - low, high - cell["success_rate"]))
    return np.clip(np.array(bars).T, 0.0, None)


def plot_results(results: dict, reference: dict | None = None, policies=None) -> Figure:
    """Greedy pass@1 and per-draw success per policy and population, with 95% intervals;
    the specification's published figures (ALL only) as hollow markers when given.

    Intervals: _error_bars (Wilson, one observation per problem)."""
    present = [
        p for p in (policies or order_policies(results["policies"])) if p in results["policies"]
    ]
    figure = Figure(figsize=(11, 3.6), layout="constrained")
    axes = figure.subplots(1, 2, sharey=True)
    width = 0.8 / len(POPULATIONS)
    for ax, (key, ref_key, title) in zip(
        axes,
        [
            ("greedy_pass_at_1", "greedy_pass_at_1", "greedy pass@1"),
            ("per_draw_success", "empirical_per_draw_success", "per-draw success"),
        ],
    ):
        x = np.arange(len(present))
        for k, population in enumerate(POPULATIONS):
            cells = [results["policies"][p][key][population] for p in present]
            ax.bar(
                x + (k - 1) * width,
                [c["success_rate"] for c in cells],
                width,
                label=population,
                yerr=_error_bars(cells),
                capsize=2,
                error_kw={"elinewidth": 0.8, "ecolor": "black"},
            )
        if reference is not None:
            ref = [
                reference["metrics"].get(p, {}).get(ref_key, {}).get("success_rate", np.nan)
                for p in present
            ]
            ax.plot(x - width, ref, "ko", mfc="none", label="specification (ALL)")
        ax.set_xticks(x, present)
        ax.set(title=f"{title} (bars: 95% intervals)", ylabel="success rate")
        ax.legend(fontsize=8)
    return figure


def results_rows(results: dict, policies=None) -> list[list]:
    """One row per policy: greedy pass@1 and per-draw success for ALL / ID50 / OOD100."""
    rows = []
    for policy in policies or order_policies(results["policies"]):
        if policy not in results["policies"]:
            continue
        entry = results["policies"][policy]
        rows.append(
            [policy]
            + [entry["greedy_pass_at_1"][p]["success_rate"] for p in POPULATIONS]
            + [entry["per_draw_success"][p]["success_rate"] for p in POPULATIONS]
        )
    return rows


RESULTS_COLUMNS = (
    ["policy"] + [f"greedy {p}" for p in POPULATIONS] + [f"per-draw {p}" for p in POPULATIONS]
)


def plot_sweep_histories(
    results: list[dict], window: int = 10, highlight: str | None = None
) -> Figure:
    """The sweep's settings side by side: training reward and zero-variance groups (trailing
    means), exact KL to the reference, and the clipped share of each iteration's largest
    update, raw: the chapter quotes its peak, which a trailing mean would flatten."""
    figure = Figure(figsize=(7.5, 6.6), layout="constrained")  # for the book's column
    axes = figure.subplots(2, 2).ravel()
    for res in results:
        name = res["setting"]["name"]
        history = res["history"]
        it = [h["iteration"] for h in history]
        style = {"lw": 2.2} if name == highlight else {"lw": 1.0, "alpha": 0.8}
        axes[0].plot(
            it, moving_average([h["mean_reward"] for h in history], window), label=name, **style
        )
        axes[1].plot(
            it, moving_average([h["zero_variance_fraction"] for h in history], window), **style
        )
        axes[2].plot(it, [max(h["kl"], 1e-9) for h in history], **style)
        axes[3].plot(it, [h["clip"] for h in history], **style)
    axes[0].set(title=smoothed("training reward", window), xlabel="iteration")
    axes[1].set(
        title=smoothed("zero-variance groups", window), xlabel="iteration", ylim=(-0.05, 1.05)
    )
    axes[2].set(title="mean exact KL to the warm start", xlabel="iteration", yscale="log")
    axes[3].set(
        title="clipped share of tokens\n(largest update, per iteration)", xlabel="iteration"
    )
    axes[0].legend(fontsize=9)
    for ax in axes:
        ax.title.set_fontsize(11)
    return figure
