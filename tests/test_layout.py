"""The package's layers import one way: core <- task <- training <- evaluation <- parts <-
book helpers <- CLI. A module never imports a layer above its own."""

from __future__ import annotations

import ast
from pathlib import Path

import verifiable_grpo

PACKAGE = Path(verifiable_grpo.__file__).parent

RANK = {
    "core": 0,
    "task": 1,
    "training": 2,
    "evaluation": 3,
    "part1": 4,
    "part2": 4,
    "part3": 4,
    "book": 5,
    "exercises": 5,
}


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "verifiable_grpo" else None


def _imports(path: Path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.level:
                raise AssertionError(f"{path}: relative import; use verifiable_grpo.<layer>")
            if node.module == "verifiable_grpo":
                yield from (f"verifiable_grpo.{a.name}" for a in node.names)
            else:
                yield node.module
        elif isinstance(node, ast.Import):
            yield from (a.name for a in node.names)


def test_every_module_sits_in_a_layer():
    loose = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert loose == ["__init__.py", "__main__.py", "cli.py"]
    assert {p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"} == set(
        RANK
    )


def test_imports_point_down_the_layers():
    wrong = []
    for layer, rank in RANK.items():
        for path in sorted((PACKAGE / layer).rglob("*.py")):
            for module in _imports(path):
                target = _layer(module)
                if target in RANK and RANK[target] > rank:
                    wrong.append(f"{layer}/{path.name} imports {module}")
    assert not wrong, "imports against the layers:\n" + "\n".join(wrong)
