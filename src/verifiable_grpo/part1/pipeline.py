"""`python -m verifiable_grpo run`: every stage in order, resumable, never overwriting.

Stages: data -> learning view -> warm start -> further SFT -> GRPO (each branch: continuous,
interrupt, resume, verify) -> main evaluation -> exercise (protect, G=2 and G=8 branches,
evaluation, summary) -> report.

A finished stage leaves OUT/stages/<stage>.json listing every file it created with its
SHA-256, size and mtime, the config parts it depends on and its times. Running again
checks every listed file's SHA-256, skips finished stages and continues with the first
unfinished one. A stage cut short (crash, kill -9, SIGINT/SIGTERM) is continued: training
stages from their last crash checkpoint, evaluation reuses complete inference files; the
remains of the half-done step are moved to OUT/aborted/<stage>-<time>/ with a note. Files
that no stage accounts for are refused rather than written over. One process at a time
holds the folder (OUT/.lock).
"""
from __future__ import annotations

import fnmatch
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from verifiable_grpo.core import crash, files, runlock
from verifiable_grpo.core.runfolder import MODES, RunFolder, exercise_branch, exercise_branches
from verifiable_grpo.core.config import config_hash, load_config, provenance, read_json, save_json, sections_hash
from verifiable_grpo.core.config_schema import typed
from verifiable_grpo.evaluation.evaluate import MAIN_POLICIES, utc_now
from verifiable_grpo.core.faults import fault_point
from verifiable_grpo.core.progress import tqdm

STAGES_DIR = "stages"
TIMINGS = "timings.json"
PIPELINE_FILES = (TIMINGS, runlock.LOCK_NAME)   # the pipeline's own bookkeeping
BOOKKEEPING_DIRS = (STAGES_DIR, crash.CRASH_DIR, crash.ABORTED_DIR)

# The config parts each group of stages depends on, upstream stages' parts included:
# a rerun whose config differs elsewhere keeps that stage's evidence.
_WARMSTART = ("seed", "device", "model", "data", "tokens", "warmstart")
SECTIONS = {
    "data": ("data",),
    "warmstart": _WARMSTART,
    "sft": _WARMSTART + ("sft",),
    "grpo": _WARMSTART + ("sampling", "grpo"),
    "evaluate": _WARMSTART + ("sft", "sampling", "grpo", "evaluation"),
    "exercise-branch": _WARMSTART + ("sampling", "grpo", "exercise"),
}
EVERYTHING = None                     # every key of the profile except its name


class HalfDoneStageError(RuntimeError):
    """Outputs of an unfinished stage were found; nothing is overwritten."""


@dataclass
class Stage:
    name: str
    group: str                       # what timings.json sums over (data, warmstart, ...)
    run: Callable[[dict, Path], object]
    claims: list[str] = field(default_factory=list)   # glob patterns relative to OUT
    sections: tuple | None = EVERYTHING               # config parts it depends on
    # Outputs complete although the marker is missing (killed between the two)?
    finished: Callable[[Path], bool] | None = None
    # Files of a half-done run this stage continues from instead of redoing them.
    reuse: Callable[[Path, list[str]], set[str]] = lambda out, rels: set()
    # The stage function itself continues from its crash checkpoint and moves aside what
    # came after it; the pipeline leaves its files alone.
    self_recovering: bool = False


def stage_sections(stage: Stage, config: dict) -> list[str]:
    if stage.sections is EVERYTHING:
        return sorted(k for k in config if not k.startswith("_") and k != "profile")
    return sorted(stage.sections)


# --------------------------------------------------------------------------- stage actions
def _data(config, out):
    from verifiable_grpo.task.data import write_dataset

    return write_dataset(out / "data", typed(config).data.seed)


def _learning_view(config, out):
    from verifiable_grpo.task.data import write_learning_view

    return write_learning_view(out / "data", out / "learning-data")


def _sft(branch, mode):
    def run(config, out):
        from verifiable_grpo.training.sft import run_sft_branch

        return run_sft_branch(config, out, branch, mode)
    return run


def _grpo(mode):
    def run(config, out):
        from verifiable_grpo.training.grpo import run_grpo_branch

        return run_grpo_branch(config, out, "grpo", mode)
    return run


def _verify(branch):
    def run(config, out):
        from verifiable_grpo.core.checkpoint import verify_resume

        return verify_resume(out, branch)
    return run


def _evaluate_main(config, out):
    from verifiable_grpo.evaluation.evaluate import evaluate_policies

    return evaluate_policies(config, out, MAIN_POLICIES, RunFolder(out).results)


def _exercise(step, *extra):
    def run(config, out):
        from verifiable_grpo.part1 import exercise

        return getattr(exercise, step)(config, out, *extra)
    return run


def _report(config, out):
    from verifiable_grpo.part1.report import write_report

    return write_report(config, out)


_branch_claims = RunFolder.branch_patterns


def _branch_finished(branch: str, mode: str) -> Callable[[Path], bool]:
    return lambda out: crash.branch_finished(out, branch, mode)


def _branch_stages(branch: str, group: str, action, sections) -> list[Stage]:
    stages = [Stage(f"{branch}-{mode}", group, action(mode), _branch_claims(branch, mode),
                    sections, finished=_branch_finished(branch, mode), self_recovering=True)
              for mode in MODES]
    stages.append(Stage(f"{branch}-verify", group, _verify(branch), [f"resume-{branch}.json"],
                        sections))
    return stages


def _complete_inference(out: Path, rels: list[str]) -> set[str]:
    """Inference folders whose audit matches their files are reused, not redone."""
    from verifiable_grpo.evaluation.evaluate import check_inference

    keep = set()
    for folder in sorted({"/".join(r.split("/")[:2]) for r in rels if r.startswith("inference/")}):
        try:
            complete = check_inference(out, folder.split("/")[1]) is not None
        except (ValueError, files.DamagedFileError):
            complete = False
        if complete:
            keep |= {r for r in rels if r.startswith(folder + "/")}
    return keep


def build_stages(config: dict) -> list[Stage]:
    stages = [Stage("data", "data", _data, ["data/*"], SECTIONS["data"]),
              Stage("learning-view", "data", _learning_view, ["learning-data/*"],
                    SECTIONS["data"])]
    for branch in ("warmstart", "sft"):
        stages += _branch_stages(branch, branch, lambda mode, b=branch: _sft(b, mode),
                                 SECTIONS[branch])
    stages += _branch_stages("grpo", "grpo", _grpo, SECTIONS["grpo"])
    stages.append(Stage("evaluate", "evaluate", _evaluate_main,
                        ["results.json"] + RunFolder.evaluation_patterns(MAIN_POLICIES),
                        SECTIONS["evaluate"], reuse=_complete_inference))
    stages.append(Stage("exercise-protect", "exercise", _exercise("protect"),
                        ["exercise/protected.json"]))
    for size in typed(config).exercise.group_sizes:
        branch = exercise_branch(size)
        stages += [Stage(f"{branch}-{mode}", "exercise",
                         _exercise("train_branch", size, mode), _branch_claims(branch, mode),
                         SECTIONS["exercise-branch"], finished=_branch_finished(branch, mode),
                         self_recovering=True)
                   for mode in MODES]
        stages.append(Stage(f"{branch}-verify", "exercise", _exercise("verify_branch", size),
                            [f"resume-{branch}.json"], SECTIONS["exercise-branch"]))
    stages.append(Stage("exercise-evaluate", "exercise", _exercise("evaluate_exercise"),
                        ["exercise/results.json"]
                        + RunFolder.evaluation_patterns(exercise_branches(config)),
                        reuse=_complete_inference))
    stages.append(Stage("exercise-summary", "exercise", _exercise("summarise"),
                        ["exercise/group-size.json"]))
    stages.append(Stage("report", "report", _report, ["report.md"]))
    return stages


# --------------------------------------------------------------------------- file bookkeeping
def _snapshot(out: Path) -> dict[str, tuple[int, int]]:
    """relative path -> (bytes, mtime_ns) of every file under OUT except the pipeline's own
    bookkeeping (markers, timings, lock, crash checkpoints, aborted evidence)."""
    files_ = {}
    if not out.exists():
        return files_
    for root, dirs, names in os.walk(out):
        if Path(root) == out:
            dirs[:] = [d for d in dirs if d not in BOOKKEEPING_DIRS]
        for name in names:
            path = Path(root) / name
            rel = path.relative_to(out).as_posix()
            if rel in PIPELINE_FILES:
                continue
            stat = path.stat()
            files_[rel] = (stat.st_size, stat.st_mtime_ns)
    return files_


def marker_path(out: Path, stage: str) -> Path:
    return out / STAGES_DIR / f"{stage}.json"


def _check_marker(out: Path, marker: dict, bar=None) -> None:
    """A finished stage's files must still be there with the SHA-256 its marker lists."""
    for rel, entry in marker["outputs"].items():
        path = out / rel
        if not path.is_file():
            raise HalfDoneStageError(f"{path} (output of finished stage {marker['stage']}) is "
                                     "missing; evidence cannot be rebuilt in place: use a new --out")
        if path.stat().st_size != entry["bytes"] or files.sha256_file(path) != entry["sha256"]:
            raise HalfDoneStageError(f"{path} changed after stage {marker['stage']} finished "
                                     "(its SHA-256 differs from the marker's); restore it or "
                                     "use a new --out")
        if bar is not None:
            bar.update(entry["bytes"])


def _check_markers(out: Path, markers: dict[str, dict]) -> None:
    total = sum(e["bytes"] for m in markers.values() for e in m["outputs"].values())
    bar = tqdm(total=total, desc="checking evidence", unit="B", unit_scale=True, leave=False)
    for marker in markers.values():
        _check_marker(out, marker, bar)
    bar.close()


def _orphans(out: Path, markers: dict[str, dict]) -> list[str]:
    accounted = {rel for m in markers.values() for rel in m["outputs"]}
    return sorted(set(_snapshot(out)) - accounted)


def _owner(rel: str, stages: list[Stage]) -> Stage | None:
    for stage in stages:
        if any(fnmatch.fnmatch(rel, pattern) for pattern in stage.claims):
            return stage
    return None


def _refuse_foreign(out: Path, orphans: list[str], stages: list[Stage],
                    markers: dict[str, dict]) -> None:
    """Files no unfinished stage claims were not written by this pipeline: refuse them."""
    foreign = [rel for rel in orphans
               if (owner := _owner(rel, stages)) is None or owner.name in markers]
    if not foreign:
        return
    listing = "\n  ".join(str(out / rel) for rel in foreign[:20])
    more = f"\n  ... and {len(foreign) - 20} more" if len(foreign) > 20 else ""
    raise HalfDoneStageError(
        f"{out} holds files that no stage of this pipeline accounts for:\n  {listing}{more}\n"
        "Evidence is never overwritten: move these files out of the run folder, or run with "
        "a new --out folder.")


def _recover(stage: Stage, out: Path, mine: list[str]) -> None:
    """Move aside what a half-done run of this stage left (`mine`), except the files it
    continues from; a self-recovering stage does that itself from its crash checkpoint."""
    if not mine or stage.self_recovering:
        return
    keep = stage.reuse(out, mine)
    crash.move_aside(out, stage.name, [r for r in mine if r not in keep],
                     "left by an interrupted run of this stage; the stage is redone")


def _write_marker(stage: Stage, config: dict, out: Path, outputs: list[str],
                  snapshot: dict[str, tuple[int, int]], started_at: str, seconds: float,
                  adopted: bool = False) -> dict:
    marker = {"stage": stage.name, "group": stage.group, "started_at": started_at,
              "finished_at": utc_now(), "seconds": seconds,
              "config_sections": stage_sections(stage, config),
              "config_sha256": sections_hash(config, stage_sections(stage, config)),
              "provenance": provenance(config),
              "outputs": {rel: {"sha256": files.sha256_file(out / rel),
                                "bytes": snapshot[rel][0], "mtime_ns": snapshot[rel][1]}
                          for rel in sorted(outputs)}}
    if adopted:
        marker["adopted"] = ("the stage had finished but was stopped before its marker was "
                             "written; its complete outputs were adopted")
    fault_point("before-marker")
    save_json(marker_path(out, stage.name), marker)
    crash.clear(out, stage.name)
    return marker


def _run_stage(stage: Stage, config: dict, out: Path, markers: dict[str, dict]) -> dict:
    accounted = {rel: entry for m in markers.values() for rel, entry in m["outputs"].items()}

    def unaccounted_of_this_stage(snapshot):
        return [rel for rel in snapshot
                if rel not in accounted and _owner(rel, [stage]) is not None]

    found = _snapshot(out)
    mine = unaccounted_of_this_stage(found)
    if mine and stage.finished is not None and stage.finished(out):
        return _write_marker(stage, config, out, mine, found, utc_now(), 0.0, adopted=True)
    _recover(stage, out, mine)
    before = _snapshot(out)
    started_at, started = utc_now(), time.perf_counter()
    stage.run(config, out)
    seconds = time.perf_counter() - started
    after = _snapshot(out)
    altered = sorted(rel for rel in accounted if after.get(rel) != before.get(rel))
    if altered:
        raise RuntimeError(f"stage {stage.name} changed or removed earlier evidence: {altered}")
    # what a crashed run of this stage had written and the stage continued from
    continued = [rel for rel in unaccounted_of_this_stage(before) if rel in after]
    created = set(after) - set(before)
    return _write_marker(stage, config, out, sorted(created | set(continued)), after,
                         started_at, seconds)


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
    """The finished stages' markers; refuses a config that changed a part some finished
    stage depends on, naming those stages."""
    markers, invalidated = {}, []
    by_name = {s.name: s for s in stages}
    folder = out / STAGES_DIR
    if folder.is_dir():
        for path in sorted(folder.glob("*.json")):
            marker = read_json(path)
            if marker["stage"] not in by_name:
                raise HalfDoneStageError(f"{path}: unknown stage {marker['stage']!r} (another "
                                         "configuration's stage list); use a new --out")
            sections = marker.get("config_sections")
            now = (config_hash(config) if sections is None
                   else sections_hash(config, sections))
            if marker["config_sha256"] != now:
                invalidated.append(marker["stage"])
            markers[marker["stage"]] = marker
    if invalidated:
        order = [s.name for s in stages if s.name in invalidated]
        raise HalfDoneStageError(
            f"{out} was produced with another configuration: the change invalidates the "
            f"finished stages {', '.join(order)} (each depends on the changed parts). A "
            "run folder holds one configuration: undo the change, or use a new --out")
    return markers


def _clean_temporaries(out: Path) -> None:
    removed = files.remove_temporaries(out)
    if removed:
        print(f"removed {len(removed)} temporary file(s) of writes cut short by a crash "
              f"(never evidence): {', '.join(str(p.relative_to(out)) for p in removed[:5])}")


def run_pipeline(config: dict, out_dir, stop_after: str | None = None) -> dict:
    """Run every unfinished stage in order; returns the timings. `stop_after` names a stage
    after which to stop (tests and partial runs)."""
    out = Path(out_dir)
    stages = build_stages(config)
    if stop_after is not None and stop_after not in {s.name for s in stages}:
        raise ValueError(f"unknown stage {stop_after!r}; stages: {[s.name for s in stages]}")
    with runlock.locked(out, "run") as lock:
        if lock["took_over"]:
            holder = lock["took_over"]
            print(f"{out}: the previous run (PID {holder.get('pid')}, started "
                  f"{holder.get('started_at')}) ended without releasing the folder; continuing")
        _clean_temporaries(out)
        markers = load_markers(out, stages, config)
        _check_markers(out, markers)
        _refuse_foreign(out, _orphans(out, markers), stages, markers)
        bar = tqdm(stages, desc="pipeline", unit="stage")
        for stage in bar:
            bar.set_postfix_str(stage.name)
            if stage.name not in markers:
                markers[stage.name] = _run_stage(stage, config, out, markers)
                write_timings(out, stages, markers)
            if stage.name == stop_after:
                break
        bar.close()
        return write_timings(out, stages, markers)


USER_ERRORS = (HalfDoneStageError, runlock.RunFolderBusyError, files.DamagedFileError)


def command_run(args) -> int:
    import sys

    config = load_config(args.config)
    try:  # a stop (SIGINT/SIGTERM) is reported by the CLI with the command that continues
        timings = run_pipeline(config, args.out)
    except USER_ERRORS as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
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
