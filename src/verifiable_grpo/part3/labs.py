"""`python -m verifiable_grpo lab NAME`: run one Part III lab and record its metrics.

A lab is one row of LABS: its name, the function that runs it ("module:function" under
verifiable_grpo.part3) and a one-line description. Its settings come from
configs/part3/NAME.yaml (keyword arguments of that function; the recorded values), so the
config SHA-256 in the provenance names exactly what ran. Adding a lab is one line here and
one YAML file, plus its settings schema in part3/lab_settings.py (checked before any
compute).
"""
from __future__ import annotations

import importlib
import shutil
import signal
import sys
import time
from pathlib import Path

from verifiable_grpo.core import runlock
from verifiable_grpo.core.config import (ConfigError, canonical_json, provenance, read_json,
                                         read_yaml, repo_root, save_json, sha256_bytes)

LABS = {
    "reward-model": ("best_of_n:run_reward_lab", "Lab 3: Bradley-Terry reward model, calibration, best-of-n"),
    "dpo": ("dpo:run_lab", "Lab 4: DPO on a bandit and on the digit policy"),
    "expert-iteration": ("group_relative:run_lab", "Lab 5: expert iteration vs GRPO, substring verifier"),
    "judge": ("judge:simulate_judge", "Lab 6: simulated judge with position and length bias"),
    "fault-tree": ("fault_tree:run_exercise", "the fault-tree reward exercise"),
    "merging": ("merge_lab:run_lab", "model merging on two fine-tunes of the digit policy"),
    "try-this": ("try_this:run_lab", "the course's Try-this variants of Labs 3 to 6 that fit a CPU"),
    "sft-packing": ("try_this_packing:run_packing_lab",
                    "Lab 1, Try this: padded vs packed conversations on SmolLM2-135M (loss, slots)"),
}
RECORDED = Path("data/recorded/part3")


def lab_function(name: str):
    if name not in LABS:
        raise ValueError(f"unknown lab {name!r}; choose one of {sorted(LABS)}")
    module, function = LABS[name][0].split(":")
    return getattr(importlib.import_module(f"verifiable_grpo.part3.{module}"), function)


def load_settings(name: str, path: str | Path | None = None) -> tuple[dict, Path]:
    """The lab's settings (default configs/part3/NAME.yaml), checked against its schema
    (part3/lab_settings.py) before any compute; ConfigError names the file and the key."""
    from verifiable_grpo.part3 import lab_settings

    lab_function(name)
    path = Path(path) if path else repo_root() / "configs" / "part3" / f"{name}.yaml"
    if not path.exists():
        raise ValueError(f"no settings file {path}; create it or pass --settings PATH")
    return lab_settings.check(name, read_yaml(path), str(path)), path


def run(name: str, out: str | Path | None = None, settings_path=None, threads: int = 1,
        command: list[str] | None = None) -> Path:
    """Run the lab and write OUT/metrics.json = {metrics, settings, provenance}. The settings,
    OUT (a folder this process alone holds: OUT/.lock) and the threads are checked first."""
    settings, path = load_settings(name, settings_path)
    out = Path(out) if out else repo_root() / "runs" / "part3" / name
    if type(threads) is not int or threads < 1:
        raise ValueError(f"threads must be a positive integer, got {threads!r}")
    with runlock.locked(out, f"lab {name}"):
        target = out / "metrics.json"
        if target.exists():
            raise ValueError(f"{target} exists: evidence is never overwritten; remove it or "
                             f"pass another --out")
        return _run_held(name, settings, path, target, threads, command)


def _run_held(name, settings, path, target, threads, command) -> Path:
    import torch   # here, not at the top: `--help` must not load torch

    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        started = time.perf_counter()
        metrics = lab_function(name)(**settings)
        wall = time.perf_counter() - started
        record = provenance(command=command)   # records cpu_threads = threads
    finally:
        torch.set_num_threads(previous)        # a caller's process keeps its own setting
    record.update(config_path=_relative(path), config_sha256=sha256_bytes(canonical_json(settings)),
                  wall_seconds=round(wall, 3), lab=name)
    save_json(target, {"lab": name, "settings": settings, "metrics": metrics, "provenance": record})
    return target


def _relative(path: Path) -> str:
    try:
        return path.resolve().relative_to(repo_root()).as_posix()
    except ValueError:
        return str(path)


def export(name: str, source: str | Path | None = None, dest: str | Path | None = None) -> Path:
    """Copy a finished run's metrics.json to data/recorded/part3/NAME.json (refuses to
    overwrite a recorded file)."""
    source = Path(source) if source else repo_root() / "runs" / "part3" / name / "metrics.json"
    dest = Path(dest) if dest else repo_root() / RECORDED / f"{name}.json"
    if not source.is_file():
        raise ValueError(f"no metrics at {source}: run `python -m verifiable_grpo lab {name}` first")
    if read_json(source).get("lab") != name:
        raise ValueError(f"{source} records another lab than {name!r}")
    if dest.exists():
        raise ValueError(f"{dest} exists: recorded evidence is never overwritten")
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, dest)
    return dest


def recorded(name: str) -> dict:
    """The recorded metrics of a lab (what the chapters display)."""
    lab_function(name)
    path = repo_root() / RECORDED / f"{name}.json"
    if not path.is_file():
        raise ValueError(f"no recorded results at {path}: run the lab, then "
                         f"`python -m verifiable_grpo lab {name} --export`")
    return read_json(path)


def _stop_at_once(number, frame):
    raise KeyboardInterrupt(signal.Signals(number).name)


def _command(args, threads: int) -> list[str]:
    """The command line that reproduces this run (from the parsed arguments, so it is
    right however main() was called)."""
    words = ["python", "-m", "verifiable_grpo", "lab", args.name]
    for flag, value in (("--out", args.out), ("--settings", args.settings)):
        if value:
            words += [flag, str(value)]
    words += ["--threads", str(threads)] + (["--export"] if args.export else [])
    return words


def command_lab(args) -> int:
    from verifiable_grpo.part3.model_labs import MODEL_LABS, MODEL_ONLY, command

    if args.name in MODEL_LABS:
        return command(args)
    given = [f"--{flag.replace('_', '-')}" for flag in MODEL_ONLY if getattr(args, flag, None)]
    if given:
        print(f"error: {', '.join(given)} belong(s) to the model labs ({', '.join(MODEL_LABS)}); "
              f"lab {args.name} reads configs/part3/{args.name}.yaml (or --settings)",
              file=sys.stderr)
        return 2
    # A lab writes its metrics once, at the end, atomically: a signal can stop it at once
    # (the CLI's graceful stop would wait for a safe point that a lab never reaches).
    for number in (signal.SIGINT, signal.SIGTERM):
        try:
            signal.signal(number, _stop_at_once)
        except ValueError:      # not the main thread: leave signals alone
            pass
    try:
        if args.export_only:
            print(export(args.name, args.out and Path(args.out) / "metrics.json"))
            return 0
        # one thread unless told: these models are tiny, and one thread is fastest for them
        threads = args.threads or 1
        target = run(args.name, args.out, args.settings, threads, command=_command(args, threads))
        print(target)
        if args.export:
            print(export(args.name, target))
    except ConfigError:
        raise   # the CLI prints it: one line per problem, exit 2
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


def record_line(name: str) -> str:
    """The reader's line on where a chapter's numbers come from: the lab's command and how
    long the recorded run took (the commit, versions and threads stay in the record and
    the book's provenance appendix)."""
    record = recorded(name)["provenance"]
    wall = record["wall_seconds"]
    took = f"{wall:.1f} s" if wall >= 0.1 else "under 0.1 s"
    return (f"recorded with `python -m verifiable_grpo lab {name} --export` on a "
            f"{record['device'].upper()} in {took}")


def provenance_line(name: str) -> str:
    """One line naming where a chapter's recorded numbers come from."""
    record = recorded(name)["provenance"]
    return (f"recorded by `{record['command']}` at commit {str(record['git_commit'])[:10]}, "
            f"torch {record['packages'].get('torch')}, {record['cpu_threads']} thread(s), "
            f"{record['device']}, {record['wall_seconds']:.1f} s")
