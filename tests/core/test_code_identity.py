"""The code a run's identity hashes is found from its entry point's imports: a module added
anywhere below it (a lazy import in a function included) changes the hash."""

from __future__ import annotations

import textwrap

import pytest

from verifiable_grpo.core import code_identity


def _write(root, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


@pytest.fixture
def package(tmp_path):
    """A throwaway copy of the package's shape: an entry point, a helper, a bystander."""
    root = tmp_path / "verifiable_grpo"
    _write(
        root,
        {
            "__init__.py": "",
            "core/__init__.py": "",
            "core/helper.py": "import os\nVALUE = 1\n",
            "core/bystander.py": "VALUE = 2\n",
            "training/__init__.py": "",
            "training/entry.py": "import torch\nfrom verifiable_grpo.core import helper\n",
        },
    )
    return root


def test_the_entry_points_imports_are_covered_and_nothing_else(package):
    found = code_identity.imported_modules("training/entry.py", package)
    assert found == (
        "__init__.py",
        "core/__init__.py",
        "core/helper.py",
        "training/__init__.py",
        "training/entry.py",
    )


def test_a_module_added_below_the_entry_point_changes_the_hash(package):
    before = code_identity.entry_code_sha256("training/entry.py", root=package)
    (package / "core" / "bystander.py").write_text("VALUE = 3\n")  # not imported: no change
    assert code_identity.entry_code_sha256("training/entry.py", root=package) == before
    # A new module, imported lazily inside a function of an imported module.
    _write(
        package,
        {
            "core/added.py": "SCALE = 2.0\n",
            "core/helper.py": """\
        import os
        VALUE = 1
        def scale():
            from verifiable_grpo.core.added import SCALE
            return SCALE
        """,
        },
    )
    with_added = code_identity.imported_modules("training/entry.py", package)
    assert "core/added.py" in with_added
    after = code_identity.entry_code_sha256("training/entry.py", root=package)
    assert after != before
    (package / "core" / "added.py").write_text("SCALE = 3.0\n")  # its bytes count
    assert code_identity.entry_code_sha256("training/entry.py", root=package) != after


def test_every_import_form_is_followed(package):
    _write(
        package,
        {
            "task/__init__.py": "",
            "task/a.py": "import verifiable_grpo.task.b\n",
            "task/b.py": "from . import c\n",
            "task/c.py": "from .d import NAME\n",
            "task/d.py": "from verifiable_grpo.task import e as renamed\nNAME = 1\n",
            "task/e.py": "from ..core.helper import VALUE\n",
        },
    )
    found = code_identity.imported_modules("task/a.py", package)
    assert {"task/b.py", "task/c.py", "task/d.py", "task/e.py", "core/helper.py"} <= set(found)
    assert "core/bystander.py" not in found


def test_an_unknown_entry_point_is_refused(package):
    with pytest.raises(FileNotFoundError, match="training/nothing.py"):
        code_identity.imported_modules("training/nothing.py", package)


def test_the_real_package_is_walked_deterministically():
    first = code_identity.imported_modules("training/grpo.py")
    assert first == code_identity.imported_modules("training/grpo.py") == tuple(sorted(first))
    assert "book/plots.py" not in first and "cli.py" not in first
