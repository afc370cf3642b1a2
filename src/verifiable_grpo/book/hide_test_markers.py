"""A Sphinx extension: the book's pages do not show nbval's markers.

Cells that nbval must not compare start with a comment such as ``# NBVAL_IGNORE_OUTPUT``.
``pytest --nbval`` reads those comments from the committed notebooks, so they stay there; the
reader has no use for them, so the build drops those lines from the code it shows.
Listed in _config.yml under sphinx.extra_extensions.
"""

from __future__ import annotations

import json
import re

MARKER_LINE = re.compile(r"^\s*#\s*NBVAL_[A-Z_]+\s*$")


def strip_markers(notebook_json: str) -> str:
    """The notebook with every nbval marker line removed from its code cells' sources."""
    notebook = json.loads(notebook_json)
    for cell in notebook.get("cells", []):
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        lines = source.splitlines(keepends=True) if isinstance(source, str) else list(source)
        cell["source"] = "".join(line for line in lines if not MARKER_LINE.match(line))
    return json.dumps(notebook)


def _on_source_read(app, docname: str, source: list[str]) -> None:
    if str(app.env.doc2path(docname)).endswith(".ipynb"):
        source[0] = strip_markers(source[0])


def setup(app):
    app.connect("source-read", _on_source_read)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
