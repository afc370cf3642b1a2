"""Diagrams of how Part I's runs are organised: the three policies of a GRPO iteration,
exact resume across processes, and the evaluation design."""

from __future__ import annotations

from matplotlib.figure import Figure
from matplotlib.patches import FancyBboxPatch

from verifiable_grpo.book.diagram_shapes import (
    COLOURS,
    INK,
    SCALE,
    ArrowLook,
    BoxLook,
    ChipLook,
    arrow,
    box,
    canvas,
    chip,
    note,
)

# (name, symbol, what it is, what it is used for, colour) of each policy in one iteration.
ROLES = (
    ("reference", "\u03c0ref", "the warm start, frozen\nfor the whole run",
     "the KL term: \u03b2 \u00b7 KL(\u03c0\u03b8 \u2016 \u03c0ref)\nat every visited prefix",
     COLOURS["reference"]),
    ("old policy", "\u03c0old", "the policy that sampled this\nrollout set; its log-probs are\n"
     "captured once, at sampling", "the ratio \u03c1 = \u03c0\u03b8 / \u03c0old\nand its clip",
     COLOURS["old"]),
    ("current policy", "\u03c0\u03b8", "the weights being trained:\nthe only one that gradients\nreach",
     "both terms; after the updates\nit samples the next iteration", COLOURS["current"]),
)  # fmt: skip


def three_roles_diagram() -> Figure:
    """What each of the three policies is, what it is used for, and when each changes."""
    figure, ax = canvas(11, 5.4, SCALE)
    for i, (name, symbol, what, used, colour) in enumerate(ROLES):
        x = 1.95 + 3.55 * i
        box(ax, (x, 4.35), (3.1, 1.45), f"{name}  {symbol}", what, BoxLook(colour))
        ax.text(x, 3.33, "used for", ha="center", fontsize=8.5, style="italic", color="#555555")
        ax.text(x, 2.92, used, ha="center", va="center", fontsize=9, linespacing=1.3)
    # One iteration on a time line: when pi_old and pi_theta agree, and when they part.
    steps = (("sampling", "\u03c0old = \u03c0\u03b8: log-probs\ncaptured here"),
             ("update 1", "\u03c1 = 1 up to rounding:\nno clip can act"),
             ("update 2", "\u03c0\u03b8 has moved: \u03c1 \u2260 1,\nthe clip may act"),
             ("next iteration", "the updated \u03c0\u03b8\nbecomes \u03c0old"))  # fmt: skip
    for i, (title, detail) in enumerate(steps):
        x = 1.45 + 2.7 * i
        box(
            ax,
            (x, 1.5),
            (2.25, 1.0),
            title,
            detail,
            BoxLook(COLOURS["sample"] if i == 0 else "#ffffff", 10),
        )
        if i:
            arrow(ax, (x - 2.7 + 1.13, 1.5), (x - 1.13, 1.5))
    ax.add_patch(
        FancyBboxPatch((0.3, 0.3), 10.4, 0.32, boxstyle="round,pad=0.02", facecolor=COLOURS[
            "reference"], edgecolor=INK, linewidth=0.9)
    )  # fmt: skip
    note(ax, (5.5, 0.46), "\u03c0ref: the same frozen weights in every iteration, from the "
         "first to the last", size=9, ha="center")  # fmt: skip
    ax.text(0.3, 2.25, "one iteration", fontsize=10, weight="bold", color="#555555")
    return figure


# What the saved state holds (the keys chapter 7 lists), grouped for the picture.
STATE_PARTS = (
    "model weights",
    "AdamW moments and step",
    "learning-rate schedule step",
    "data position: epoch order, cursor",
    "random streams: Python, NumPy, torch, the data sampler",
    "identity: config, data, code, start weights, threads",
)


def _timeline(ax, y, start, stop, label, ticks=True):
    ax.plot([start, stop], [y, y], color="#1f77b4", linewidth=5, solid_capstyle="butt")
    if ticks:
        for k in range(int(start * 2), int(stop * 2) + 1):
            ax.plot([k / 2, k / 2], [y - 0.1, y + 0.1], color="white", linewidth=1)
    ax.text(0.15, y, label, ha="left", va="center", fontsize=10, weight="bold")


def resume_diagram() -> Figure:
    """An uninterrupted run against one stopped at update k, saved, and resumed by a fresh
    process: both end in states that compare equal tensor by tensor."""
    figure, ax = canvas(11, 5.6, SCALE)
    begin, cut, end = 1.9, 4.6, 8.2
    _timeline(ax, 4.95, begin, end, "continuous")
    chip(ax, (end + 0.55, 4.95), "state S", COLOURS["good"], ChipLook(0.9))
    _timeline(ax, 3.95, begin, cut, "interrupt")
    ax.text(cut + 0.15, 3.95, "\u2715 process ends", va="center", fontsize=9, color="#a00000")
    _timeline(ax, 1.15, cut, end, "resume")
    chip(ax, (end + 0.55, 1.15), "state S\u2032", COLOURS["good"], ChipLook(0.9))
    ax.text(0.15, 3.65, "process 1", fontsize=8.5, color="#555555")
    ax.text(0.15, 0.85, "process 2, started fresh", fontsize=8.5, color="#555555")
    for x, label in ((begin, "update 0"), (cut, "update k"), (end, "update N")):
        ax.text(x, 5.25, label, ha="center", fontsize=8.5)
    box(ax, (4.75, 2.55), (5.5, 1.95), "", "", BoxLook(COLOURS["old"]))
    ax.text(2.15, 3.25, "state file at update k", fontsize=9.5, weight="bold")
    note(ax, (2.15, 2.45), "\n".join(STATE_PARTS), size=8.5)
    arrow(ax, (cut, 3.85), (cut, 3.55), "save", ArrowLook(text_offset=(0.35, 0)))
    arrow(ax, (cut, 1.57), (cut, 1.27), "load", ArrowLook(text_offset=(0.35, 0)))
    ax.text(end + 1.15, 3.05, "S\u2032 = S\ntensor by\ntensor", ha="left", va="center",
            fontsize=10, weight="bold", color="#1e6b1e")  # fmt: skip
    arrow(ax, (end + 0.55, 4.7), (end + 0.55, 1.4), "", ArrowLook(style="<|-|>"))
    note(ax, (0.15, 0.3), "only wall-clock timings are left out of the comparison; a state "
         "whose identity differs\nfrom the resuming run's is refused", size=9, color="#555555")  # fmt: skip
    return figure


def evaluation_design_diagram() -> Figure:
    """200 held-out problems in two splits; per problem one greedy answer and four seeded
    draws; every policy on the same problems and seeds, so comparisons are paired."""
    figure, ax = canvas(11, 7.4, SCALE)
    # Top: every problem of either split gets both kinds of answer.
    ax.text(0.2, 7.1, "200 test problems, never trained on", fontsize=9.5, weight="bold")
    box(ax, (1.9, 6.2), (3.4, 1.1), "ID50: 100 problems", "drawn like the\ntraining problems",
        BoxLook(COLOURS["prompt"]))  # fmt: skip
    box(ax, (1.9, 4.7), (3.4, 1.1), "OOD100: 100 problems", "an operand above 50:\noutside training",
        BoxLook(COLOURS["verify"]))  # fmt: skip
    ax.plot([3.6, 3.9, 3.9, 3.6], [6.2, 6.2, 4.7, 4.7], color=INK, linewidth=1.2)
    arrow(ax, (3.9, 5.45), (4.55, 6.2))
    arrow(ax, (3.9, 5.45), (4.55, 4.6))
    ax.text(3.75, 5.45, "each\nproblem", fontsize=8.5, style="italic", va="center", ha="right")
    box(ax, (6.15, 6.2), (3.1, 1.1), "1 greedy answer", "the most likely token\nat every step",
        BoxLook("#ffffff", 10))  # fmt: skip
    box(ax, (6.15, 4.6), (3.1, 1.45), "4 sampled answers", "temperature 1; seeds fixed\n"
        "per problem, the same\nfor every policy", BoxLook("#ffffff", 10))  # fmt: skip
    chip(ax, (9.6, 6.2), "greedy pass@1", COLOURS["good"], ChipLook(2.2, 0.45, 9.5))
    chip(ax, (9.6, 4.6), "per-draw success", COLOURS["good"], ChipLook(2.2, 0.45, 9.5))
    arrow(ax, (7.75, 6.2), (8.45, 6.2))
    arrow(ax, (7.75, 4.6), (8.45, 4.6))
    # Bottom: paired, the same problem, two policies, side by side.
    ax.text(0.15, 3.45, "every policy: same problems, same seeds", fontsize=9.5, weight="bold")
    marks = (("\u2713", "\u2713"), ("\u2713", "\u2717"), ("\u2717", "\u2717"), ("\u2717", "\u2713"))
    for row, (a, b) in enumerate(marks):
        y = 2.5 - 0.5 * row
        ax.text(0.3, y, f"problem {row + 1}", fontsize=9, va="center")
        for x, mark in ((2.3, a), (3.0, b)):
            colour = COLOURS["good"] if mark == "\u2713" else COLOURS["bad"]
            chip(ax, (x, y), mark, colour, ChipLook(0.55, 0.38))
    ax.text(2.3, 2.95, "A", ha="center", fontsize=9.5, weight="bold")
    ax.text(3.0, 2.95, "B", ha="center", fontsize=9.5, weight="bold")
    note(ax, (3.8, 1.75), "paired: only problems where A and B disagree (rows 2 and 4)\n"
         "tell them apart. Exact McNemar test on the first draws;\npaired bootstrap of "
         "per-problem means", size=9)  # fmt: skip
    note(ax, (0.15, 0.45), "reported separately for ID50, OOD100 and ALL, each rate with a 95 % "
         "Wilson interval;\nthe test answers are read only after every generation is written",
         size=9, color="#555555")  # fmt: skip
    return figure
