"""No function over 80 lines and no module over 500 in src/: each fits on a screen or two.

A function's length runs from its `def` to its last line, docstring included. The
allow-list holds what other work was rewriting when the limits came in; it may only shrink.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import verifiable_grpo
from shared_helpers import no_longer_over

PACKAGE = Path(verifiable_grpo.__file__).parent
MAX_FUNCTION_LINES = 80
MAX_MODULE_LINES = 500

# path relative to the package -> over-limit names still to split ("<module>": the file)
ALLOWED: dict[str, set[str]] = {}


@functools.cache
def over_limit() -> dict[str, dict[str, int]]:
    """path -> {name: lines} of every module and function over its limit."""
    found: dict[str, dict[str, int]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        rel = path.relative_to(PACKAGE).as_posix()
        lines = len(text.splitlines())
        if lines > MAX_MODULE_LINES:
            found.setdefault(rel, {})["<module>"] = lines
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    found.setdefault(rel, {})[node.name] = length
    return found


def test_functions_and_modules_stay_under_their_limits():
    found = over_limit()
    new = {
        rel: {name: n for name, n in names.items() if name not in ALLOWED.get(rel, set())}
        for rel, names in found.items()
    }
    new = {rel: names for rel, names in new.items() if names}
    assert new == {}, (
        f"over {MAX_FUNCTION_LINES} lines a function or {MAX_MODULE_LINES} a module: split them"
    )


def test_the_allow_list_only_shrinks():
    assert no_longer_over(ALLOWED, over_limit()) == set(), (
        "now under the limit: remove from ALLOWED"
    )
