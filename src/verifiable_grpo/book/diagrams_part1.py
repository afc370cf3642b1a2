"""Diagrams of Part I's mechanisms: a group and its advantages, the clip's six regions, the
exact KL at visited prefixes, the three policies, exact resume and the evaluation design.

Where a diagram shows numbers they are computed here by the package's own functions
(group_advantages, clipping_curves, exact_prefix_kl), so a picture cannot drift from the code.
"""

from __future__ import annotations

import textwrap

import numpy as np
import torch
from matplotlib.figure import Figure

from verifiable_grpo.book.diagram_shapes import (
    COLOURS,
    GOOD,
    SCALE,
    BoxLook,
    ChipLook,
    arrow,
    box,
    canvas,
    chip,
    note,
)
from verifiable_grpo.book.live_widgets import CLIP_REGIONS
from verifiable_grpo.book.widgets import clipping_curves
from verifiable_grpo.training.losses import exact_prefix_kl, group_advantages

# The group drawn in chapter 2's diagram: (what the response says, its reward).
GROUP = (
    ('{"final_stock": 42}', 1.0),
    ('{"final_stock": 17}', 0.0),
    ('{"final_stock": 42}', 1.0),
    ("no JSON: cut off", 0.0),
)


def group_advantages_diagram() -> Figure:
    """One prompt, G = 4 responses, their rewards, the group's mean and std, the advantages."""
    figure, ax = canvas(11, 4.7, SCALE)
    rewards = torch.tensor([[r for _, r in GROUP]], dtype=torch.float64)
    advantages, mean, std = group_advantages(rewards, epsilon=1e-8)
    rows = [3.45, 2.65, 1.85, 1.05]
    heads = ((1.1, "one prompt"), (3.75, "G = 4 responses"), (5.85, "verifier"),
             (7.65, "statistics"), (9.85, "advantage A"))  # fmt: skip
    for x, head in heads:
        ax.text(x, 4.3, head, ha="center", fontsize=10, weight="bold", color="#555555")
    box(
        ax,
        (1.1, 2.25),
        (1.7, 1.2),
        "prompt x",
        "a StockArithmetic\nproblem",
        BoxLook(COLOURS["prompt"]),
    )
    for y, (text, reward), a in zip(rows, GROUP, advantages[0].tolist()):
        arrow(ax, (1.95, 2.25), (2.55, y))
        box(ax, (3.75, y), (2.4, 0.6), "", "", BoxLook(COLOURS["sample"]))
        ax.text(3.75, y, text, ha="center", va="center", fontsize=9, family="monospace")
        arrow(ax, (4.95, y), (5.4, y))
        chip(ax, (5.85, y), f"r = {reward:g}", COLOURS["good"] if reward else COLOURS["bad"])
        chip(
            ax,
            (9.85, y),
            f"A = {a:+.2f}",
            COLOURS["good"] if a > 0 else COLOURS["bad"],
            ChipLook(1.2),
        )
        ax.plot([6.3, 6.55], [y, y], color="#333333", linewidth=1.1)
        arrow(ax, (8.6, 2.25), (9.25, y))
    ax.plot([6.55, 6.55], [rows[-1], rows[0]], color="#333333", linewidth=1.1)
    arrow(ax, (6.55, 2.25), (6.75, 2.25))
    box(ax, (7.65, 2.25), (1.85, 1.55), "mean and std",
        f"mean = {float(mean):g}\nstd = {float(std):g}\n(population std)", BoxLook(COLOURS["advantage"]))  # fmt: skip
    note(ax, (7.7, 0.45), "A = (r \u2212 mean) / (std + \u03b4), \u03b4 = 10\u207b\u2078",
         size=10, ha="center")  # fmt: skip
    note(ax, (0.25, 0.45), "four right answers (or four wrong):\nstd = 0, every A = 0 exactly: "
         "no signal", size=9, color="#555555")  # fmt: skip
    return figure


def _region_texts(ax, advantage: float, low: float, high: float, top: float) -> None:
    sign = "A > 0" if advantage > 0 else "A < 0"
    for where, (start, stop) in (("below", (0.5, low)), ("inside", (low, high)),
                                 ("above", (high, 1.5))):  # fmt: skip
        kept, text = CLIP_REGIONS[(sign, where)]
        ax.axvspan(start, stop, color=GOOD if kept else "#ff7f0e", alpha=0.13, linewidth=0)
        label = ("gradient kept" if kept else "no gradient") + "\n" + textwrap.fill(text, 24)
        ax.text((start + stop) / 2, top, label, ha="center", va="top", fontsize=8.5,
                color="#1e6b1e" if kept else "#a04000")  # fmt: skip


def clip_regions_diagram() -> Figure:
    """The objective min(rho A, clip(rho) A) for A > 0 and A < 0, with the three ranges of
    the ratio each: six regions, two of which remove the gradient."""
    figure = Figure(figsize=(7.0, 6.6), layout="constrained")  # for the column
    axes = figure.subplots(2, 1, sharex=True)
    ratios = np.linspace(0.5, 1.5, 401)
    for ax, advantage in zip(axes, (1.0, -1.0)):
        curves = clipping_curves(advantage, 0.2, ratios=ratios)
        low, high = curves["interval"]
        ax.plot(ratios, curves["unclipped"], "--", color="grey", label="\u03c1A (unclipped)")
        ax.plot(ratios, curves["objective"], color="#1f77b4", linewidth=2.2,
                label="min(\u03c1A, clip(\u03c1, 1\u2212\u03b5, 1+\u03b5)A)")  # fmt: skip
        ax.set(xlim=(0.5, 1.5), ylim=(-0.6, 2.6) if advantage > 0 else (-2.6, 0.6))
        _region_texts(ax, advantage, low, high, ax.get_ylim()[1] - 0.08)
        for bound in (low, high):
            ax.axvline(bound, color="black", linewidth=0.8, linestyle=":")
        kind = "a better-than-average response" if advantage > 0 else "a worse one"
        ax.set_title(f"A = {advantage:+g} ({kind})", loc="left", fontsize=11)
        ax.set_ylabel("objective of one token")
        ax.legend(loc="lower right" if advantage > 0 else "lower left", fontsize=8.5)
    axes[1].set_xlabel("ratio \u03c1 = \u03c0\u03b8 / \u03c0old of the token")
    # The interval's ends are named on the ratio axis itself, where no legend can cover them.
    ticks = {0.6: "0.6", 0.8: "1 \u2212 \u03b5\n= 0.8", 1.0: "1.0", 1.2: "1 + \u03b5\n= 1.2",
             1.4: "1.4"}  # fmt: skip
    axes[1].set_xticks(list(ticks), list(ticks.values()))
    return figure


# Chapter 4's diagram: a response of five tokens over a toy vocabulary of six entries. At
# each prefix the policy and the reference give a whole distribution; the JSON scaffolding
# is near-certain for both, the digits are not.
KL_TOKENS = ('{"final_stock":', " 4", "2", "}", "<eos>")
KL_EMITTED = (0, 1, 2, 3, 4)  # which of the six entries each position emitted
KL_LOGITS_REFERENCE = (
    (5.0, 0.5, 0.2, 0.0, 0.1, 0.3),
    (0.1, 1.2, 1.6, 0.9, 0.2, 0.0),
    (0.2, 0.4, 1.1, 1.3, 0.8, 0.1),
    (0.0, 0.3, 0.1, 4.5, 0.2, 0.4),
    (0.2, 0.1, 0.0, 0.3, 4.0, 1.0),
)
KL_LOGITS_POLICY = (
    (5.4, 0.4, 0.2, 0.0, 0.1, 0.2),
    (0.1, 2.4, 1.0, 0.6, 0.2, 0.0),
    (0.2, 0.3, 2.3, 0.9, 0.6, 0.1),
    (0.0, 0.3, 0.1, 4.8, 0.2, 0.4),
    (0.2, 0.1, 0.0, 0.3, 4.6, 0.6),
)


def _kl_panel(figure, rect, policy, reference, emitted: int) -> None:
    """One prefix: the two distributions over the toy vocabulary, the emitted entry outlined."""
    ax = figure.add_axes(rect)
    positions = np.arange(len(policy))
    ax.bar(positions - 0.2, policy, width=0.4, color="#1f77b4", label="\u03c0\u03b8 (policy)")
    ax.bar(positions + 0.2, reference, width=0.4, color="#aaaaaa", label="\u03c0ref")
    ax.bar(emitted - 0.2, policy[emitted], width=0.4, fill=False, edgecolor="black", linewidth=1.8)
    ax.set(ylim=(0, 1.05), xticks=[], yticks=[0, 0.5, 1])
    ax.tick_params(labelsize=8.5)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return ax


def exact_kl_prefixes_diagram() -> Figure:
    """A sampled response, token by token: at every visited prefix the whole distribution of
    the policy against the reference's, the exact KL there, and how the loss reduces them."""
    width, height = 11.0, 5.0
    figure, ax = canvas(width, height, SCALE)
    policy = torch.tensor(KL_LOGITS_POLICY, dtype=torch.float64)
    reference = torch.tensor(KL_LOGITS_REFERENCE, dtype=torch.float64)
    per_prefix = exact_prefix_kl(policy, reference).tolist()
    p_policy, p_reference = policy.softmax(-1).numpy(), reference.softmax(-1).numpy()
    chip(ax, (0.75, 4.45), "prompt x", COLOURS["prompt"], ChipLook(1.1, 0.42, 9.5))
    for t, token in enumerate(KL_TOKENS):
        x = 2.45 + 1.9 * t
        chip(ax, (x, 4.45), token, COLOURS["sample"], ChipLook(1.75, 0.42, 9, family="monospace"))
        ax.text(x, 3.95, f"at prefix (x, y<{t + 1})", ha="center", fontsize=8.5,
                color="#555555")  # fmt: skip
        panel = _kl_panel(figure, ((x - 0.62) / width, 1.85 / height, 1.35 / width, 1.75 / height),
                          p_policy[t], p_reference[t], KL_EMITTED[t])  # fmt: skip
        if t == 0:  # to the left of the first panel, where it covers no bar
            panel.legend(fontsize=8.5, loc="upper left", bbox_to_anchor=(-1.3, 0.45), frameon=False)
        ax.text(x, 1.45, f"KL = {per_prefix[t]:.3f}", ha="center", fontsize=9.5, weight="bold")
    note(ax, (0.15, 3.15), "the whole\nvocabulary\nat each\nprefix", size=8.5, color="#555555")
    total = sum(per_prefix)
    note(ax, (0.3, 0.95), "exact KL at prefix t = \u03a3 over every entry v of "
         "\u03c0\u03b8(v) [log \u03c0\u03b8(v) \u2212 log \u03c0ref(v)]\n(all bars, not only "
         "the outlined one that was sampled)", size=9)  # fmt: skip
    note(ax, (0.3, 0.3), f"the response's KL terms: {' + '.join(f'{k:.3f}' for k in per_prefix)}"
         f" = {total:.3f};\nthe loss adds \u03b2 \u00d7 their mean over the "
         f"{len(per_prefix)} tokens, like the clipped term", size=9)  # fmt: skip
    return figure
