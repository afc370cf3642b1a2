"""A Sphinx extension: in the built book, each diagram is a figure with a caption and a link
to its full-size image.

A chapter shows a diagram in plain Markdown, so Jupyter and Colab show it too:

    ![alt text, which may run over
    several lines](../../book/images/grpo_loop.png)

    *Figure: the caption the reader sees.*

At build time (Sphinx's source-read event, before MyST parses the page) that pair becomes a
MyST figure: the alt text on one line (MyST drops a line break inside an alt text instead of
reading it as a space: "ofthe"), the caption under the picture, and the picture a link to the
full-size PNG. Listed in _config.yml under sphinx.local_extensions.
"""

from __future__ import annotations

import json
import re

# A diagram image, a blank line, then its caption in italics.
DIAGRAM = re.compile(
    r"!\[(?P<alt>[^\]]+)\]\((?P<path>[^)\s]*images/(?P<name>[\w-]+)\.png)\)"
    r"[ \t]*\n[ \t]*\n\*(?P<caption>[^*]+)\*"
)
ENLARGE = "Select the picture to see it at full size."


def one_line(text: str) -> str:
    """Text with every run of whitespace (line breaks included) read as one space."""
    return " ".join(text.split())


def full_size_link(docname: str, name: str) -> str:
    """The built copy of book/images/<name>.png, relative to the page of docname: Sphinx
    copies every image to _images/ under the same file name."""
    return "../" * docname.count("/") + f"_images/{name}.png"


def as_figures(markdown: str, docname: str) -> str:
    """markdown with each diagram-and-caption pair turned into a MyST figure directive."""

    def figure(match: re.Match) -> str:
        return (
            f"```{{figure}} {match['path']}\n"
            f":alt: {one_line(match['alt'])}\n"
            f":target: {full_size_link(docname, match['name'])}\n"
            f":class: vg-diagram\n\n"
            f"{one_line(match['caption'])} {ENLARGE}\n"
            "```"
        )

    return DIAGRAM.sub(figure, markdown)


def notebook_as_figures(notebook_json: str, docname: str) -> str:
    """The notebook with as_figures applied to each Markdown cell."""
    notebook = json.loads(notebook_json)
    for cell in notebook.get("cells", []):
        if cell.get("cell_type") == "markdown":
            source = cell.get("source", "")
            source = source if isinstance(source, str) else "".join(source)
            cell["source"] = as_figures(source, docname)
    return json.dumps(notebook)


def _on_source_read(app, docname: str, source: list[str]) -> None:
    path = str(app.env.doc2path(docname))
    if path.endswith(".ipynb"):
        source[0] = notebook_as_figures(source[0], docname)
    elif path.endswith(".md"):
        source[0] = as_figures(source[0], docname)


def setup(app):
    app.connect("source-read", _on_source_read)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
