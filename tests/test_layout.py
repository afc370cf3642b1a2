"""The package's layers import one way: core <- task <- models <- training <- evaluation <-
parts <- book helpers <- CLI. A module never imports a layer above its own, and a part of the
book never imports another part: what two parts share lives in a layer below them."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

import verifiable_grpo

PACKAGE = Path(verifiable_grpo.__file__).parent

RANK = {
    "core": 0,
    "task": 1,
    "models": 2,
    "training": 3,
    "evaluation": 4,
    "part1": 5,
    "part2": 5,
    "part3": 5,
    "book": 6,
    "exercises": 6,
}
PARTS = ("part1", "part2", "part3")
# "partN/module.py imports partM.module" -> why it may; empty: no part reads another
BETWEEN_PARTS: dict[str, str] = {}


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


def _part_imports(layer: str):
    """(file, module) for every import of another part by a module of `layer`."""
    for path in sorted((PACKAGE / layer).rglob("*.py")):
        for module in _imports(path):
            target = _layer(module)
            if target in PARTS and target != layer:
                yield path.relative_to(PACKAGE).as_posix(), module


def test_no_part_imports_another():
    found = {f"{rel} imports {module}" for layer in PARTS for rel, module in _part_imports(layer)}
    unlisted = sorted(found - set(BETWEEN_PARTS))
    assert not unlisted, (
        "a part imports another part; move what they share below the parts (models/, "
        "training/, core/) or list it in BETWEEN_PARTS with the reason:\n" + "\n".join(unlisted)
    )
    assert not set(BETWEEN_PARTS) - found, "listed in BETWEEN_PARTS but no longer imported"


def test_the_part_rule_sees_a_planted_import(tmp_path, monkeypatch):
    """The rule reads imports anywhere in a module, a lazy one inside a function included."""
    planted = tmp_path / "part2"
    planted.mkdir()
    (planted / "x.py").write_text("def f():\n    from verifiable_grpo.part3 import labs\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", tmp_path)
    assert list(_part_imports("part2")) == [("part2/x.py", "verifiable_grpo.part3")]


def _readme_tree() -> list[str]:
    """The paths the README's annotated tree names, relative to the repository root."""
    readme = (PACKAGE.parents[1] / "README.md").read_text()
    block = readme.split("## Layout\n", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    paths, stack = [], []
    for line in block.splitlines()[1:]:
        match = re.match(r"^((?:[│ ]   )*)[├└]── (\S+)", line)
        if not match:
            continue  # an annotation's second line
        depth = len(match.group(1)) // 4
        stack[depth:] = [match.group(2).rstrip("/")]
        paths.append("/".join(stack))
    return paths


def test_the_readme_tree_names_what_is_there_and_nothing_else():
    root = PACKAGE.parents[1]
    named = _readme_tree()
    assert [p for p in named if not (root / p).exists()] == [], "named but missing"
    listed = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True)
    if listed.returncode != 0:  # a copy without .git (how-to-extend's recipes run in one)
        pytest.skip("not a git checkout: no tracked files to compare with the tree")
    tracked = listed.stdout.split()
    top = {path.split("/")[0] for path in tracked} - {".ci"} | {".ci/run"}
    folders = {
        str(p.relative_to(root))
        for p in PACKAGE.rglob("*")
        if p.is_dir() and p.name != "__pycache__" and any(p.glob("*.py"))
    }
    covered = {"/".join(p.split("/")[: i + 1]) for p in named for i in range(p.count("/") + 1)}
    assert sorted((top | folders) - covered) == [], "in the repository, not in the tree"
