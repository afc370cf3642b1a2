"""Profiles (configs/*.yaml), repository paths, hashing and provenance.

Code branches on config values, never on a profile's name. A profile file may start from
another (`extends: base`): it then states only what it changes, and the loader merges it
over the file it names (sections key by key, anything else replaced whole).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from verifiable_grpo.core import files

if TYPE_CHECKING:
    from verifiable_grpo.core.config_schema import Profile

PACKAGE_DIR = Path(__file__).resolve().parent.parent  # src/verifiable_grpo
REQUIRED_SECTIONS = (
    "model",
    "data",
    "tokens",
    "sampling",
    "warmstart",
    "sft",
    "grpo",
    "exercise",
    "evaluation",
)
# Sections a profile may leave out (each key then reads as its stand-in value).
OPTIONAL_SECTIONS = ("threads", "storage")
# The key naming the profile a file starts from, and files under configs/ that are a start
# for profiles but not profiles themselves.
EXTENDS = "extends"
BASES = ("base",)


def repo_root() -> Path:
    """The repository holding configs/ and data/ (works from notebooks/ and from src/)."""
    env = os.environ.get("VERIFIABLE_GRPO_ROOT")
    if env:
        return Path(env).resolve()
    for start in (Path.cwd(), PACKAGE_DIR):
        for candidate in (start, *start.parents):
            if (candidate / "configs" / "tiny.yaml").is_file() and (candidate / "src").is_dir():
                return candidate
    raise FileNotFoundError(
        "Cannot find the repository root (a folder with configs/tiny.yaml); "
        "run from inside the clone or set VERIFIABLE_GRPO_ROOT"
    )


def resolve(path: str | os.PathLike) -> Path:
    """A path from a config: absolute as given, relative to the repository root."""
    p = Path(path)
    return p if p.is_absolute() else repo_root() / p


def shown_path(path: str | os.PathLike) -> str:
    """A path as a record shows it: relative to the repository root when inside it (a record
    must not hold one machine's absolute paths), else as given."""
    p = Path(path)
    if not p.is_absolute():
        return str(path)  # already relative (to whatever the caller meant)
    try:
        return p.relative_to(repo_root().absolute()).as_posix()
    except ValueError:
        return str(path)


def config_path(name_or_path: str | os.PathLike) -> Path:
    """'tiny' -> configs/tiny.yaml; an existing file path is used as it is."""
    p = Path(name_or_path)
    if p.suffix in (".yaml", ".yml"):
        if not p.is_file():
            p = resolve(p)
    else:
        p = repo_root() / "configs" / f"{name_or_path}.yaml"
    if not p.is_file():
        raise FileNotFoundError(f"No config {name_or_path!r}; known profiles: {known_profiles()}")
    return p


def known_profiles() -> list[str]:
    """The profile names under configs/ (a base that profiles extend is not one)."""
    names = (x.stem for x in (repo_root() / "configs").glob("*.yaml"))
    return sorted(name for name in names if name not in BASES)


class ConfigError(ValueError):
    """A profile that cannot run; `problems` holds one '<file>: <key path>: <problem>' each
    (each cut to PROBLEM_CHARS: a message quotes values, never a whole file of them)."""

    def __init__(self, problems: list[str]):
        self.problems = [files.shorten(p, PROBLEM_CHARS) for p in problems]
        super().__init__("\n".join(self.problems))


PROBLEM_CHARS = 600
# A settings file is a few KB; none nests deeper than a handful of levels.
MAX_SETTINGS_BYTES = 1 << 20
MAX_SETTINGS_DEPTH = 32


class _NoAliasLoader(yaml.SafeLoader):
    """yaml.SafeLoader without aliases: `*name` repeats a node by reference, and a few of
    them nest into billions of values (an "alias bomb"); no settings file needs one."""

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(
                None,
                None,
                f"aliases (*{files.shorten(event.anchor, 40)}) are refused; write the value out",
                event.start_mark,
            )
        return super().compose_node(parent, index)


def _yaml_problem(path, err: yaml.YAMLError) -> str:
    mark = getattr(err, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
    detail = getattr(err, "problem", None) or str(err).splitlines()[0]
    return f"{path}: not valid YAML{where}: {files.shorten(detail)}"


def read_yaml(path: str | os.PathLike) -> Any:
    """What a YAML settings file holds; ConfigError with one line naming the file when it is
    bigger than MAX_SETTINGS_BYTES, not UTF-8 text (a binary file), not valid YAML, uses an
    alias or nests deeper than MAX_SETTINGS_DEPTH."""
    try:
        files.check_size(path, MAX_SETTINGS_BYTES, "settings file")
        with open(path, encoding="utf-8") as handle:
            value = yaml.load(handle, Loader=_NoAliasLoader)
        deep = files.too_deep(value, MAX_SETTINGS_DEPTH)
    except files.DamagedFileError as err:
        raise ConfigError([str(err)]) from None
    except UnicodeDecodeError as err:
        raise ConfigError(
            [
                f"{path}: not a UTF-8 text file (byte {err.start} cannot be "
                "decoded); a settings file is YAML text"
            ]
        ) from None
    except yaml.YAMLError as err:
        raise ConfigError([_yaml_problem(path, err)]) from None
    except IsADirectoryError:
        raise ConfigError([f"{path} is a folder, not a settings file"]) from None
    except ValueError as err:  # a value YAML cannot build, e.g. an integer of 5,000 digits
        raise ConfigError([f"{path}: not a usable value: {files.shorten(err)}"]) from None
    except RecursionError:
        deep = True
    if deep:
        raise ConfigError([f"{path}: nested deeper than {MAX_SETTINGS_DEPTH} levels; refused"])
    return value


def merged(base: dict, changes: dict) -> dict:
    """`changes` over `base`: mappings merge key by key, any other value replaces whole."""
    out = dict(base)
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merged(out[key], value)
        else:
            out[key] = value
    return out


def profile_settings(name_or_path: str | os.PathLike, _chain: tuple = ()) -> Any:
    """A profile as YAML gives it with the files it extends merged under it, unchecked.
    `extends` names a profile or base under configs/ (or a YAML path), so a copy of a
    profile anywhere still finds its base."""
    path = config_path(name_or_path)
    raw = read_yaml(path)
    if not isinstance(raw, dict) or EXTENDS not in raw:
        return raw
    parent = raw.pop(EXTENDS)
    if not isinstance(parent, str) or not parent:
        raise ConfigError([f"{path}: {EXTENDS}: must name a profile or base, got {parent!r}"])
    if str(path.resolve()) in _chain:
        raise ConfigError([f"{path}: {EXTENDS}: {parent!r} leads back to this file"])
    try:
        base = profile_settings(parent, (*_chain, str(path.resolve())))
    except FileNotFoundError:
        raise ConfigError(
            [
                f"{path}: {EXTENDS}: no profile or base {parent!r}; "
                f"known: {sorted([*BASES, *known_profiles()])}"
            ]
        ) from None
    if not isinstance(base, dict):
        raise ConfigError([f"{path}: {EXTENDS}: {parent!r} is not a mapping of keys"])
    return merged(base, raw)


def load_config(name_or_path: str | os.PathLike = "tiny") -> Profile:
    """The profile, checked whole before anything runs: typed sections over a read-only
    mapping of what the file gives, plus `_path`; `.sha256` is config_hash of that mapping.

    Raises ConfigError listing every problem. The only changes to what YAML gave are the
    merge over the file it extends and that YAML-1.1 float strings such as "2e-4" become
    floats; no defaults are added.
    """
    # Imported here: the schema reads split sizes from `data`, which imports this module.
    from verifiable_grpo.core.config_schema import profile_of

    path = config_path(name_or_path)
    return profile_of(profile_settings(path), str(path), {"_path": str(path)})


def command_config(args) -> int:
    """`config --config NAME`: the profile as the code reads it, its bases merged in."""
    profile = load_config(args.config)
    config = profile.as_dict()
    print(f"# {shown_path(config.pop('_path'))}, resolved; SHA-256 {profile.sha256}")
    print(yaml.safe_dump(config, sort_keys=False), end="")
    return 0


def canonical_json(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


sha256_file = files.sha256_file


def config_hash(config: dict[str, Any]) -> str:
    """SHA-256 of the config's content (not of its location)."""
    return sha256_bytes(canonical_json({k: v for k, v in config.items() if not k.startswith("_")}))


def sections_hash(config: dict[str, Any], sections) -> str:
    """SHA-256 of the named parts of a config (top-level keys): what a stage depends on.
    A change elsewhere in the profile leaves a finished stage's evidence valid."""
    return sha256_bytes(canonical_json({key: config.get(key) for key in sorted(sections)}))


def code_hash() -> str:
    """SHA-256 over the package's source files: a resume refuses other code."""
    digest = hashlib.sha256()
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        digest.update(path.relative_to(PACKAGE_DIR).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def git_commit(root: Path | None = None) -> str | None:
    """HEAD of the repository at `root` (default: this checkout); None without git."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=root or repo_root(),
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError, FileNotFoundError):
        return None
    return out.stdout.strip() or None


def package_versions() -> dict[str, str]:
    from importlib import metadata

    names = ["torch", "transformers", "tokenizers", "safetensors", "numpy"]
    versions = {"python": platform.python_version()}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "absent"
    return versions


def provenance(config: dict[str, Any] | None = None, command: list[str] | None = None) -> dict:
    """Where a recorded number came from."""
    import torch

    device = "cpu"
    if torch.cuda.is_available():
        device = f"cuda: {torch.cuda.get_device_name(0)}"
    words = list(command if command is not None else sys.argv)
    if words:  # the program as the repository names it, not this machine's absolute path
        words[0] = shown_path(words[0])
    path = config.get("_path") if config else None
    return {
        "command": " ".join(words),
        "git_commit": git_commit(),
        "config_path": shown_path(path) if path else None,
        "config_sha256": config_hash(config) if config else None,
        "code_sha256": code_hash(),
        "packages": package_versions(),
        "device": device,
        "platform": platform.platform(),
        "cpu_threads": torch.get_num_threads(),
    }


# Writes and reads live in files.py (atomic, fsync'd); re-exported here for callers.
save_json = files.save_json
read_json = files.read_json
