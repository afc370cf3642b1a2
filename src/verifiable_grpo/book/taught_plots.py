"""Chapter "What taught it": pass@k before and after with its intervals, and the sampled
answers split into malformed, wrong number and right."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

BREAKDOWN_COLOURS = {"malformed": "C7", "wrong number": "C3", "right": "C2"}


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
    for kind, colour in BREAKDOWN_COLOURS.items():
        values = np.array([breakdown[s][kind] for s in sides], dtype=float)
        bars = ax.barh(names, values, left=left, color=colour, label=kind)
        ax.bar_label(bars, labels=[f"{int(v):,}" for v in values], label_type="center")
        left += values
    total = int(left[0])
    ax.set_xlim(0, total)
    ax.set_xlabel(f"sampled test answers (of {total:,})")
    ax.invert_yaxis()
    ax.legend(ncols=3, loc="upper center", bbox_to_anchor=(0.5, -0.25), frameon=False)
    return figure
