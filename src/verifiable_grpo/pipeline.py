"""`python -m verifiable_grpo run`: every stage in order, resumable, never overwriting.

Stages: data -> learning view -> warm start -> further SFT -> GRPO (each branch: continuous,
interrupt, resume, verify) -> main evaluation -> exercise (protect, G=2 and G=8 branches,
evaluation, summary) -> report.

A finished stage leaves OUT/stages/<stage>.json listing every file it created with its
SHA-256, size and mtime, and its times. Running again skips finished stages (after checking
that their files are still there and unchanged in size and mtime) and continues with the
first unfinished one. Files that no marker accounts for are the remains of an interrupted
stage: the pipeline stops and names them rather than writing over them.
"""
from __future__ import annotations

import fnmatch
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .progress import tqdm

from .config import config_hash, load_config, provenance, read_json, save_json, sha256_file
from .evaluate import MAIN_POLICIES, utc_now

STAGES_DIR = "stages"
TIMINGS = "timings.json"
PIPELINE_FILES = (TIMINGS,)          # rewritten by the pipeline itself (derived summaries)
MODES = ("continuous", "interrupt", "resume")


class HalfDoneStageError(RuntimeError):
    """Outputs of an unfinished stage were found; nothing is overwritten."""


@dataclass
class Stage:
    name: str
    group: str                       # what timings.json sums over (data, warmstart, ...)
    run: Callable[[dict, Path], object]
    claims: list[str] = field(default_factory=list)   # glob patterns relative to OUT


# --------------------------------------------------------------------------- stage actions
def _data(config, out):
    from .data import write_dataset

    return write_dataset(out / "data", config["data"]["seed"])


def _learning_view(config, out):
    from .data import write_learning_view

    return write_learning_view(out / "data", out / "learning-data")


def _sft(branch, mode):
    def run(config, out):
        from .sft import run_sft_branch

        return run_sft_branch(config, out, branch, mode)
    return run


def _grpo(mode):
    def run(config, out):
        from .grpo import run_grpo_branch

        return run_grpo_branch(config, out, "grpo", mode)
    return run


def _verify(branch):
    def run(config, out):
        from .checkpoint import verify_resume

        return verify_resume(out, branch)
    return run


def _evaluate_main(config, out):
    from .evaluate import evaluate_policies

    return evaluate_policies(config, out, MAIN_POLICIES, out / "results.json")


def _exercise(step, *extra):
    def run(config, out):
        from . import exercise

        return getattr(exercise, step)(config, out, *extra)
    return run


def _report(config, out):
    from .report import write_report

    return write_report(config, out)


def _branch_claims(branch: str, mode: str) -> list[str]:
    return [f"checkpoints/{branch}-{mode}.*", f"learning/{branch}-{mode}.json",
            f"learning/{branch}-{mode}/*", f"rollouts/{branch}-{mode}/*"]


def _branch_stages(branch: str, group: str, action) -> list[Stage]:
    stages = [Stage(f"{branch}-{mode}", group, action(mode), _branch_claims(branch, mode))
              for mode in MODES]
    stages.append(Stage(f"{branch}-verify", group, _verify(branch), [f"resume-{branch}.json"]))
    return stages


def build_stages(config: dict) -> list[Stage]:
    stages = [Stage("data", "data", _data, ["data/*"]),
              Stage("learning-view", "data", _learning_view, ["learning-data/*"])]
    for branch in ("warmstart", "sft"):
        stages += _branch_stages(branch, branch, lambda mode, b=branch: _sft(b, mode))
    stages += _branch_stages("grpo", "grpo", _grpo)
    stages.append(Stage("evaluate", "evaluate", _evaluate_main,
                        ["results.json"] + [f"inference/{p}/*" for p in MAIN_POLICIES]
                        + [f"scores/{p}-{m}.json" for p in MAIN_POLICIES
                           for m in ("greedy", "sample")]))
    stages.append(Stage("exercise-protect", "exercise", _exercise("protect"),
                        ["exercise/protected.json"]))
    sizes = config["exercise"]["group_sizes"]
    for size in sizes:
        branch = f"grpo-g{size}"
        stages += [Stage(f"{branch}-{mode}", "exercise",
                         _exercise("train_branch", size, mode), _branch_claims(branch, mode))
                   for mode in MODES]
        stages.append(Stage(f"{branch}-verify", "exercise", _exercise("verify_branch", size),
                            [f"resume-{branch}.json"]))
    stages.append(Stage("exercise-evaluate", "exercise", _exercise("evaluate_exercise"),
                        ["exercise/results.json"]
                        + [f"inference/grpo-g{s}/*" for s in sizes]
                        + [f"scores/grpo-g{s}-{m}.json" for s in sizes
                           for m in ("greedy", "sample")]))
    stages.append(Stage("exercise-summary", "exercise", _exercise("summarise"),
                        ["exercise/group-size.json"]))
    stages.append(Stage("report", "report", _report, ["report.md"]))
    return stages


# --------------------------------------------------------------------------- file bookkeeping
def _snapshot(out: Path) -> dict[str, tuple[int, int]]:
    """relative path -> (bytes, mtime_ns) of every file under OUT except stage markers."""
    files = {}
    if not out.exists():
        return files
    for root, _, names in os.walk(out):
        for name in names:
            path = Path(root) / name
            rel = path.relative_to(out).as_posix()
            if rel.startswith(STAGES_DIR + "/") or rel in PIPELINE_FILES:
                continue
            stat = path.stat()
            files[rel] = (stat.st_size, stat.st_mtime_ns)
    return files


def marker_path(out: Path, stage: str) -> Path:
    return out / STAGES_DIR / f"{stage}.json"


def _check_marker(out: Path, marker: dict) -> None:
    """A finished stage's files must still be there, unchanged in size and mtime."""
    for rel, entry in marker["outputs"].items():
        path = out / rel
        if not path.is_file():
            raise HalfDoneStageError(f"{path} (output of finished stage {marker['stage']}) is "
                                     "missing; evidence cannot be rebuilt in place: use a new --out")
        stat = path.stat()
        if (stat.st_size, stat.st_mtime_ns) != (entry["bytes"], entry["mtime_ns"]):
            raise HalfDoneStageError(f"{path} changed after stage {marker['stage']} finished "
                                     "(size or mtime differs from its marker); use a new --out")


def _orphans(out: Path, markers: dict[str, dict]) -> list[str]:
    accounted = {rel for m in markers.values() for rel in m["outputs"]}
    return sorted(set(_snapshot(out)) - accounted)


def _owner(rel: str, stages: list[Stage]) -> str:
    for stage in stages:
        if any(fnmatch.fnmatch(rel, pattern) for pattern in stage.claims):
            return stage.name
    return "an unknown stage"


def _refuse_half_done(out: Path, orphans: list[str], stages: list[Stage]) -> None:
    owners = sorted({_owner(rel, stages) for rel in orphans})
    listing = "\n  ".join(str(out / rel) for rel in orphans[:20])
    more = f"\n  ... and {len(orphans) - 20} more" if len(orphans) > 20 else ""
    raise HalfDoneStageError(
        f"{out} holds files that no finished stage accounts for (an interrupted stage: "
        f"{', '.join(owners)}):\n  {listing}{more}\n"
        "Evidence is never overwritten. Remove these files to redo that stage, or run with "
        "a new --out folder.")


def _run_stage(stage: Stage, config: dict, out: Path, before: dict) -> dict:
    started_at, started = utc_now(), time.perf_counter()
    stage.run(config, out)
    seconds = time.perf_counter() - started
    after = _snapshot(out)
    altered = sorted(rel for rel, stat in before.items() if after.get(rel) != stat)
    if altered:
        raise RuntimeError(f"stage {stage.name} changed or removed earlier evidence: {altered}")
    created = sorted(set(after) - set(before))
    outputs = {rel: {"sha256": sha256_file(out / rel), "bytes": after[rel][0],
                     "mtime_ns": after[rel][1]} for rel in created}
    marker = {"stage": stage.name, "group": stage.group, "started_at": started_at,
              "finished_at": utc_now(), "seconds": seconds,
              "config_sha256": config_hash(config), "provenance": provenance(config),
              "outputs": outputs}
    save_json(marker_path(out, stage.name), marker)
    return marker


def write_timings(out: Path, stages: list[Stage], markers: dict[str, dict]) -> dict:
    """OUT/timings.json: wall time of each finished stage and of each group (derived from the
    markers, so rewriting it loses nothing)."""
    per_stage = {s.name: markers[s.name]["seconds"] for s in stages if s.name in markers}
    groups: dict[str, float] = {}
    for s in stages:
        if s.name in markers:
            groups[s.group] = groups.get(s.group, 0.0) + markers[s.name]["seconds"]
    timings = {"stages": per_stage, "groups": groups, "total_seconds": sum(per_stage.values()),
               "finished_stages": len(per_stage), "all_stages": len(stages),
               "note": "wall-clock seconds of each stage as it ran; a stage skipped on a later "
                       "run keeps its first time"}
    save_json(out / TIMINGS, timings, overwrite=True)
    return timings


def load_markers(out: Path, stages: list[Stage], config: dict) -> dict[str, dict]:
    markers = {}
    known = {s.name for s in stages}
    folder = out / STAGES_DIR
    if folder.is_dir():
        for path in sorted(folder.glob("*.json")):
            marker = read_json(path)
            if marker["stage"] not in known:
                raise HalfDoneStageError(f"{path}: unknown stage {marker['stage']!r}")
            if marker["config_sha256"] != config_hash(config):
                raise HalfDoneStageError(
                    f"{out} was produced with another configuration (stage {marker['stage']}); "
                    "a run folder holds one configuration: use a new --out")
            markers[marker["stage"]] = marker
    return markers


def run_pipeline(config: dict, out_dir, stop_after: str | None = None) -> dict:
    """Run every unfinished stage in order; returns the timings. `stop_after` names a stage
    after which to stop (tests and partial runs)."""
    out = Path(out_dir)
    stages = build_stages(config)
    if stop_after is not None and stop_after not in {s.name for s in stages}:
        raise ValueError(f"unknown stage {stop_after!r}; stages: {[s.name for s in stages]}")
    out.mkdir(parents=True, exist_ok=True)
    markers = load_markers(out, stages, config)
    for marker in markers.values():
        _check_marker(out, marker)
    orphans = _orphans(out, markers)
    if orphans:
        _refuse_half_done(out, orphans, stages)
    bar = tqdm(stages, desc="pipeline", unit="stage")
    for stage in bar:
        bar.set_postfix_str(stage.name)
        if stage.name not in markers:
            markers[stage.name] = _run_stage(stage, config, out, _snapshot(out))
            write_timings(out, stages, markers)
        if stage.name == stop_after:
            break
    bar.close()
    return write_timings(out, stages, markers)


def command_run(args) -> int:
    config = load_config(args.config)
    timings = run_pipeline(config, args.out)
    print(f"run folder {args.out}: {timings['finished_stages']}/{timings['all_stages']} stages "
          f"finished; stage wall time {timings['total_seconds']:.1f} s")
    for group, seconds in timings["groups"].items():
        print(f"  {group:10s} {seconds:9.1f} s")
    print(f"report: {Path(args.out) / 'report.md'}")
    different = [p.stem for p in sorted(Path(args.out).glob("resume-*.json"))
                 if not read_json(p)["equal"]]
    if different:
        print(f"WARNING: continuous and resumed states differ for {different}; see "
              "OUT/resume-<branch>.json")
        return 1
    return 0
