"""Figures and tables of the registry's objectives trained on the eight fixed prompts
(part1.fixed_prompt_objectives): chapter II.7 (the objectives) and II.6 (the mismatch)."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from verifiable_grpo.book.plots import moving_average, smoothed
from verifiable_grpo.part1 import fixed_prompt_objectives

# The result (the difference to GRPO and its interval) comes right after the name, so it
# stays on screen on a phone; the columns behind it may scroll.
COMPARISON_COLUMNS = (
    "objective",
    "minus GRPO",
    "95% (bootstrap over prompts)",
    "success after",
    "95% (Wilson)",
    "prompts improved",
    "final exact KL",
)


def _interval(pair) -> str:
    return f"[{pair[0]:+.3f}, {pair[1]:+.3f}]"


def comparison_table(rows: list[dict]) -> tuple[list[str], list[list]]:
    """(columns, rows) of fixed_prompt_objectives.comparison for a notebook Table."""
    body = [
        [
            r["objective"],
            f"{r['difference']:+.3f}",
            _interval(r["difference_interval"]),
            r["after"],
            f"[{r['after_interval'][0]:.3f}, {r['after_interval'][1]:.3f}]",
            f"{r['prompts_improved']} of 8",
            r["final_exact_kl"],
        ]
        for r in rows
    ]
    return list(COMPARISON_COLUMNS), body


def plot_objective_runs(grpo: dict, runs: dict, rows: list[dict], window: int = 8) -> Figure:
    """Reward curves of every run beside GRPO's, the paired differences with their
    intervals, and the exact KL and entropy along the way."""
    figure = Figure(figsize=(11, 7), layout="constrained")
    axes = figure.subplots(2, 2).ravel()
    series = {"grpo (part1)": grpo, **runs}
    for index, (name, result) in enumerate(series.items()):
        history = result["history"]
        it = [h["iteration"] for h in history]
        style = (
            dict(color="black", lw=2.4, zorder=10)
            if index == 0  # GRPO on top
            else dict(color=f"C{index - 1}", lw=1.2, ls="--" if "grpo_" in name else "-")
        )
        axes[0].plot(
            it, moving_average([h["mean_reward"] for h in history], window), label=name, **style
        )
        axes[2].plot(it, [h["mean_exact_kl"] for h in history], **style)
        axes[3].plot(it, [h["mean_entropy"] for h in history], **style)
    axes[0].set(
        title=smoothed("reward on the trained prompts", window),
        xlabel="iteration",
        ylim=(0, 1),
    )
    axes[0].legend(fontsize=7, ncol=2)
    axes[2].set(title="exact KL to the reference", xlabel="iteration")
    axes[3].set(title="entropy per token (nats)", xlabel="iteration")
    _differences(axes[1], rows[1:])
    return figure


def _differences(ax, rows: list[dict]) -> None:
    y = np.arange(len(rows))[::-1]
    centre = [r["difference"] for r in rows]
    low = [r["difference"] - r["difference_interval"][0] for r in rows]
    high = [r["difference_interval"][1] - r["difference"] for r in rows]
    ax.errorbar(centre, y, xerr=[low, high], fmt="o", color="C0", capsize=3)
    ax.axvline(0, color="black", lw=1)
    ax.set_yticks(y, [r["objective"] for r in rows])
    ax.set(
        title="success after minus GRPO's (95%, over prompts)", xlabel="difference in success rate"
    )


MISMATCH_COLUMNS = (
    "run",
    "minus GRPO (float32)",
    "sampler",
    "weight min",
    "weight max",
    "weights at 0",
    "clipped in first updates",
    "success after",
)


def mismatch_rows(recorded: dict, comparison: list[dict]) -> list[list]:
    """One row per run of the mismatch trio, plus GRPO with the float32 sampler first."""
    by_name = {r["objective"]: r for r in comparison}
    clipped = recorded.get("grpo_first_update_clip_fraction")
    out = [
        [
            "grpo (part1)",
            "+0.000",
            "float32",
            "-",
            "-",
            "-",
            "-" if clipped is None else f"{np.mean(clipped):.4f}",
            by_name["grpo (part1)"]["after"],
        ]
    ]
    for name in fixed_prompt_objectives.MISMATCH_RUNS:
        key = fixed_prompt_objectives.run_name(name, True)
        result, row = recorded["runs"][key], by_name[key]
        weights = _weight_cells(result["history"])
        out.append(
            [
                name,
                f"{row['difference']:+.3f} {_interval(row['difference_interval'])}",
                fixed_prompt_objectives.MISMATCH_PRECISION,
                *weights,
                _clipped(result),
                row["after"],
            ]
        )
    return out


def _weight_cells(history: list[dict]) -> list[str]:
    """Min and max behaviour weight over the run, and the mean share at 0; "-" for a run
    without a correction (its history has no weights)."""
    if "behaviour_weight_min" not in history[0]:
        return ["-", "-", "-"]
    return [
        f"{min(h['behaviour_weight_min'] for h in history):.3f}",
        f"{max(h['behaviour_weight_max'] for h in history):.3f}",
        f"{np.mean([h['behaviour_weight_zero_fraction'] for h in history]):.4f}",
    ]


def _clipped(result: dict) -> str:
    """Mean over iterations of the clipped share in each first update (0 on policy)."""
    return f"{np.mean(result['first_update_clip_fraction']):.4f}"
