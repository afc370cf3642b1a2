"""Rewrite every chapter's Colab cell (tag "colab") from verifiable_grpo.book.colab, its source
and its metadata, in the jupytext source (.py) and in the paired notebook (.ipynb), keeping
every other cell and every output as it is: the cell does nothing off Colab, so its outputs do not change and the
notebooks need no re-execution.

    python scripts/update_colab_cells.py
"""

from __future__ import annotations

import json
import re

from verifiable_grpo.book.colab import setup_cell_metadata, setup_cell_source
from verifiable_grpo.core.config import repo_root

CELL = re.compile(r'(# %% tags=\["colab"[^\n]*\n)(.*?)(\n\n# %%)', re.S)


def cell_header() -> str:
    """The jupytext percent line of the Colab cell, its metadata written as jupytext does."""
    metadata = setup_cell_metadata()
    extra = " ".join(
        f"{key}={json.dumps(value, ensure_ascii=False)}"
        for key, value in metadata.items()
        if key != "tags"
    )
    return f"# %% tags={json.dumps(metadata['tags'])} {extra}\n"


def update_source(path) -> bool:
    text = path.read_text()
    new = setup_cell_source(path.parent.name)
    updated, count = CELL.subn(lambda m: cell_header() + new + m.group(3), text)
    if count != 1:
        raise ValueError(f"{path}: expected one Colab cell, found {count}")
    path.write_text(updated)
    return updated != text


def update_notebook(path) -> bool:
    raw = path.read_text()
    notebook = json.loads(raw)
    lines = setup_cell_source(path.parent.name).splitlines(keepends=True)
    cells = [c for c in notebook["cells"] if "colab" in c["metadata"].get("tags", [])]
    if len(cells) != 1:
        raise ValueError(f"{path}: expected one Colab cell, found {len(cells)}")
    cells[0]["source"] = lines
    cells[0]["metadata"] = {**cells[0]["metadata"], **setup_cell_metadata()}
    text = json.dumps(notebook, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    path.write_text(text)
    return text != raw


def main() -> int:
    changed = []
    for source in sorted((repo_root() / "notebooks").glob("part*/*.py")):
        if update_source(source):
            changed.append(source.name)
        paired = source.with_suffix(".ipynb")
        if paired.is_file() and update_notebook(paired):
            changed.append(paired.name)
    print(f"{len(changed)} file(s) changed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
