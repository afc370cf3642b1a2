"""Full resume states: RNG streams, gzip'd torch files, bitwise comparison, run identity.

A state saved at a boundary and loaded in a new process must let the run continue exactly
as if it had never stopped. compare_states proves it: every tensor, number and string of
a continuous run's final state equals the resumed run's, bit for bit (wall-clock timings,
stored under "timings", are the only thing left out).
"""

from __future__ import annotations

import gzip
import math
import os
import pickle
import random
import shutil
import tempfile
import time
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from verifiable_grpo.core import files
from verifiable_grpo.core.config import load_config, save_json, sha256_file
from verifiable_grpo.core.faults import fault_point


# ---------------------------------------------------------------- RNG streams
def capture_rng() -> dict:
    """Python, NumPy, torch CPU and (when present) every CUDA device's generator state, as
    plain data and tensors only, so a state loads with torch.load(weights_only=True)."""
    kind, keys, position, has_gauss, cached = np.random.get_state()
    return {
        "python": random.getstate(),
        "numpy": {
            "bit_generator": kind,
            "keys": torch.from_numpy(keys.astype(np.int64)),
            "pos": int(position),
            "has_gauss": int(has_gauss),
            "cached_gaussian": float(cached),
        },
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
    }


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy and torch (CPU and CUDA): a run must not depend on the RNG state
    its process happened to start with (Python and NumPy seed themselves from the OS)."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def _python_rng(saved) -> tuple:
    """random.setstate needs tuples; a state that went through a list-only format is fixed."""
    version, internal, gauss = saved
    return (version, tuple(internal), gauss)


def restore_rng(state: dict) -> None:
    random.setstate(_python_rng(state["python"]))
    saved = state["numpy"]
    np.random.set_state(
        (
            saved["bit_generator"],
            saved["keys"].numpy().astype(np.uint32),
            saved["pos"],
            saved["has_gauss"],
            saved["cached_gaussian"],
        )
    )
    torch.set_rng_state(state["torch"])
    if state.get("cuda") is not None:
        if not torch.cuda.is_available():
            raise ValueError(
                "this state holds CUDA RNG streams but no CUDA device is available; "
                "resume on the kind of machine that saved it"
            )
        torch.cuda.set_rng_state_all(state["cuda"])


# ---------------------------------------------------------------- files
class UnsafeStateError(ValueError):
    """A state file holds something other than tensors and plain data (code could run)."""


def _torch_save_gzip(state: dict, target: Path) -> None:
    with open(target, "wb") as raw:
        # mtime=0: the gzip header then depends on the content only.
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=1, mtime=0) as handle:
            torch.save(state, handle)


def save_state(path: str | os.PathLike, state: dict, compress: bool = True) -> dict:
    """torch.save (gzip level 1 unless compress=False), atomically; refuses to overwrite.
    -> {"bytes","seconds","sha256"}."""
    path = Path(path)
    start = time.perf_counter()

    def write(tmp: Path) -> None:
        _torch_save_gzip(state, tmp) if compress else torch.save(state, tmp)
        fault_point("inside-state-write")  # the bytes are written, not yet published

    files.write_with(path, write)
    seconds = time.perf_counter() - start
    return {"bytes": path.stat().st_size, "seconds": seconds, "sha256": sha256_file(path)}


def _unpickler_reason(err: Exception) -> str:
    lines = [line.strip() for line in str(err).splitlines() if "WeightsUnpickler" in line]
    return (lines[0] if lines else str(err).splitlines()[0])[:200]


def safe_torch_load(path: Path, shown: Path) -> dict:
    """torch.load with weights_only=True: tensors and plain data only, never code."""
    try:
        return torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except pickle.UnpicklingError as err:
        raise UnsafeStateError(
            f"{shown}: refused to load: the file holds objects other than tensors and plain "
            "data (a pickled callable could run code); this project never writes such "
            f"states, so the file was not written by it ({_unpickler_reason(err)})"
        ) from err
    except (RuntimeError, EOFError, OSError, ValueError) as err:
        raise files.DamagedFileError(
            f"{shown} is damaged and cannot be read as a saved state "
            f"({type(err).__name__}: {str(err)[:200]})"
        ) from err


def load_state(path: str | os.PathLike, expected_sha256: str | None = None) -> dict:
    """Load a state this project wrote; `expected_sha256` (from the record or stage marker
    that listed the file) is checked before a single byte is unpickled.

    Only tensors and plain data load (weights_only=True). A gzip'd state is first inflated
    to a temporary file in the system's temporary folder (never in the run folder): torch's
    zip reader seeks, which a gzip stream can only do by re-reading from the start. Tensors
    are memory-mapped from that file (unlinked at once; the mapping keeps it alive), so
    comparing two full 0.5B states does not need both in RAM.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no saved state {path}")
    files.check_sha256(path, expected_sha256, "saved state")
    if not path.name.endswith(".gz"):
        return safe_torch_load(path, path)
    fd, tmp = tempfile.mkstemp(suffix=".pt", prefix="verifiable-grpo-state-")
    try:
        try:
            with os.fdopen(fd, "wb") as out, gzip.open(path, "rb") as handle:
                shutil.copyfileobj(handle, out, 1 << 20)
        except (OSError, EOFError, zlib.error) as err:
            raise files.DamagedFileError(
                f"{path} is damaged: its gzip stream cannot be read ({type(err).__name__}: {err})"
            ) from err
        return safe_torch_load(Path(tmp), path)
    finally:
        os.unlink(tmp)


# ---------------------------------------------------------------- comparison
def _float_bits(value: float) -> str:
    return "nan" if math.isnan(value) else value.hex()


def compare_states(
    a: Any, b: Any, ignore: Iterable[str] = ("timings",), path: str = ""
) -> list[str]:
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
        raise ValueError(
            f"refusing to resume: the {what} belongs to another run; differing "
            f"identity fields: {', '.join(fields)} ({'; '.join(differences[:8])})"
        )


# ---------------------------------------------------------------- CLI
def _state_summary(path: Path, state: dict) -> dict:
    from verifiable_grpo.core.model import state_dict_digest

    return {
        "path": str(path),
        "sha256": sha256_file(path),
        "bytes": path.stat().st_size,
        "model_digest": state_dict_digest(state["model"]) if "model" in state else None,
    }


def verify_resume(out_dir: str | os.PathLike, branch: str) -> dict:
    """Compare {branch}-continuous with {branch}-resume; write OUT/resume-{branch}.json."""
    out = Path(out_dir)
    from verifiable_grpo.core.runfolder import RunFolder

    folder = RunFolder(out)
    target = folder.resume_check(branch)
    if target.exists():
        raise FileExistsError(f"{target} exists; evidence is never overwritten")
    paths = {mode: folder.state(branch, mode) for mode in ("continuous", "resume")}
    missing = [str(p) for p in paths.values() if not p.is_file()]
    if missing:
        raise FileNotFoundError(
            f"cannot verify resume of {branch}: missing {missing}; run the "
            "branch with --mode continuous, interrupt, then resume"
        )
    states = {
        mode: load_state(p, folder.recorded_state_sha256(branch, mode)) for mode, p in paths.items()
    }
    differences = compare_states(states["continuous"], states["resume"])
    report = {
        "branch": branch,
        "equal": not differences,
        "differences": differences,
        "compared": "whole state, bitwise; keys named 'timings' excluded",
        "continuous": _state_summary(paths["continuous"], states["continuous"]),
        "resume": _state_summary(paths["resume"], states["resume"]),
    }
    save_json(target, report)
    return report


def command_verify_resume(args) -> int:
    from verifiable_grpo.core.runfolder import check_branch

    check_branch(load_config(args.config), args.branch)  # the profile names its branches
    report = verify_resume(args.out, args.branch)
    verdict = "IDENTICAL" if report["equal"] else f"DIFFERENT ({len(report['differences'])} fields)"
    print(
        f"{args.branch}: continuous vs resumed state {verdict}; "
        f"state {report['resume']['bytes']:,} bytes"
    )
    return 0 if report["equal"] else 1
