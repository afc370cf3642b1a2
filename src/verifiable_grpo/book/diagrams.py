"""Diagrams drawn by code (matplotlib boxes and arrows), saved as images the book shows.

The committed PNG is regenerated with `python -m verifiable_grpo.book.diagrams` (or
save_grpo_loop_diagram); a test checks that drawing and saving work. The bytes depend on
the machine's fonts and matplotlib version, so the image is never compared byte for byte.
"""

from __future__ import annotations

from pathlib import Path

from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

from verifiable_grpo.core.config import repo_root

GRPO_LOOP_IMAGE = Path("book") / "images" / "grpo_loop.png"  # under the repository root

# (title, detail) of each stage of one GRPO iteration, left to right.
LOOP_STAGES = (
    ("P prompts", "drawn from the\ntraining split"),
    ("sample G responses", "per prompt, temperature 1;\nold log-probs captured"),
    ("verify", "the program scores\neach response: 1 or 0"),
    ("group advantages", "A = (r \u2212 group mean)\n/ (group std + \u03b5)"),
    ("2 clipped updates", "\u2212min(\u03c1A, clip(\u03c1)A)\n+ \u03b2 \u00b7 exact KL"),
)
STAGE_COLOURS = ("#e8eef7", "#e8f4ea", "#fdf3e1", "#f3e8f7", "#fbe7e6")


def _box(ax, centre, width, height, title, detail, colour):
    x, y = centre
    ax.add_patch(
        FancyBboxPatch(
            (x - width / 2, y - height / 2),
            width,
            height,
            boxstyle="round,pad=0.02,rounding_size=0.08",
            facecolor=colour,
            edgecolor="#333333",
            linewidth=1.2,
        )
    )
    ax.text(x, y + height * 0.2, title, ha="center", va="center", fontsize=10.5, weight="bold")
    ax.text(x, y - height * 0.17, detail, ha="center", va="center", fontsize=8.5, linespacing=1.3)


def _arrow(ax, start, end, text="", curve=0.0, text_offset=(0.0, 0.12), style="-|>"):
    ax.add_patch(
        FancyArrowPatch(
            start,
            end,
            arrowstyle=style,
            mutation_scale=14,
            linewidth=1.3,
            color="#333333",
            connectionstyle=f"arc3,rad={curve}",
            shrinkA=2,
            shrinkB=2,
        )
    )
    if text:
        middle = (
            (start[0] + end[0]) / 2 + text_offset[0],
            (start[1] + end[1]) / 2 + text_offset[1],
        )
        ax.text(*middle, text, ha="center", va="center", fontsize=8.5, style="italic")


def grpo_loop_diagram() -> Figure:
    """One GRPO iteration as boxes and arrows, with the frozen reference and the way back."""
    figure = Figure(figsize=(12, 4.2), layout="constrained")
    ax = figure.add_subplot()
    ax.set(xlim=(0, 12), ylim=(0.15, 4.2))
    ax.axis("off")
    width, height, row = 2.0, 1.05, 2.05
    centres = [(1.2 + 2.4 * i, row) for i in range(len(LOOP_STAGES))]
    for (title, detail), centre, colour in zip(LOOP_STAGES, centres, STAGE_COLOURS):
        _box(ax, centre, width, height, title, detail, colour)
    for a, b in zip(centres, centres[1:]):
        _arrow(ax, (a[0] + width / 2, a[1]), (b[0] - width / 2, b[1]))
    # The frozen reference: a second copy of the warm start, only read by the KL term.
    update = centres[-1]
    reference = (update[0], 3.75)
    _box(ax, reference, width, 0.62, "frozen reference", "the warm start, no gradient", "#eeeeee")
    _arrow(
        ax,
        (reference[0], reference[1] - 0.31),
        (update[0], update[1] + height / 2),
        "logits for the KL",
        text_offset=(-0.7, 0.0),
    )
    # The old log-probs travel from the sampler to both updates unchanged.
    sample = centres[1]
    _arrow(
        ax,
        (sample[0] + 0.4, sample[1] + height / 2),
        (update[0] - 0.5, update[1] + height / 2),
        "the same old log-probs for update 1 and update 2",
        curve=-0.2,
        text_offset=(0, 0.78),
    )
    # Back to the start: new prompts, sampled by the updated policy.
    first = centres[0]
    _arrow(
        ax,
        (update[0], update[1] - height / 2),
        (first[0], first[1] - height / 2),
        "next iteration: new prompts, sampled by the updated policy",
        curve=-0.15,
        text_offset=(0, -0.82),
    )
    return figure


def save_grpo_loop_diagram(path: str | Path | None = None) -> Path:
    """Draw the loop diagram and write it as a PNG (no timestamp in its metadata); by
    default over the committed image."""
    path = repo_root() / GRPO_LOOP_IMAGE if path is None else Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    grpo_loop_diagram().savefig(path, dpi=110, metadata={"Software": None})
    return path


if __name__ == "__main__":
    print(save_grpo_loop_diagram())
