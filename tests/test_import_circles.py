"""No module imports back into a module that imports it, even lazily inside a function: a
circle is one concept split over two files, or two concepts in one file. Imports under
`if TYPE_CHECKING:` are annotations only and do not count."""

from __future__ import annotations

import ast
from pathlib import Path

import verifiable_grpo

PACKAGE = Path(verifiable_grpo.__file__).parent

# frozenset of the circle's modules -> why it is still there (empty: no circle is left)
KNOWN_CIRCLES: dict[frozenset[str], str] = {
    frozenset({"verifiable_grpo.core.config", "verifiable_grpo.core.config_schema"}): (
        "load_config returns the schema's Profile, which hashes itself with config_hash"
    ),
}


def _module_names(package: Path) -> dict[str, Path]:
    names = {}
    for path in package.rglob("*.py"):
        parts = path.with_suffix("").relative_to(package.parent).parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


def _runtime_nodes(tree: ast.AST):
    """Every node but those under an `if TYPE_CHECKING:` block."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            yield from (n for child in node.orelse for n in ast.walk(child))
            continue
        yield node
        yield from _runtime_nodes(node)


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """module -> the package's modules it imports at run time (anywhere in the file)."""
    modules = _module_names(package)
    graph = {name: set() for name in modules}
    for name, path in modules.items():
        for node in _runtime_nodes(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module in modules:
                found = [f"{node.module}.{a.name}" for a in node.names]
                graph[name] |= {f if f in modules else node.module for f in found}
            elif isinstance(node, ast.Import):
                graph[name] |= {a.name for a in node.names if a.name in modules}
        graph[name].discard(name)
    return graph


def circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index, low, on_stack, stack, found, counter = {}, {}, set(), [], [], [0]
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def test_no_module_imports_back_into_its_importer():
    found = set(circles(import_graph()))
    unlisted = sorted(sorted(c) for c in found - set(KNOWN_CIRCLES))
    assert not unlisted, "import circles (merge the concept or move what both need):\n" + "\n".join(
        " <-> ".join(c) for c in unlisted
    )
    assert not set(KNOWN_CIRCLES) - found, "listed in KNOWN_CIRCLES but no longer a circle"


def test_the_circle_rule_sees_a_lazy_import_and_ignores_an_annotation(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg import b\n")
    (package / "b.py").write_text("def f():\n    from pkg import a\n")
    (package / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import a\n"
    )
    (package / "d.py").write_text("from pkg.c import x\n")
    graph = import_graph(package)
    assert circles(graph) == [frozenset({"pkg.a", "pkg.b"})]
    assert graph["pkg.c"] == set() and graph["pkg.d"] == {"pkg.c"}
