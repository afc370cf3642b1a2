"""The pieces every diagram is drawn with: a canvas in inches, rounded boxes, arrows, chips.

One unit of the canvas is SCALE inches of the saved figure, so sizes read the same in
every diagram. matplotlib's Figure is used directly (no pyplot: no global state, no backend).
"""

from __future__ import annotations

from dataclasses import dataclass

from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

INK = "#333333"
# One colour per role, the same in every diagram.
COLOURS = {
    "prompt": "#e8eef7",
    "sample": "#e8f4ea",
    "verify": "#fdf3e1",
    "advantage": "#f3e8f7",
    "update": "#fbe7e6",
    "reference": "#eeeeee",
    "old": "#fdf3e1",
    "current": "#e3edf9",
    "good": "#d9f0d9",
    "bad": "#f8dcdc",
    "neutral": "#f2f2f2",
}
GOOD, BAD = "#2ca02c", "#d62728"


# Drawn for the book's text column: a canvas of width units is a figure of SCALE * width
# inches, while text keeps its size in points. An 11-unit diagram is 7.0 inches, shown in
# the column's 676 px: an 8.5 pt text is then 11.3 px, above the 11 px a reader reads.
SCALE = 0.64
SMALLEST_POINTS = 8.5


def canvas(width: float, height: float, scale: float = 1.0):
    """(figure, axes) of width x height units (`scale` inches each: SCALE for a diagram
    drawn for the column), no frame."""
    figure = Figure(figsize=(width * scale, height * scale))
    ax = figure.add_axes((0, 0, 1, 1))
    ax.set(xlim=(0, width), ylim=(0, height))
    ax.axis("off")
    return figure, ax


@dataclass(frozen=True)
class BoxLook:
    """A box's fill, title font size (the detail is 2 points smaller) and edge colour."""

    colour: str = "#ffffff"
    size: float = 10.5
    edge: str = INK


@dataclass(frozen=True)
class ArrowLook:
    """An arrow's bend (matplotlib's arc3 rad), its label's offset from the middle, and
    its head style."""

    curve: float = 0.0
    text_offset: tuple[float, float] = (0.0, 0.12)
    style: str = "-|>"


@dataclass(frozen=True)
class ChipLook:
    """A chip's width and height (inches), font size and font family."""

    width: float = 0.9
    height: float = 0.36
    size: float = 9
    family: str | None = None


def box(ax, centre, extent, title, detail="", look: BoxLook = BoxLook()):
    """A rounded box of extent (width, height) with a bold title and a smaller detail
    under it."""
    x, y = centre
    (width, height), colour, size, edge = extent, look.colour, look.size, look.edge
    ax.add_patch(
        FancyBboxPatch(
            (x - width / 2, y - height / 2),
            width,
            height,
            boxstyle="round,pad=0.02,rounding_size=0.08",
            facecolor=colour,
            edgecolor=edge,
            linewidth=1.2,
        )
    )
    if not detail:
        ax.text(x, y, title, ha="center", va="center", fontsize=size, weight="bold")
        return
    ax.text(x, y + height * 0.2, title, ha="center", va="center", fontsize=size, weight="bold")
    ax.text(
        x,
        y - height * 0.17,
        detail,
        ha="center",
        va="center",
        fontsize=max(size - 2, SMALLEST_POINTS),
        linespacing=1.3,
    )


def arrow(ax, start, end, text="", look: ArrowLook = ArrowLook(), **text_kw):
    """An arrow from start to end, optionally bent (look.curve) and labelled at its middle."""
    curve, text_offset, style = look.curve, look.text_offset, look.style
    ax.add_patch(
        FancyArrowPatch(
            start,
            end,
            arrowstyle=style,
            mutation_scale=14,
            linewidth=1.3,
            color=INK,
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
        options = {"ha": "center", "va": "center", "fontsize": 8.5, "style": "italic"} | text_kw
        ax.text(*middle, text, **options)


def chip(ax, centre, text, colour="#ffffff", look: ChipLook = ChipLook()):
    """A small square-cornered label: a token, a reward, a matrix cell."""
    x, y = centre
    width, height, size, family = look.width, look.height, look.size, look.family
    ax.add_patch(
        FancyBboxPatch(
            (x - width / 2, y - height / 2),
            width,
            height,
            boxstyle="square,pad=0",
            facecolor=colour,
            edgecolor=INK,
            linewidth=0.9,
        )
    )
    ax.text(x, y, text, ha="center", va="center", fontsize=size, family=family)


def title(ax, xy, text, size=12):
    ax.text(*xy, text, ha="left", va="center", fontsize=size, weight="bold")


def note(ax, xy, text, size=9, **kw):
    options = {"ha": "left", "va": "center", "fontsize": size, "linespacing": 1.35} | kw
    ax.text(*xy, text, **options)
