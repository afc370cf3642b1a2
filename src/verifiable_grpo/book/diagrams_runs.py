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
    figure, ax = canvas(11, 4.9)
    begin, cut, end = 1.9, 4.6, 8.2
    _timeline(ax, 4.3, begin, end, "continuous")
    chip(ax, (end + 0.55, 4.3), "state S", COLOURS["good"], ChipLook(0.9))
    _timeline(ax, 3.3, begin, cut, "interrupt")
    ax.text(cut + 0.15, 3.3, "\u2715 process ends", va="center", fontsize=9, color="#a00000")
    _timeline(ax, 0.85, cut, end, "resume")
    chip(ax, (end + 0.55, 0.85), "state S\u2032", COLOURS["good"], ChipLook(0.9))
    ax.text(0.15, 3.05, "process 1", fontsize=8.5, color="#555555")
    ax.text(0.15, 0.6, "process 2, started fresh", fontsize=8.5, color="#555555")
    ax.text(begin, 4.6, "update 0", ha="center", fontsize=8.5)
    ax.text(cut, 4.6, "update k", ha="center", fontsize=8.5)
    ax.text(end, 4.6, "update N", ha="center", fontsize=8.5)
    box(ax, (cut + 0.15, 2.15), (3.6, 1.55), "", "", BoxLook(COLOURS["old"]))
    ax.text(cut - 1.6, 2.78, "state file at update k", fontsize=9.5, weight="bold")
    note(ax, (cut - 1.6, 2.05), "\n".join(STATE_PARTS), size=8.3)
    arrow(ax, (cut, 3.2), (cut, 2.93), "save", ArrowLook(text_offset=(0.3, 0)))
    arrow(ax, (cut, 1.37), (cut, 0.97), "load", ArrowLook(text_offset=(0.3, 0)))
    ax.text(end + 1.15, 2.65, "S\u2032 = S\ntensor by\ntensor", ha="left", va="center",
            fontsize=10, weight="bold", color="#1e6b1e")  # fmt: skip
    arrow(ax, (end + 0.55, 4.05), (end + 0.55, 1.1), "", ArrowLook(style="<|-|>"))
    note(ax, (0.15, 0.2), "only wall-clock timings are left out of the comparison; a state "
         "whose identity differs from the resuming run's is refused", size=9, color="#555555")  # fmt: skip
    return figure


def evaluation_design_diagram() -> Figure:
    """200 held-out problems in two splits; per problem one greedy answer and four seeded
    draws; every policy on the same problems and seeds, so comparisons are paired."""
    figure, ax = canvas(11.5, 5.0)
    box(ax, (1.45, 3.75), (2.4, 1.15), "ID50: 100 problems", "drawn like the\ntraining problems",
        BoxLook(COLOURS["prompt"]))  # fmt: skip
    box(ax, (1.45, 2.3), (2.4, 1.15), "OOD100: 100 problems", "an operand above 50:\noutside training",
        BoxLook(COLOURS["verify"]))  # fmt: skip
    ax.text(
        1.45, 4.65, "200 test problems, never trained on", ha="center", fontsize=9.5, weight="bold"
    )
    # Every problem of either split gets both kinds of answer.
    ax.plot([2.65, 2.95, 2.95, 2.65], [3.75, 3.75, 2.3, 2.3], color=INK, linewidth=1.2)
    arrow(ax, (2.95, 3.0), (3.6, 3.75))
    arrow(ax, (2.95, 3.0), (3.6, 2.0))
    ax.text(3.05, 3.0, "each\nproblem", fontsize=8.5, style="italic", va="center")
    box(ax, (4.9, 3.75), (2.5, 1.0), "1 greedy answer", "the most likely token\nat every step",
        BoxLook("#ffffff", 10))  # fmt: skip
    box(ax, (4.9, 2.0), (2.5, 1.3), "4 sampled answers", "temperature 1; seeds fixed per\n"
        "problem, the same for\nevery policy", BoxLook("#ffffff", 10))  # fmt: skip
    chip(ax, (7.2, 3.75), "greedy pass@1", COLOURS["good"], ChipLook(1.45))
    chip(ax, (7.2, 2.0), "per-draw success", COLOURS["good"], ChipLook(1.45))
    arrow(ax, (6.15, 3.75), (6.47, 3.75))
    arrow(ax, (6.15, 2.0), (6.47, 2.0))
    # Paired: the same problem, two policies, side by side.
    ax.text(9.75, 4.65, "every policy: same problems, same seeds", ha="center", fontsize=9.5,
            weight="bold")  # fmt: skip
    marks = (("\u2713", "\u2713"), ("\u2713", "\u2717"), ("\u2717", "\u2717"), ("\u2717", "\u2713"))
    for row, (a, b) in enumerate(marks):
        y = 4.05 - 0.42 * row
        ax.text(8.45, y, f"problem {row + 1}", fontsize=8.5, va="center")
        chip(
            ax,
            (9.85, y),
            a,
            COLOURS["good"] if a == "\u2713" else COLOURS["bad"],
            ChipLook(0.55, 0.34),
        )
        chip(
            ax,
            (10.55, y),
            b,
            COLOURS["good"] if b == "\u2713" else COLOURS["bad"],
            ChipLook(0.55, 0.34),
        )
    ax.text(9.85, 4.38, "A", ha="center", fontsize=9, weight="bold")
    ax.text(10.55, 4.38, "B", ha="center", fontsize=9, weight="bold")
    note(ax, (8.3, 1.95), "paired: only problems where A and\nB disagree (rows 2 and 4) tell them\n"
         "apart. Exact McNemar test on the\nfirst draws; paired bootstrap of\nper-problem "
         "means", size=8.6)  # fmt: skip
    arrow(ax, (7.95, 2.9), (8.35, 3.25))
    note(ax, (0.3, 0.55), "reported separately for ID50, OOD100 and ALL, each rate with a 95 % "
         "Wilson interval; the test answers are read only after every generation is written",
         size=9, color="#555555")  # fmt: skip
    return figure
