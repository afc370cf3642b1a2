"""The book never shows a reader the project's internal name for a specification ("seed
000", "seed 004"): the chapters call them the practical and Part III's labs. Checked on the
pages, the chapters, the live widgets' labels and the Python widgets' options."""

from __future__ import annotations

import re

from verifiable_grpo.core.config import repo_root

INTERNAL = re.compile(r"\bseed\s+00\d\b", re.I)


def test_no_internal_specification_names_reach_the_reader():
    root = repo_root()
    files = [root / "README.md", *root.glob("book/*.md"), *root.glob("book/_live/*.js")]
    files += [*root.glob("notebooks/part*/*.py"), *root.glob("notebooks/part*/*.ipynb")]
    files += [root / "src/verifiable_grpo/book/widgets.py"]
    found = []
    for path in files:
        text = path.read_text()
        if path.name == "widgets.py":  # only what a widget displays: its string literals
            text = " ".join(re.findall(r"\(\"([^\"]*)\", \d\)", text))
        found += [f"{path.relative_to(root)}: {m.group(0)}" for m in INTERNAL.finditer(text)]
    assert not found, f"internal specification names shown to readers: {found}"
