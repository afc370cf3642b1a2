"""Diagrams of Parts II and III: the GRPO family as choices on axes (read from the objectives
registry), DPO's preference pair, LoRA's adapters, and PPO's value baseline with GAE (its
numbers computed by part3.ppo_rlhf, as in the chapter)."""

from __future__ import annotations

import textwrap

from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

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
from verifiable_grpo.part3 import ppo_rlhf
from verifiable_grpo.training.objectives import STUDY_ARMS, get_objective

FAMILY = ("part1",) + STUDY_ARMS
FAMILY_AXES = (("advantages", 2.45), ("ratio", 1.0), ("clip", 0.95), ("aggregation", 1.75),
               ("KL", 1.3), ("sampler", 2.3))  # fmt: skip


def _cell_text(value: str, width: float) -> str:
    """A cell's value wrapped to its column (about 8.5 characters of 8 pt text per unit)."""
    return textwrap.fill(value, int(width * 8.5), break_long_words=False, break_on_hyphens=False)


def family_axes_diagram() -> Figure:
    """Each arm of the family as one row of choices, one column per axis of the registry;
    a cell that differs from grpo's is coloured."""
    figure, ax = canvas(11, 6.7, SCALE)
    rows = {name: get_objective(name).as_row() for name in FAMILY}
    x0, top, height = 1.15, 6.1, 0.78
    ax.text(0.15, top + 0.2, "objective", fontsize=10, weight="bold")
    for row_index, name in enumerate(FAMILY):
        y = top - row_index * height
        ax.text(0.15, y - height / 2, name, fontsize=10, weight="bold", va="center")
        x = x0
        for axis, width in FAMILY_AXES:
            if row_index == 0:
                ax.text(x + width / 2, top + 0.2, axis, ha="center", fontsize=10, weight="bold")
            value = rows[name][axis]
            differs = value != rows["grpo"][axis]
            ax.add_patch(Rectangle((x, y - height), width, height, edgecolor="#999999",
                                   facecolor=COLOURS["verify"] if differs else "#ffffff"))  # fmt: skip
            ax.text(x + width / 2, y - height / 2, _cell_text(value, width),
                    ha="center", va="center", fontsize=8.5, linespacing=1.15,
                    weight="bold" if differs else "normal")  # fmt: skip
            x += width
    note(ax, (0.15, 0.5), textwrap.fill("Each arm is one entry of the objectives registry, read "
         "by the same training loop; a coloured cell is where the arm departs from grpo. part1 is "
         "Part I's objective (population std, exact KL); the five arms of Part II leave the KL "
         "out.", 110), size=9, color="#444444")  # fmt: skip
    return figure


def dpo_pair_diagram() -> Figure:
    """A preference pair scored by the trained policy and the frozen reference; the implicit
    rewards, their margin and the loss -log sigma(margin)."""
    figure, ax = canvas(11, 5.0, SCALE)
    box(ax, (1.0, 2.4), (1.5, 1.0), "prompt x", "", BoxLook(COLOURS["prompt"]))
    box(
        ax,
        (3.25, 3.4),
        (2.1, 0.8),
        "chosen y_w",
        "preferred by a judge",
        BoxLook(COLOURS["good"], 10),
    )
    box(
        ax, (3.25, 1.4), (2.1, 0.8), "rejected y_l", "the other answer", BoxLook(COLOURS["bad"], 10)
    )
    arrow(ax, (1.75, 2.6), (2.2, 3.3))
    arrow(ax, (1.75, 2.2), (2.2, 1.5))
    ax.text(6.2, 4.3, "log-probabilities of the whole response", ha="center", fontsize=9.5,
            weight="bold")  # fmt: skip
    ax.text(5.45, 3.95, "\u03c0\u03b8 (trained)", ha="center", fontsize=9, color="#1f4e8c")
    ax.text(6.95, 3.95, "\u03c0ref (frozen)", ha="center", fontsize=9, color="#555555")
    for y, which in ((3.4, "w"), (1.4, "l")):
        arrow(ax, (4.3, y), (4.7, y))
        chip(
            ax, (5.45, y), f"log \u03c0\u03b8(y_{which})", COLOURS["current"], ChipLook(1.35, 0.42)
        )
        chip(ax, (6.95, y), f"log \u03c0ref(y_{which})", COLOURS["reference"], ChipLook(1.35, 0.42))
        arrow(ax, (7.65, y), (7.95, y))
        chip(ax, (9.4, y), f"r_{which} = \u03b2 (log \u03c0\u03b8 \u2212 log \u03c0ref)",
             COLOURS["advantage"], ChipLook(2.9, 0.42, 8.5))  # fmt: skip
    ax.text(9.4, 3.95, "implicit reward", ha="center", fontsize=9.5, weight="bold")
    arrow(ax, (9.4, 3.18), (9.4, 2.9))
    arrow(ax, (9.4, 1.62), (9.4, 1.9))
    box(ax, (9.4, 2.4), (2.3, 0.95), "loss = \u2212log \u03c3(m)", "margin m = r_w \u2212 r_l",
        BoxLook(COLOURS["update"], 10))  # fmt: skip
    note(ax, (0.2, 0.45), "No reward model and no sampling: the pair is data. The gradient "
         "only widens the margin,\nso log \u03c0\u03b8(y_w) may fall too, as long as log "
         "\u03c0\u03b8(y_l) falls faster.", size=9, color="#444444")  # fmt: skip
    return figure


def _matrix(ax, corner, width, height, label, colour):
    ax.add_patch(Rectangle(corner, width, height, facecolor=colour, edgecolor=INK, linewidth=1.2))
    cx, cy = corner[0] + width / 2, corner[1] + height / 2
    ax.text(cx, cy, label, ha="center", va="center", fontsize=11, weight="bold")


def lora_adapters_diagram() -> Figure:
    """y = W x + b + s B A x: the frozen matrix beside two thin trained factors, B zero at
    the start; the counts of one 576 x 576 projection at rank 8."""
    figure, ax = canvas(11, 5.2, SCALE)
    rank, width_in, width_out = 8, 576, 576
    chip(ax, (0.6, 2.6), "x", "#ffffff", ChipLook(0.5, 1.6, 12))
    ax.text(0.6, 1.55, f"in = {width_in}", ha="center", fontsize=8.5)
    _matrix(ax, (1.6, 2.9), 2.2, 1.6, "W", COLOURS["reference"])
    note(ax, (2.7, 2.68), f"frozen: out \u00d7 in = {width_out * width_in:,} weights",
         size=8.5, ha="center")  # fmt: skip
    _matrix(ax, (1.6, 0.95), 2.2, 0.45, "A", COLOURS["current"])
    note(ax, (2.7, 0.72), "r \u00d7 in, random at the start", size=8.5, ha="center")
    _matrix(ax, (4.6, 0.45), 0.45, 1.75, "B", COLOURS["current"])
    note(ax, (4.8, 0.2), "out \u00d7 r, zeros at the start", size=8.5, ha="center")
    arrow(ax, (0.85, 3.1), (1.55, 3.7))
    arrow(ax, (0.85, 2.1), (1.55, 1.17))
    arrow(ax, (3.85, 1.17), (4.55, 1.17), "A x", ArrowLook(text_offset=(0.0, 0.25)))
    arrow(ax, (5.1, 1.0), (5.6, 1.0))
    chip(ax, (6.1, 1.0), "\u00d7 s = \u03b1/r", "#ffffff", ChipLook(0.95, 0.4, 9))
    chip(ax, (6.9, 2.6), "+", "#ffffff", ChipLook(0.45, 0.45, 14))
    arrow(ax, (3.85, 3.7), (6.66, 2.7), "W x + b", ArrowLook(text_offset=(0.0, 0.3)))
    arrow(ax, (6.2, 1.22), (6.82, 2.36))
    arrow(ax, (7.14, 2.6), (7.5, 2.6))
    note(ax, (7.6, 2.6), "y = W x + b + s B A x", size=12, weight="bold")
    trained = rank * (width_in + width_out)
    note(ax, (7.6, 4.1), f"trained at rank r = {rank}:\nr (in + out) = {trained:,} numbers,\n"
         f"{trained / (width_in * width_out):.1%} of W", size=9)  # fmt: skip
    note(ax, (7.6, 1.1), "B = 0 at the start: the model\nis the base function exactly,\nand the "
         "first step moves B\nalone. Merging after training:\nW \u2190 W + s B A", size=9)  # fmt: skip
    return figure


# Chapter III.11's five-token episode: score 1.0 at the end, beta 0.1, the value guesses.
PPO_LOGP_POLICY = (-1.2, -0.4, -2.0, -0.7, -0.1)
PPO_LOGP_REFERENCE = (-1.5, -0.6, -1.8, -0.9, -0.3)
PPO_VALUES = (0.5, 0.6, 0.4, 0.7, 0.9)


def ppo_gae_diagram() -> Figure:
    """Per-token rewards (KL penalty, score at the end), a value model's V(s_t), the TD
    errors and GAE's advantages accumulated from the end; GRPO's one advantage per response
    beside it."""
    figure, ax = canvas(11, 5.4, SCALE)
    rewards = ppo_rlhf.kl_shaped_rewards(1.0, PPO_LOGP_POLICY, PPO_LOGP_REFERENCE, 0.1)
    result = ppo_rlhf.gae(rewards, list(PPO_VALUES), gamma=1.0, lam=0.95)
    rows = (("value model V(s_t)", list(PPO_VALUES), COLOURS["verify"]),
            ("reward r_t", rewards.tolist(), COLOURS["sample"]),
            ("TD error \u03b4_t", result["deltas"].tolist(), "#ffffff"),
            ("GAE advantage \u00c2_t", result["advantages"].tolist(), COLOURS["advantage"]))  # fmt: skip
    for t in range(len(PPO_VALUES)):
        ax.text(2.85 + 1.18 * t, 4.45, f"token {t}", ha="center", fontsize=9.5, weight="bold")
    for r, (label, values, colour) in enumerate(rows):
        y = 3.85 - 0.72 * r
        ax.text(0.15, y, label, fontsize=9, va="center")
        for t, value in enumerate(values):
            chip(ax, (2.85 + 1.18 * t, y), f"{value:+.3f}", colour, ChipLook(0.95, 0.4, 9))
    for t in range(len(PPO_VALUES) - 1, 0, -1):  # GAE runs from the last token back
        start, end = (2.85 + 1.18 * t - 0.1, 1.46), (2.85 + 1.18 * (t - 1) + 0.1, 1.46)
        arrow(
            ax,
            start,
            end,
            "\u00d7 \u03b3\u03bb",
            ArrowLook(curve=-0.4, text_offset=(0, -0.4)),
            fontsize=8.5,
        )
    note(ax, (0.15, 0.55), r"$\delta_t = r_t + \gamma\,V(s_{t+1}) - V(s_t)$,   "
         r"$\hat A_t = \delta_t + \gamma\lambda\,\hat A_{t+1}$   ($\gamma = 1$, "
         r"$\lambda = 0.95$; $V = 0$ after the last token)" "\n"
         r"$r_t = -\beta \log(\pi_\theta / \pi_\mathrm{ref})$ at each token ($\beta = 0.1$), "
         "plus the reward model's score 1.0 at the last", size=9.5)  # fmt: skip
    box(ax, (9.7, 2.75), (2.5, 2.5), "GRPO instead", "no value model: every\ntoken of "
        "response g\ngets the same\nA_g = (r_g \u2212 mean) / std\nfrom its group of G\n"
        "answers to one prompt", BoxLook(COLOURS["update"], 10.5))  # fmt: skip
    return figure
