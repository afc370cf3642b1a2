"""Rewrite every chapter's Colab cell (tag "colab") from verifiable_grpo.book.colab, in the
jupytext source (.py) and in the paired notebook (.ipynb), keeping every other cell and every
output as it is: the cell does nothing off Colab, so its outputs do not change and the
notebooks need no re-execution.

    python scripts/update_colab_cells.py
"""
from __future__ import annotations

import json
import re

from verifiable_grpo.book.colab import setup_cell_source
from verifiable_grpo.core.config import repo_root

CELL = re.compile(r'(# %% tags=\["colab"\]\n)(.*?)(\n\n# %%)', re.S)


def update_source(path) -> bool:
    text = path.read_text()
    new = setup_cell_source(path.parent.name)
    updated, count = CELL.subn(lambda m: m.group(1) + new + m.group(3), text)
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
    text = json.dumps(notebook, indent=1, ensure_ascii=False) + "\n"
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
