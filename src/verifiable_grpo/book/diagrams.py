"""Diagrams drawn by code (matplotlib boxes and arrows), saved as images the book shows.

DIAGRAMS names every diagram, the function that draws it and where its PNG lives under
book/images/. `python -m verifiable_grpo.book.diagrams` regenerates them all. The PNGs are
written without a timestamp, so the same code and matplotlib give the same pixels:
tests/book/test_diagrams.py redraws each one into a temporary folder and checks that the
committed image is current.
"""

from __future__ import annotations

from pathlib import Path

from matplotlib.figure import Figure

from verifiable_grpo.book import diagrams_beyond, diagrams_part1, diagrams_runs
from verifiable_grpo.book.diagram_shapes import SCALE, ArrowLook, BoxLook
from verifiable_grpo.book.diagram_shapes import arrow as _arrow
from verifiable_grpo.book.diagram_shapes import box as _box
from verifiable_grpo.book.diagram_shapes import canvas as _canvas
from verifiable_grpo.book.figure_checks import SMALLEST_TEXT_KEY, smallest_text_points
from verifiable_grpo.core.config import repo_root

IMAGES = Path("book") / "images"  # under the repository root
DPI = 110
GRPO_LOOP_IMAGE = IMAGES / "grpo_loop.png"

# (title, detail) of each stage of one GRPO iteration, in the order they run.
LOOP_STAGES = (
    ("P prompts", "drawn from the\ntraining split"),
    ("sample G responses", "per prompt, temperature 1;\nold log-probs captured"),
    ("verify", "the program scores\neach response: 1 or 0"),
    ("group advantages", "A = (r \u2212 group mean)\n/ (group std + \u03b4)"),
    ("2 clipped updates", "\u2212min(\u03c1A, clip(\u03c1)A)\n+ \u03b2 \u00b7 exact KL"),
)
STAGE_COLOURS = ("#e8eef7", "#e8f4ea", "#fdf3e1", "#f3e8f7", "#fbe7e6")


def grpo_loop_diagram() -> Figure:
    """One GRPO iteration as a cycle for the column: prompts, sampling and verifying on the
    top row; advantages and the updates back along the bottom, the frozen reference under
    the updates, and the way back to new prompts."""
    figure, ax = _canvas(11, 6.0, SCALE)
    size = (3.1, 1.3)
    top, bottom = 4.75, 2.45
    centres = [(1.75, top), (5.5, top), (9.25, top), (9.25, bottom), (5.5, bottom)]
    for (title, detail), centre, colour in zip(LOOP_STAGES, centres, STAGE_COLOURS):
        _box(ax, centre, size, title, detail, BoxLook(colour))
    half_w, half_h = size[0] / 2, size[1] / 2
    for a, b in zip(centres[:2], centres[1:3]):  # along the top row
        _arrow(ax, (a[0] + half_w, a[1]), (b[0] - half_w, b[1]))
    verify, advantages, update = centres[2], centres[3], centres[4]
    _arrow(ax, (verify[0], verify[1] - half_h), (advantages[0], advantages[1] + half_h))
    _arrow(ax, (advantages[0] - half_w, advantages[1]), (update[0] + half_w, update[1]))
    # The old log-probs travel from the sampler to both updates unchanged.
    sample = centres[1]
    _arrow(ax, (sample[0], sample[1] - half_h), (update[0], update[1] + half_h))
    ax.text(sample[0] + 0.15, (top + bottom) / 2, "the same old log-probs\nfor update 1 and 2",
            ha="left", va="center", fontsize=8.5, style="italic")  # fmt: skip
    # The frozen reference: a second copy of the warm start, only read by the KL term.
    reference = (update[0], 0.6)
    _box(ax, reference, (3.1, 0.75), "frozen reference", "the warm start, no gradient",
         BoxLook("#eeeeee"))  # fmt: skip
    _arrow(ax, (reference[0], reference[1] + 0.375), (update[0], update[1] - half_h))
    ax.text(update[0] + 0.15, 1.4, "logits for the KL", ha="left", va="center", fontsize=8.5,
            style="italic")  # fmt: skip
    # Back to the start: new prompts, sampled by the updated policy.
    first = centres[0]
    _arrow(ax, (update[0] - half_w, update[1]), (first[0], first[1] - half_h), "",
           ArrowLook(curve=-0.3))  # fmt: skip
    ax.text(0.2, 2.2, "next iteration:\nnew prompts, sampled\nby the updated policy",
            ha="left", va="center", fontsize=8.5, style="italic")  # fmt: skip
    return figure


# name -> the function that draws it; the image is book/images/<name>.png.
DIAGRAMS = {
    "grpo_loop": grpo_loop_diagram,
    "group_advantages": diagrams_part1.group_advantages_diagram,
    "clip_regions": diagrams_part1.clip_regions_diagram,
    "exact_kl_prefixes": diagrams_part1.exact_kl_prefixes_diagram,
    "three_roles": diagrams_runs.three_roles_diagram,
    "resume": diagrams_runs.resume_diagram,
    "evaluation_design": diagrams_runs.evaluation_design_diagram,
    "family_axes": diagrams_beyond.family_axes_diagram,
    "dpo_pair": diagrams_beyond.dpo_pair_diagram,
    "lora_adapters": diagrams_beyond.lora_adapters_diagram,
    "ppo_gae": diagrams_beyond.ppo_gae_diagram,
}


def save_figure(figure: Figure, path: str | Path) -> Path:
    """Write a PNG with no timestamp or software version in its metadata."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    smallest = f"{smallest_text_points(figure):g}"
    figure.savefig(path, dpi=DPI, metadata={"Software": None, SMALLEST_TEXT_KEY: smallest})
    return path


def save_diagrams(folder: str | Path | None = None, names=None) -> list[Path]:
    """Draw the named diagrams (default: all) into folder (default: book/images)."""
    folder = repo_root() / IMAGES if folder is None else Path(folder)
    unknown = set(names or ()) - set(DIAGRAMS)
    if unknown:
        raise ValueError(f"unknown diagrams {sorted(unknown)}: use some of {sorted(DIAGRAMS)}")
    return [save_figure(DIAGRAMS[n](), folder / f"{n}.png") for n in names or DIAGRAMS]


def save_grpo_loop_diagram(path: str | Path | None = None) -> Path:
    """Draw the loop diagram and write it as a PNG; by default over the committed image."""
    return save_figure(grpo_loop_diagram(), repo_root() / GRPO_LOOP_IMAGE if path is None else path)


if __name__ == "__main__":
    for written in save_diagrams():
        print(written)
