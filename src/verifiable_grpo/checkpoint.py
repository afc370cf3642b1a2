"""Full resume states: RNG streams, gzip'd torch files, bitwise comparison, run identity.

A state saved at a boundary and loaded in a new process must let the run continue exactly
as if it had never stopped. compare_states proves it: every tensor, number and string of
a continuous run's final state equals the resumed run's, bit for bit (wall-clock timings,
stored under "timings", are the only thing left out).
"""
from __future__ import annotations

import gzip
import hashlib
import math
import os
import random
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import torch

from .config import PACKAGE_DIR, code_hash, config_hash, load_config, save_json, sha256_file


# ---------------------------------------------------------------- RNG streams
def capture_rng() -> dict:
    """Python, NumPy, torch CPU and (when present) every CUDA device's generator state."""
    return {"python": random.getstate(), "numpy": np.random.get_state(),
            "torch": torch.get_rng_state(),
            "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None}


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy and torch (CPU and CUDA): a run must not depend on the RNG state
    its process happened to start with (Python and NumPy seed themselves from the OS)."""
    random.seed(seed)
    np.random.seed(seed % 2 ** 32)
    torch.manual_seed(seed)


def restore_rng(state: dict) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if state.get("cuda") is not None:
        if not torch.cuda.is_available():
            raise ValueError("this state holds CUDA RNG streams but no CUDA device is available; "
                             "resume on the kind of machine that saved it")
        torch.cuda.set_rng_state_all(state["cuda"])


# ---------------------------------------------------------------- files
def save_state(path: str | os.PathLike, state: dict) -> dict:
    """torch.save into gzip level 1; refuses to overwrite. -> {"bytes","seconds","sha256"}."""
    path = Path(path)
    if path.exists():
        raise FileExistsError(f"{path} exists; a saved state is evidence and is never overwritten")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    start = time.perf_counter()
    with open(tmp, "wb") as raw:
        # mtime=0: the gzip header then depends on the content only.
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=1, mtime=0) as handle:
            torch.save(state, handle)
    tmp.replace(path)
    seconds = time.perf_counter() - start
    return {"bytes": path.stat().st_size, "seconds": seconds, "sha256": sha256_file(path)}


def load_state(path: str | os.PathLike) -> dict:
    """Load a state this project wrote (torch objects, hence weights_only=False: local files only).

    The gzip stream is first inflated to a temporary file: torch's zip reader seeks, which a
    gzip stream can only do by re-reading from the start. Tensors are memory-mapped from that
    file (it is unlinked at once; the mapping keeps it alive), so comparing two full 0.5B
    states does not need both in RAM.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no saved state {path}")
    fd, tmp = tempfile.mkstemp(suffix=".pt", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out, gzip.open(path, "rb") as handle:
            shutil.copyfileobj(handle, out, 1 << 20)
        return torch.load(tmp, map_location="cpu", weights_only=False, mmap=True)
    finally:
        os.unlink(tmp)


# ---------------------------------------------------------------- comparison
def _float_bits(value: float) -> str:
    return "nan" if math.isnan(value) else value.hex()


def compare_states(a: Any, b: Any, ignore: Iterable[str] = ("timings",), path: str = "") -> list[str]:
    """Every difference between two states, as 'path: what'; [] means bitwise identical.

    Tensors: same dtype, shape and bytes (so -0.0 != 0.0, NaN == the same NaN). Dict keys
    named in `ignore` are skipped at any depth.
    """
    ignore = tuple(ignore)
    where = path or "<root>"
    if type(a) is not type(b):
        return [f"{where}: type {type(a).__name__} != {type(b).__name__}"]
    if isinstance(a, dict):
        out = []
        keys_a = {k for k in a if k not in ignore}
        keys_b = {k for k in b if k not in ignore}
        for key in sorted(keys_a ^ keys_b, key=str):
            out.append(f"{path}.{key}: only in {'first' if key in keys_a else 'second'}")
        for key in sorted(keys_a & keys_b, key=str):
            out += compare_states(a[key], b[key], ignore, f"{path}.{key}")
        return out
    if isinstance(a, (list, tuple)):
        if len(a) != len(b):
            return [f"{where}: length {len(a)} != {len(b)}"]
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            out += compare_states(x, y, ignore, f"{path}[{i}]")
        return out
    if isinstance(a, torch.Tensor):
        if a.dtype != b.dtype or a.shape != b.shape:
            return [f"{where}: tensor {a.dtype}{tuple(a.shape)} != {b.dtype}{tuple(b.shape)}"]
        x = a.detach().cpu().contiguous().reshape(-1).view(torch.uint8)
        y = b.detach().cpu().contiguous().reshape(-1).view(torch.uint8)
        return [] if torch.equal(x, y) else [f"{where}: tensor values differ"]
    if isinstance(a, np.ndarray):
        if a.dtype != b.dtype or a.shape != b.shape or a.tobytes() != b.tobytes():
            return [f"{where}: array differs"]
        return []
    if isinstance(a, float):
        return [] if _float_bits(a) == _float_bits(b) else [f"{where}: {a!r} != {b!r}"]
    if isinstance(a, (int, str, bool, bytes, type(None))):
        return [] if a == b else [f"{where}: {a!r} != {b!r}"]
    if isinstance(a, torch.Generator):  # compare what it would draw next
        return compare_states(a.get_state(), b.get_state(), ignore, path)
    return [f"{where}: cannot compare objects of type {type(a).__name__}"]


# ---------------------------------------------------------------- run identity
def modules_sha256(names: Iterable[str]) -> str:
    """SHA-256 over the named package modules (name and bytes): the code a run depends on.
    Narrower than config.code_hash, so editing an unrelated module (a notebook helper)
    does not make a saved state unresumable."""
    digest = hashlib.sha256()
    for name in sorted(set(names)):
        digest.update(name.encode() + b"\0" + (PACKAGE_DIR / name).read_bytes())
    return digest.hexdigest()


def run_identity(config: dict, data_sha256: str, initial_model_digest: str, template: dict,
                 modules: Iterable[str] | None = None, **extra: Any) -> dict:
    """What a resumed run must share with the run that saved the state (modules: the package
    files whose code counts; None = the whole package)."""
    code = code_hash() if modules is None else modules_sha256(modules)
    return {"config_sha256": config_hash(config), "data_sha256": data_sha256,
            "code_sha256": code, "initial_model_digest": initial_model_digest,
            "template_sha256": template["sha256"], "template": template, **extra}


def identity_differences(expected: dict, found: dict) -> list[str]:
    return compare_states(expected, found, ignore=(), path="identity")


def _top_field(difference: str) -> str:
    location = difference.split(":")[0]
    parts = location.split(".")
    return parts[1].split("[")[0] if len(parts) > 1 else location


def check_identity(expected: dict, found: dict, what: str = "saved state") -> None:
    """Refuse to continue a state from another run (other config, data, code, model...)."""
    differences = identity_differences(expected, found)
    if differences:
        fields = sorted({_top_field(d) for d in differences})
        raise ValueError(f"refusing to resume: the {what} belongs to another run; differing "
                         f"identity fields: {', '.join(fields)} ({'; '.join(differences[:8])})")


# ---------------------------------------------------------------- CLI
def _state_summary(path: Path, state: dict) -> dict:
    from .model import state_dict_digest

    return {"path": str(path), "sha256": sha256_file(path), "bytes": path.stat().st_size,
            "model_digest": state_dict_digest(state["model"]) if "model" in state else None}


def verify_resume(out_dir: str | os.PathLike, branch: str) -> dict:
    """Compare {branch}-continuous with {branch}-resume; write OUT/resume-{branch}.json."""
    out = Path(out_dir)
    target = out / f"resume-{branch}.json"
    if target.exists():
        raise FileExistsError(f"{target} exists; evidence is never overwritten")
    paths = {mode: out / "checkpoints" / f"{branch}-{mode}.pt.gz" for mode in ("continuous", "resume")}
    missing = [str(p) for p in paths.values() if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"cannot verify resume of {branch}: missing {missing}; run the "
                                "branch with --mode continuous, interrupt, then resume")
    states = {mode: load_state(p) for mode, p in paths.items()}
    differences = compare_states(states["continuous"], states["resume"])
    report = {"branch": branch, "equal": not differences, "differences": differences,
              "compared": "whole state, bitwise; keys named 'timings' excluded",
              "continuous": _state_summary(paths["continuous"], states["continuous"]),
              "resume": _state_summary(paths["resume"], states["resume"])}
    save_json(target, report)
    return report


def command_verify_resume(args) -> int:
    load_config(args.config)  # validates the profile the run folder belongs to
    report = verify_resume(args.out, args.branch)
    verdict = "IDENTICAL" if report["equal"] else f"DIFFERENT ({len(report['differences'])} fields)"
    print(f"{args.branch}: continuous vs resumed state {verdict}; "
          f"state {report['resume']['bytes']:,} bytes")
    return 0 if report["equal"] else 1
