"""Can a reader read a figure in the built book? Measured on the matplotlib Figure itself.

The book's text column is COLUMN_PX wide at a 1280 px window; an image wider than that is
scaled down to fit, and its text with it. A text of s points in a figure saved at d dpi is
s * d / 72 px in the image, times the display scale. The smallest text of every figure the
package saves is written into the PNG (SMALLEST_TEXT_KEY), so the browser gate
(tests/test_book.py) can recompute its displayed size from the width the page gives it.
"""

from __future__ import annotations

from matplotlib.figure import Figure
from matplotlib.text import Text

COLUMN_PX = 676  # the article's content width at a 1280 px window (sphinx-book-theme)
READABLE_PX = 11.0  # the smallest text a reader reads without zooming
SMALLEST_TEXT_KEY = "vg-smallest-text-pt"  # a PNG text chunk


def shown_texts(figure: Figure) -> list[Text]:
    """Every visible, non-empty text of the figure: titles, labels, ticks, legends, notes."""
    return [
        t
        for t in figure.findobj(Text)
        if t.get_visible() and t.get_text().strip() and t.figure is not None
    ]


def smallest_text_points(figure: Figure) -> float:
    """The smallest font size in the figure as drawn (tick labels exist only once drawn)."""
    _renderer(figure)
    return min(t.get_fontsize() for t in shown_texts(figure))


def displayed_px(points: float, dpi: float, pixel_width: float, shown_width: float) -> float:
    """The height in CSS px of a points-sized text in an image pixel_width px wide, shown
    shown_width px wide."""
    return points * dpi / 72 * shown_width / pixel_width


def smallest_displayed_px(figure: Figure, dpi: float, column: float = COLUMN_PX) -> float:
    """The smallest text's size in px when the figure, saved at dpi, sits in the column."""
    pixel_width = figure.get_figwidth() * dpi
    return displayed_px(smallest_text_points(figure), dpi, pixel_width, min(pixel_width, column))


def _renderer(figure: Figure):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(figure)  # a bare Figure has no renderer of its own
    canvas.draw()  # the final layout: constrained layout runs at draw time
    return canvas.get_renderer()


def layout_problems(figure: Figure, dpi: float) -> list[str]:
    """Text too small at the column's width, text cut off at the figure's edge, and titles
    that overlap another panel or another title. Empty when the figure reads cleanly."""
    figure.set_dpi(dpi)
    renderer = _renderer(figure)
    problems = []
    size = smallest_displayed_px(figure, dpi)
    if size < READABLE_PX - 1e-9:
        problems.append(
            f"smallest text {smallest_text_points(figure):g} pt is {size:.1f} px at the "
            f"column's width (under {READABLE_PX:g} px)"
        )
    # What savefig draws (only ticks inside the view, the legends, the notes) must lie in
    # the frame: beyond it, text is cut off.
    frame, drawn = figure.bbox, figure.get_tightbbox(renderer).transformed(figure.dpi_scale_trans)
    if (
        drawn.x0 < frame.x0 - 1
        or drawn.y0 < frame.y0 - 1
        or drawn.x1 > frame.x1 + 1
        or (drawn.y1 > frame.y1 + 1)
    ):
        problems.append(f"something is cut off at the figure's edge: drawn {drawn.bounds}")
    titles = [ax.title for ax in figure.axes if ax.title.get_text().strip()]
    if figure._suptitle is not None and figure._suptitle.get_text().strip():
        titles.append(figure._suptitle)
    for index, title in enumerate(titles):
        box = title.get_window_extent(renderer)
        for ax in figure.axes:
            if ax.get_visible() and ax.axison and box.overlaps(ax.bbox):
                problems.append(f"title {title.get_text()[:50]!r} overlaps a panel")
                break
        for other in titles[index + 1 :]:
            if box.overlaps(other.get_window_extent(renderer)):
                problems.append(
                    f"titles {title.get_text()[:40]!r} and {other.get_text()[:40]!r} overlap"
                )
    return problems
