"""Colab: the repository URL (kept in one place, _config.yml) and the set-up cell every
chapter starts with.

The set-up cell runs before the package is installed, so it cannot import this module;
instead its source is generated here from _config.yml, and a test checks that every
chapter's cell is exactly this source. The launch buttons read the same _config.yml key.
Two environment variables let a test stand in for GitHub and for Colab's /content.
"""

from __future__ import annotations

import os

import yaml

from verifiable_grpo.core.config import repo_root

REPOSITORY_ENV = "VERIFIABLE_GRPO_REPOSITORY"
CLONE_DIR_ENV = "VERIFIABLE_GRPO_CLONE_DIR"
CLONE_DIR = "/content/verifiable-grpo"
# What the chapters import beyond the standard library and this package; each ships with
# Colab's runtime, which is why the cell can install this package with --no-deps (Colab's
# versions, not requirements.txt's pins).
COLAB_PREINSTALLED = (
    "IPython",
    "ipywidgets",
    "matplotlib",
    "numpy",
    "safetensors",
    "tokenizers",
    "torch",
    "tqdm",
    "transformers",
    "yaml",
)
# Imported only inside the functions of tools that no chapter runs (the TRL parity test,
# `bench grpo`): not on Colab, and never needed there, as long as the import stays lazy.
TOOL_ONLY_IMPORTS = ("trl", "datasets", "peft", "accelerate")


# The libraries whose version can change a recorded number (kernels, tokenisation, file
# format). The cell installs the pins of the pure-Python and wheel-only ones over Colab's;
# torch stays Colab's CUDA build (a CPU pin would replace it) and is only compared.
PINNED_FOR_NUMBERS = ("transformers", "tokenizers", "safetensors")
COMPARED_ONLY = ("torch", "numpy")


def pinned_versions(names=PINNED_FOR_NUMBERS + COMPARED_ONLY) -> dict[str, str]:
    """name -> the version requirements.txt pins."""
    pins = {}
    for line in (repo_root() / "requirements.txt").read_text().splitlines():
        name, _, version = line.split("#")[0].strip().partition("==")
        if version and name in names:
            pins[name] = version.strip()
    missing = sorted(set(names) - set(pins))
    if missing:
        raise ValueError(f"requirements.txt pins no version of {missing}")
    return pins


def version_differences(installed: dict[str, str | None] | None = None) -> list[str]:
    """'name: installed X, the recorded numbers used Y' for each library that differs from
    its pin (a local build suffix such as +cu126 is not a difference)."""
    from importlib import metadata

    pins = pinned_versions()
    if installed is None:
        installed = {}
        for name in pins:
            try:
                installed[name] = metadata.version(name)
            except metadata.PackageNotFoundError:
                installed[name] = None
    out = []
    for name, pin in pins.items():
        found = installed.get(name)
        if found is None or found.split("+")[0] != pin:
            out.append(f"{name}: installed {found or 'none'}, the recorded numbers used {pin}")
    return out


def report_versions() -> None:
    """What the Colab cell prints after installing: the pins met, or what differs."""
    differences = version_differences()
    if not differences:
        print(
            "library versions as recorded: "
            + ", ".join(f"{n} {v}" for n, v in pinned_versions().items())
        )
        return
    print(
        "library versions that differ from the recorded run's (live numbers may differ in "
        "their last digits; the recorded ones are read from files):"
    )
    for line in differences:
        print(f"  {line}")


def repository_url() -> str:
    """The repository's URL from _config.yml (repository.url), or the override in
    VERIFIABLE_GRPO_REPOSITORY."""
    override = os.environ.get(REPOSITORY_ENV)
    if override:
        return override
    config = yaml.safe_load((repo_root() / "_config.yml").read_text())
    try:
        return config["repository"]["url"]
    except (KeyError, TypeError):
        raise ValueError(
            "_config.yml has no repository.url: add it (the Colab cells and launch buttons read it)"
        ) from None


# In the built book the cell folds to one line (myst-nb's hide-input, with this prompt);
# in Jupyter and on Colab the tags change nothing and the cell stays runnable. The book's
# header carries the "Open in Colab" launch button (_config.yml, launch_buttons).
SETUP_CELL_TAGS = ("colab", "hide-input")
SETUP_CELL_PROMPT = "Colab set-up (runs only on Colab): show the cell"


def setup_cell_metadata() -> dict:
    """The metadata of every chapter's Colab cell: its tags, and the one-line prompt the
    built book shows in place of its 18 lines."""
    return {
        "tags": list(SETUP_CELL_TAGS),
        "mystnb": {"code_prompt_show": SETUP_CELL_PROMPT, "code_prompt_hide": "hide the cell"},
    }


def setup_cell_source(part: str = "part1") -> str:
    """The source of every chapter's Colab cell (tag "colab"), for the URL in _config.yml;
    `part` is the chapter's folder under notebooks/ (part1, part2, part3)."""
    if part not in ("part1", "part2", "part3"):
        raise ValueError(f"unknown part {part!r}: the chapters live in notebooks/part1..part3")
    config = yaml.safe_load((repo_root() / "_config.yml").read_text())
    url = config["repository"]["url"]
    pins = ", ".join(
        f'"{name}=={version}"' for name, version in pinned_versions(PINNED_FOR_NUMBERS).items()
    )
    return f'''# On Colab only: fetch the project and install it. Elsewhere the package is already installed.
import os, subprocess, sys

if "google.colab" in sys.modules:
    repository = os.environ.get("{REPOSITORY_ENV}", "{url}")
    clone = os.environ.get("{CLONE_DIR_ENV}", "{CLONE_DIR}")
    if not os.path.isdir(clone):
        subprocess.run(["git", "clone", "-q", "--depth", "1", repository, clone], check=True)
    # --no-deps: everything the chapters import ships with Colab (see book/colab.py)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "-e", clone], check=True)
    # the versions the recorded numbers were computed with; torch stays Colab's CUDA build
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", {pins}], check=False)
    sys.path.insert(0, os.path.join(clone, "src"))
    os.chdir(os.path.join(clone, "notebooks", "{part}"))
    from verifiable_grpo.book.colab import report_versions
    report_versions()'''
