"""Colab, simulated: the repository URL comes from _config.yml, every chapter's set-up cell
is the generated one, every import a chapter needs ships with Colab, and chapter 1 runs
end to end after cloning (from a local bare repository through the URL override) and
installing the package the way the cell does, in a fresh virtual environment."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import jupytext
import pytest

from verifiable_grpo.book import colab
from verifiable_grpo.core import code_identity
from verifiable_grpo.core.config import repo_root

ROOT = repo_root()
CHAPTERS = sorted((ROOT / "notebooks" / "part1").glob("*.py"))
EVERY_CHAPTER = sorted((ROOT / "notebooks").glob("part*/*.py"))


def _colab_cells(path: Path) -> list[str]:
    return [c.source for c in jupytext.read(path).cells if "colab" in c.metadata.get("tags", [])]


def test_the_setup_cell_opens_the_chapter_folder_of_its_part():
    assert 'os.path.join(clone, "notebooks", "part3")' in colab.setup_cell_source("part3")
    with pytest.raises(ValueError, match="part1..part3"):
        colab.setup_cell_source("part4")


def test_the_setup_cell_installs_the_pins_that_matter():
    pins = colab.pinned_versions()
    requirements = (ROOT / "requirements.txt").read_text()
    source = colab.setup_cell_source("part1")
    for name in colab.PINNED_FOR_NUMBERS:
        assert f"{name}=={pins[name]}" in requirements
        assert f'"{name}=={pins[name]}"' in source
    assert "torch==" not in source  # Colab's CUDA build of torch is kept, only compared


def test_versions_that_differ_are_named():
    pins = colab.pinned_versions()
    colab_like = dict(pins, torch=pins["torch"] + "+cu126")  # a local build tag is no change
    assert colab.version_differences(colab_like) == []
    older = dict(colab_like, transformers="4.57.1", tokenizers=None)
    assert colab.version_differences(older) == [
        f"transformers: installed 4.57.1, the recorded numbers used {pins['transformers']}",
        f"tokenizers: installed none, the recorded numbers used {pins['tokenizers']}",
    ]


def test_repository_url_comes_from_config_unless_overridden(monkeypatch):
    monkeypatch.delenv(colab.REPOSITORY_ENV, raising=False)
    url = colab.repository_url()
    assert url.startswith("https://") and url in (ROOT / "_config.yml").read_text()
    monkeypatch.setenv(colab.REPOSITORY_ENV, "file:///tmp/elsewhere.git")
    assert colab.repository_url() == "file:///tmp/elsewhere.git"


@pytest.mark.parametrize("chapter", EVERY_CHAPTER, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_chapter_starts_with_the_generated_setup_cell(chapter):
    assert _colab_cells(chapter) == [colab.setup_cell_source(chapter.parent.name)], (
        f"{chapter.name}: its Colab cell differs from book/colab.py's setup_cell_source(); "
        "regenerate it (the URL lives in _config.yml)"
    )


@pytest.mark.parametrize("chapter", EVERY_CHAPTER, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_setup_cell_folds_to_one_line_in_the_book(chapter):
    # myst-nb folds a hide-input cell behind its prompt; Jupyter and Colab ignore the tag
    cells = [c for c in jupytext.read(chapter).cells if "colab" in c.metadata.get("tags", [])]
    assert [c.metadata for c in cells] == [colab.setup_cell_metadata()], (
        f"{chapter.name}: the Colab cell's metadata differs from setup_cell_metadata()"
    )
    paired = chapter.with_suffix(".ipynb")
    executed = [c for c in jupytext.read(paired).cells if "colab" in c.metadata.get("tags", [])]
    assert [c.metadata.get("tags") for c in executed] == [list(colab.SETUP_CELL_TAGS)]
    assert "hide-input" in colab.SETUP_CELL_TAGS and "\n" not in colab.SETUP_CELL_PROMPT


def _imports_of(tree) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names


def _imported_top_modules(path: Path) -> set[str]:
    """What the file imports; a tool-only package counts only where it is imported outside a
    function (then importing the module itself would need it)."""
    tree = ast.parse(path.read_text() if path.suffix == ".py" else "")
    in_functions = {
        id(node)
        for function in ast.walk(tree)
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef))
        for node in ast.walk(function)
    }
    at_module_level = _imports_of(
        ast.Module(
            body=[
                n
                for n in ast.walk(tree)
                if isinstance(n, (ast.Import, ast.ImportFrom)) and id(n) not in in_functions
            ],
            type_ignores=[],
        )
    )
    return {
        n for n in _imports_of(tree) if n not in colab.TOOL_ONLY_IMPORTS or n in at_module_level
    }


def test_a_tool_only_package_imported_at_module_level_is_caught(tmp_path):
    eager, lazy = tmp_path / "eager.py", tmp_path / "lazy.py"
    eager.write_text("import trl\n")
    lazy.write_text("def f():\n    import trl\n")
    assert "trl" in _imported_top_modules(eager) and "trl" not in _imported_top_modules(lazy)


def test_every_import_the_chapters_need_ships_with_colab():
    # the chapters and every project module they import, directly or not (a CLI-only
    # module such as the TRL runner is not one of them unless a chapter reaches it)
    needed = {
        name for chapter in EVERY_CHAPTER for name in code_identity.modules_imported_by(chapter)
    }
    assert needed, "no project module found in the chapters' imports"
    files = EVERY_CHAPTER + [code_identity.PACKAGE_DIR / name for name in sorted(needed)]
    third_party = {}
    for path in files:
        for name in _imported_top_modules(path):
            if name not in sys.stdlib_module_names and name not in (
                "verifiable_grpo",
                "__future__",
            ):
                third_party.setdefault(name, path.name)
    missing = {n: f for n, f in third_party.items() if n not in colab.COLAB_PREINSTALLED}
    assert not missing, (
        f"imported but not on Colab (the cell installs with --no-deps): {missing}; "
        "install it in the Colab cell or avoid the import"
    )


def _run(args, **kwargs):
    result = subprocess.run(args, capture_output=True, text=True, timeout=600, **kwargs)
    assert result.returncode == 0, (args, result.stdout[-2000:], result.stderr[-3000:])
    return result


def test_chapter_one_runs_on_a_simulated_colab(tmp_path):
    # GitHub, simulated: a bare repository of this commit, reached through the URL override.
    bare = tmp_path / "repository.git"
    _run(["git", "clone", "-q", "--bare", str(ROOT), str(bare)])
    # Colab's Python, simulated: a fresh virtual environment that sees the installed
    # libraries (as Colab's runtime does) but not this package, and a google.colab module
    # imported at start-up (as Colab's kernel does).
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    site = next((venv / "lib").glob("python*/site-packages"))
    libraries = [p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir()]
    (site / "libraries.pth").write_text("\n".join(libraries) + "\n")
    stub = tmp_path / "stub"
    (stub / "google" / "colab").mkdir(parents=True)
    (stub / "google" / "__init__.py").write_text("")
    (stub / "google" / "colab" / "__init__.py").write_text('"""A stand-in for Colab."""\n')
    (stub / "sitecustomize.py").write_text("import google.colab  # Colab's kernel imports it\n")
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "VERIFIABLE_GRPO_ROOT", "VIRTUAL_ENV")
    }
    clone = tmp_path / "content" / "verifiable-grpo"
    env.update(
        PYTHONPATH=str(stub),
        PIP_NO_INDEX="1",
        PIP_NO_BUILD_ISOLATION="0",
        PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}",
        **{colab.REPOSITORY_ENV: bare.as_uri(), colab.CLONE_DIR_ENV: str(clone)},
    )
    python = str(venv / "bin" / "python")
    probe = _run(
        [
            python,
            "-c",
            "import sys, importlib.util; import google.colab; "
            "print(importlib.util.find_spec('verifiable_grpo'))",
        ],
        env=env,
        cwd=tmp_path,
    )
    assert probe.stdout.strip() == "None", "the simulated Colab must not see this package yet"
    notebook = tmp_path / "chapter1.ipynb"
    notebook.write_text((ROOT / "notebooks" / "part1" / "01_task_and_verifier.ipynb").read_text())
    _run(
        [
            python,
            "-m",
            "nbconvert",
            "--to",
            "notebook",
            "--execute",
            "--inplace",
            "--ExecutePreprocessor.kernel_name=python3",
            str(notebook),
        ],
        env=env,
        cwd=tmp_path,
    )
    executed = jupytext.read(notebook)
    outputs = "".join(
        o.get("text", "")
        for c in executed.cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
    )
    assert (clone / "src" / "verifiable_grpo" / "book" / "colab.py").is_file()
    assert "distinct normalised problems: 1400" in outputs
    # the cell installed the pins (satisfied here) and says the versions are the recorded ones
    assert "library versions as recorded: " in outputs, outputs[:2000]
    installed = _run([python, "-m", "pip", "show", "-f", "verifiable-grpo"], env=env, cwd=tmp_path)
    assert re.search(r"Editable project location: .*verifiable-grpo", installed.stdout), (
        installed.stdout
    )
