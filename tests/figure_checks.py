"""Checks every book figure must pass (import with `from figure_checks import`): it is drawn
for the book's column, its text is readable there, and no title or label is cut off."""

from __future__ import annotations

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text

# notebook.show saves at 90 dpi: 7.5 in is 675 px, under the 752 px column, so the figure is
# shown at its own size and 9 pt text is 11 px on the page
COLUMN_INCHES = 7.5
SMALLEST_POINTS = 9.0


def assert_fits_the_column(figure: Figure) -> None:
    assert figure.get_figwidth() <= COLUMN_INCHES + 1e-9, "wider than the book's column"
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    renderer = canvas.get_renderer()
    page = figure.bbox
    for text in _drawn_texts(figure):
        assert text.get_fontsize() >= SMALLEST_POINTS, f"{text.get_text()!r} is too small"
        box = text.get_window_extent(renderer)
        inside = (
            box.x0 >= page.x0 - 1
            and box.x1 <= page.x1 + 1
            and box.y0 >= page.y0 - 1
            and box.y1 <= page.y1 + 1
        )
        assert inside, f"{text.get_text()!r} is cut off by the figure's edge"
    for ax in figure.axes:
        assert ax.get_title(), "every panel has a title"


def _drawn_texts(figure: Figure) -> list[Text]:
    """Titles, labels, legends, annotations and the tick labels inside the axes' limits
    (matplotlib keeps labels of ticks beyond the limits, which it does not draw)."""
    texts = list(figure.texts)
    for ax in figure.axes:
        texts += [ax.title, ax._left_title, ax._right_title, ax.xaxis.label, ax.yaxis.label]
        texts += list(ax.texts)
        if ax.get_legend() is not None:
            texts += list(ax.get_legend().get_texts())
        for axis in (ax.xaxis, ax.yaxis):
            low, high = sorted(axis.get_view_interval())
            texts += [
                tick.label1
                for tick in axis.get_major_ticks()
                if low - 1e-12 <= tick.get_loc() <= high + 1e-12
            ]
    return [t for t in texts if t.get_visible() and t.get_text().strip()]
