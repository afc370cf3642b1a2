"""Chapter "A model that shows its working": the screen against its declared band, and
where the learning signal of a think-then-answer group would come from."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

TEMPLATE_COLOURS = {"answer-only": "C0", "think-then-answer": "C1"}


def plot_screen(rows: list[dict], band: dict) -> Figure:
    """Per-draw success of each family (x) under each template (bars), with the 95 %
    interval over problems, against the declared band (shaded; its top lies off the axis
    when every bar is far below it)."""
    figure = Figure(figsize=(6.5, 3.4), layout="constrained")
    ax = figure.subplots()
    families = list(dict.fromkeys(r["family"] for r in rows))
    width = 0.36
    top = max(r["high"] for r in rows)
    ceiling = min(max(0.25, 1.3 * top), 1.0)
    ax.axhspan(band["low"], min(band["high"], ceiling), color="C2", alpha=0.12)
    ax.axhline(band["low"], color="C2", lw=1, ls="--", label=f"declared band from {band['low']}")
    for offset, (template, colour) in zip((-width / 2, width / 2), TEMPLATE_COLOURS.items()):
        mine = {r["family"]: r for r in rows if r["template"] == template}
        x = np.arange(len(families)) + offset
        values = np.array([mine[f]["per_draw"] for f in families])
        errors = np.array(
            [
                [mine[f]["per_draw"] - mine[f]["low"], mine[f]["high"] - mine[f]["per_draw"]]
                for f in families
            ]
        )
        ax.bar(x, values, width, color=colour, label=template)
        ax.errorbar(x, values, yerr=errors.T, fmt="none", ecolor="0.2", capsize=3)
    labels = [
        f"{f}\n({'passes' if next(r for r in rows if r['family'] == f)['passed'] else 'fails'})"
        for f in families
    ]
    ax.set_xticks(range(len(families)), labels)
    ax.set_ylim(0, ceiling)
    ax.set_ylabel("per-draw success (screen)")
    ax.set_title(
        f"The screen: 95% interval over problems; the band runs up to {band['high']}",
        fontsize=10,
    )
    ax.legend(loc="upper right", fontsize=9)
    ax.grid(axis="y", alpha=0.3)
    return figure


def plot_group_signals(rows: list[dict]) -> Figure:
    """For each family's think-then-answer groups: the share silent under the answer
    alone, silent under answer + format, and taught by the format term alone."""
    figure = Figure(figsize=(6.5, 2.8), layout="constrained")
    ax = figure.subplots()
    kinds = (
        ("answer_silent", "silent under the answer reward", "C7"),
        ("total_silent", "silent under answer + format", "C3"),
        ("format_only", "signal from the format term only", "C1"),
    )
    height = 0.26
    for index, (key, label, colour) in enumerate(kinds):
        y = np.arange(len(rows)) + (index - 1) * height
        bars = ax.barh(y, [r[key] for r in rows], height, color=colour, label=label)
        ax.bar_label(bars, labels=[f"{r[key]:.2f}" for r in rows], padding=2, fontsize=9)
    ax.set_yticks(range(len(rows)), [r["family"] for r in rows])
    ax.invert_yaxis()
    ax.set_xlim(0, 1.1)
    size = rows[0]["group_size"]
    ax.set_xlabel(f"share of groups (each screen problem's {size} think-then-answer draws)")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.3), ncols=2, fontsize=9, frameon=False)
    return figure
