"""The code a run depends on, found from the imports of its entry point.

A saved state records a SHA-256 of the package modules its numbers depend on, so that a
resume refuses a state written by other code. Which modules those are is read from the
source, not kept by hand: starting at the entry point (e.g. `training/grpo.py`), every
`import verifiable_grpo...` / `from verifiable_grpo... import ...` statement anywhere in a
module (functions included: a lazy import runs too) adds the imported module, and its own
imports in turn. The package `__init__.py` files on the way are covered as well (they run
on import). Standard-library and third-party imports are not project code and are left to
the run's provenance (package versions).

The walk is static (ast, no import executed) and its result is sorted, so the hash
depends only on the files' names and bytes. It is narrower than config.code_hash (the
whole package): editing a module the run never imports (a notebook helper, a Part III
lab) leaves a saved state resumable; editing one it imports, or adding an import, does not.
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Iterable
from pathlib import Path

PACKAGE = "verifiable_grpo"
PACKAGE_DIR = Path(__file__).resolve().parent.parent  # src/verifiable_grpo


def _module_file(dotted: str, root: Path) -> Path | None:
    """The file of a dotted project module (a package's __init__.py), None if none."""
    parts = dotted.split(".")
    if parts[0] != PACKAGE:
        return None
    base = root.joinpath(*parts[1:])
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _dotted(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join((PACKAGE,) + parts)


def _absolute(node: ast.ImportFrom, current: str, is_package: bool) -> str:
    """The absolute module a (possibly relative) `from ... import` names."""
    if not node.level:
        return node.module or ""
    base = current.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def direct_imports(path: Path, root: Path = PACKAGE_DIR) -> set[Path]:
    """The project files one module imports (anywhere in it), as paths under `root`."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    # a file outside the package (a chapter, a script) has only absolute imports
    current = _dotted(path, root) if path.is_relative_to(root) else PACKAGE
    found: set[Path] = set()
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = _absolute(node, current, path.name == "__init__.py")
            # `from pkg import name`: name may be a submodule or an attribute of pkg.
            names = [module] + [f"{module}.{alias.name}" for alias in node.names]
        for name in names:
            target = _module_file(name, root)
            if target is not None and target != path:
                found.add(target)
    return found


def _with_packages(path: Path, root: Path) -> set[Path]:
    """The file and the __init__.py of every package above it (each runs on import)."""
    found = {path}
    folder = path.parent
    while folder != root.parent and (folder / "__init__.py").is_file():
        found.add(folder / "__init__.py")
        if folder == root:
            break
        folder = folder.parent
    return found


def imported_modules(entry: str, root: Path = PACKAGE_DIR) -> tuple[str, ...]:
    """Every project module `entry` (a path relative to `root`) imports, directly or not,
    itself and the packages on the way included: sorted relative POSIX paths."""
    start = root / entry
    if not start.is_file():
        raise FileNotFoundError(f"no module {entry} under {root}")
    seen: set[Path] = set()
    todo = [start]
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for found in direct_imports(path, root):
            todo.extend(_with_packages(found, root) - seen)
        todo.extend(_with_packages(path, root) - seen)
    return tuple(sorted(p.relative_to(root).as_posix() for p in seen))


def modules_imported_by(path: Path, root: Path = PACKAGE_DIR) -> tuple[str, ...]:
    """Every project module a file outside the package (a chapter) imports, directly or not:
    sorted relative POSIX paths, as imported_modules gives them."""
    found: set[str] = set()
    for target in direct_imports(Path(path).resolve(), root):
        found.update(imported_modules(target.relative_to(root).as_posix(), root))
    return tuple(sorted(found))


def modules_sha256(names: Iterable[str], root: Path = PACKAGE_DIR) -> str:
    """SHA-256 over the named modules (relative path and bytes, in sorted order)."""
    digest = hashlib.sha256()
    for name in sorted(set(names)):
        digest.update(name.encode() + b"\0" + (root / name).read_bytes())
    return digest.hexdigest()


def entry_code_sha256(*entries: str, root: Path = PACKAGE_DIR) -> str:
    """SHA-256 of the code the entry points import (the union of their import graphs)."""
    modules = set()
    for entry in entries:
        modules.update(imported_modules(entry, root))
    return modules_sha256(modules, root)
