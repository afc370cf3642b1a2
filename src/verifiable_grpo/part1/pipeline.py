"""`python -m verifiable_grpo run`: every stage in order, resumable, never overwriting.

The stages, their files and their order are part1.stages's table; this module runs it.

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
from dataclasses import dataclass
from pathlib import Path

from verifiable_grpo.core import crash, files, interrupts, runlock, state_digests
from verifiable_grpo.core.config import (
    config_hash,
    load_config,
    provenance,
    read_json,
    save_json,
    sections_hash,
)
from verifiable_grpo.core.config_schema import Profile
from verifiable_grpo.core.faults import fault_point
from verifiable_grpo.core.progress import tqdm
from verifiable_grpo.evaluation.evaluate import utc_now
from verifiable_grpo.part1 import run_plan
from verifiable_grpo.part1.side_by_side import (
    StageGraph,
    StageHooks,
    WorkerDied,
    run_side_by_side,
)
from verifiable_grpo.part1.stages import Stage, build_stages, stage_needs, stage_sections

STAGES_DIR = "stages"
TIMINGS = "timings.json"
PIPELINE_FILES = (TIMINGS, runlock.LOCK_NAME)  # the pipeline's own bookkeeping
BOOKKEEPING_DIRS = (STAGES_DIR, crash.CRASH_DIR, crash.ABORTED_DIR)


class HalfDoneStageError(RuntimeError):
    """Outputs of an unfinished stage were found; nothing is overwritten."""


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
            # a write in flight (a stage running beside this one) is never evidence, and
            # may be renamed away between the listing and the stat
            if rel in PIPELINE_FILES or name.startswith(files.TEMP_PREFIX):
                continue
            try:
                stat = path.stat()
            except FileNotFoundError:
                continue
            files_[rel] = (stat.st_size, stat.st_mtime_ns)
    return files_


def marker_path(out: Path, stage: str) -> Path:
    return out / STAGES_DIR / f"{stage}.json"


def _check_marker(out: Path, marker: dict, bar=None) -> None:
    """A finished stage's files must still be there with the SHA-256 its marker lists."""
    for rel, entry in marker["outputs"].items():
        path = files.inside(out, rel, f"marker of stage {marker['stage']}: output")
        if state_digests.vouched_for(out, rel, entry):
            continue  # a state reduced to its digest record (keep_states digest)
        if not path.is_file():
            raise HalfDoneStageError(
                f"{path} (output of finished stage {marker['stage']}) is "
                "missing; evidence cannot be rebuilt in place: use a new --out"
            )
        if path.stat().st_size != entry["bytes"] or files.sha256_file(path) != entry["sha256"]:
            raise HalfDoneStageError(
                f"{path} changed after stage {marker['stage']} finished "
                "(its SHA-256 differs from the marker's); restore it or "
                "use a new --out"
            )
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


def _refuse_foreign(
    out: Path, orphans: list[str], stages: list[Stage], markers: dict[str, dict]
) -> None:
    """Files no unfinished stage claims were not written by this pipeline: refuse them."""
    foreign = [
        rel for rel in orphans if (owner := _owner(rel, stages)) is None or owner.name in markers
    ]
    if not foreign:
        return
    listing = "\n  ".join(str(out / rel) for rel in foreign[:20])
    more = f"\n  ... and {len(foreign) - 20} more" if len(foreign) > 20 else ""
    raise HalfDoneStageError(
        f"{out} holds files that no stage of this pipeline accounts for:\n  {listing}{more}\n"
        "Evidence is never overwritten: move these files out of the run folder, or run with "
        "a new --out folder."
    )


def _recover(stage: Stage, out: Path, mine: list[str]) -> None:
    """Move aside what a half-done run of this stage left (`mine`), except the files it
    continues from; a self-recovering stage does that itself from its crash checkpoint."""
    if not mine or stage.self_recovering:
        return
    keep = stage.reuse(out, mine)
    crash.move_aside(
        out,
        stage.name,
        [r for r in mine if r not in keep],
        "left by an interrupted run of this stage; the stage is redone",
    )


@dataclass(frozen=True)
class _Finished:
    """What a stage's marker records of its run: its output files (relative paths) with
    their (bytes, mtime_ns) snapshot, when it started, its seconds, and whether a stopped
    run's complete outputs were adopted instead of run again."""

    outputs: list[str]
    snapshot: dict[str, tuple[int, int]]
    started_at: str
    seconds: float
    adopted: bool = False


def _write_marker(stage: Stage, config: Profile, out: Path, done: _Finished) -> dict:
    outputs, snapshot = done.outputs, done.snapshot
    marker = {
        "stage": stage.name,
        "group": stage.group,
        "started_at": done.started_at,
        "finished_at": utc_now(),
        "seconds": done.seconds,
        "config_sections": stage_sections(stage, config),
        "config_sha256": sections_hash(config, stage_sections(stage, config)),
        "provenance": provenance(config),
        "outputs": {
            rel: {
                "sha256": files.sha256_file(out / rel),
                "bytes": snapshot[rel][0],
                "mtime_ns": snapshot[rel][1],
            }
            for rel in sorted(outputs)
        },
    }
    if done.adopted:
        marker["adopted"] = (
            "the stage had finished but was stopped before its marker was "
            "written; its complete outputs were adopted"
        )
    fault_point("before-marker")
    save_json(marker_path(out, stage.name), marker)
    crash.clear(out, stage.name)
    return marker


@dataclass
class _Started:
    """What the pipeline notes about a stage before it runs, to write its marker after."""

    stage: Stage
    accounted: dict
    before: dict
    started_at: str
    started: float


def _start_stage(
    stage: Stage, config: Profile, out: Path, markers: dict[str, dict]
) -> _Started | dict:
    """Recover what a half-done run of the stage left; returns the marker at once when that
    run had in fact finished (adopted), else what _end_stage needs."""
    accounted = {rel: entry for m in markers.values() for rel, entry in m["outputs"].items()}
    found = _snapshot(out)
    mine = _unaccounted(stage, found, accounted)
    if mine and stage.finished is not None and stage.finished(out):
        adopted = _Finished(mine, found, utc_now(), 0.0, adopted=True)
        return _write_marker(stage, config, out, adopted)
    _recover(stage, out, mine)
    return _Started(stage, accounted, _snapshot(out), utc_now(), time.perf_counter())


def _unaccounted(stage: Stage, snapshot: dict, accounted: dict) -> list[str]:
    """Files no finished stage lists that this stage's claims cover (stages running beside
    it write only under their own claims)."""
    return [rel for rel in snapshot if rel not in accounted and _owner(rel, [stage]) is not None]


def _end_stage(
    started: _Started,
    config: Profile,
    out: Path,
    others: bool = False,
    seconds: float | None = None,
) -> dict:
    """The marker of a stage that ran; `others`: stages ran beside it; `seconds`: its own
    time as the worker measured it (default: since it started here)."""
    stage, before = started.stage, started.before
    if seconds is None:
        seconds = time.perf_counter() - started.started
    after = _snapshot(out)
    altered = sorted(
        rel
        for rel, entry in started.accounted.items()
        if after.get(rel) != before.get(rel) and not state_digests.vouched_for(out, rel, entry)
    )
    if altered:
        raise RuntimeError(f"stage {stage.name} changed or removed earlier evidence: {altered}")
    # what a crashed run of this stage had written and the stage continued from
    continued = [rel for rel in _unaccounted(stage, before, started.accounted) if rel in after]
    # New files: this stage's claims; anything else new is left to the stage (running beside
    # it) that claims it. A stage's new files all fall under its claims (a smoke-run test
    # checks it), so nothing is left unaccounted.
    created = {
        rel for rel in set(after) - set(before) if not others or _owner(rel, [stage]) is not None
    }
    ran = _Finished(sorted(created | set(continued)), after, started.started_at, seconds)
    return _write_marker(stage, config, out, ran)


def stage_threads(stage: Stage, config: Profile) -> int | None:
    return getattr(config.threads, stage.threads)


def _run_stage(stage: Stage, config: Profile, out: Path, markers: dict[str, dict]) -> dict:
    """One stage in this process, with its threads."""
    started = _start_stage(stage, config, out, markers)
    if isinstance(started, dict):
        return started
    with _torch_threads(stage_threads(stage, config)):
        stage.run(config, out)
    return _end_stage(started, config, out)


class _torch_threads:
    """torch.set_num_threads for the duration of a stage (None: leave as it is)."""

    def __init__(self, threads: int | None):
        self.threads, self.previous = threads, None

    def __enter__(self):
        if self.threads is not None:
            import torch

            self.previous = torch.get_num_threads()
            torch.set_num_threads(self.threads)

    def __exit__(self, *exc):
        if self.previous is not None:
            import torch

            torch.set_num_threads(self.previous)


def elapsed_seconds(markers) -> float:
    """From the first stage's start to the last stage's end, by the markers' clocks."""
    from datetime import datetime

    ran = [m for m in markers if not m.get("adopted")]
    if not ran:
        return 0.0
    first = min(datetime.fromisoformat(m["started_at"]) for m in ran)
    last = max(datetime.fromisoformat(m["finished_at"]) for m in ran)
    return (last - first).total_seconds()


def write_timings(out: Path, stages: list[Stage], markers: dict[str, dict]) -> dict:
    """OUT/timings.json: wall time of each finished stage and of each group (derived from the
    markers, so rewriting it loses nothing)."""
    per_stage = {s.name: markers[s.name]["seconds"] for s in stages if s.name in markers}
    groups: dict[str, float] = {}
    for s in stages:
        if s.name in markers:
            groups[s.group] = groups.get(s.group, 0.0) + markers[s.name]["seconds"]
    timings = {
        "stages": per_stage,
        "groups": groups,
        "total_seconds": sum(per_stage.values()),
        "elapsed_seconds": elapsed_seconds(markers.values()),
        "finished_stages": len(per_stage),
        "all_stages": len(stages),
        "note": "wall-clock seconds of each stage as it ran (stages side by side "
        "overlap, so they sum to more than the elapsed time); a stage skipped "
        "on a later run keeps its first time; elapsed: first start to last "
        "finish (across runs, if the folder was continued)",
    }
    save_json(out / TIMINGS, timings, overwrite=True)
    return timings


def load_markers(out: Path, stages: list[Stage], config: Profile) -> dict[str, dict]:
    """The finished stages' markers; refuses a config that changed a part some finished
    stage depends on, naming those stages."""
    markers, invalidated = {}, []
    by_name = {s.name: s for s in stages}
    folder = out / STAGES_DIR
    if folder.is_dir():
        for path in sorted(folder.glob("*.json")):
            marker = read_json(path)
            if marker["stage"] not in by_name:
                raise HalfDoneStageError(
                    f"{path}: unknown stage {marker['stage']!r} (another "
                    "configuration's stage list); use a new --out"
                )
            sections = marker.get("config_sections")
            now = config_hash(config) if sections is None else sections_hash(config, sections)
            if marker["config_sha256"] != now:
                invalidated.append(marker["stage"])
            markers[marker["stage"]] = marker
    if invalidated:
        order = [s.name for s in stages if s.name in invalidated]
        raise HalfDoneStageError(
            f"{out} was produced with another configuration: the change invalidates the "
            f"finished stages {', '.join(order)} (each depends on the changed parts). A "
            "run folder holds one configuration: undo the change, or use a new --out"
        )
    return markers


def _clean_temporaries(out: Path) -> None:
    removed = files.remove_temporaries(out)
    if removed:
        print(
            f"removed {len(removed)} temporary file(s) of writes cut short by a crash "
            f"(never evidence): {', '.join(str(p.relative_to(out)) for p in removed[:5])}"
        )


def run_pipeline(config: Profile, out_dir, stop_after: str | None = None, workers: int = 1) -> dict:
    """Run every unfinished stage; returns the timings. `stop_after` names a stage after
    which to stop (tests and partial runs). workers > 1: stages side by side in that many
    worker processes (part1.side_by_side), each with its own threads as alone."""
    out = Path(out_dir)
    stages = build_stages(config)
    if stop_after is not None and stop_after not in {s.name for s in stages}:
        raise ValueError(f"unknown stage {stop_after!r}; stages: {[s.name for s in stages]}")
    if type(workers) is not int or workers < 1:
        raise ValueError(f"workers must be a positive integer, got {workers!r}")
    with runlock.locked(out, "run") as lock:
        if lock["took_over"]:
            holder = lock["took_over"]
            print(
                f"{out}: the previous run (PID {holder.get('pid')}, started "
                f"{holder.get('started_at')}) ended without releasing the folder; continuing"
            )
        _clean_temporaries(out)
        markers = load_markers(out, stages, config)
        _check_markers(out, markers)
        _refuse_foreign(out, _orphans(out, markers), stages, markers)
        if workers > 1:
            _run_side_by_side(stages, config, out, markers, workers, stop_after)
            return write_timings(out, stages, markers)
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


def _execute_in_worker(name: str, config: Profile, out: str, threads: int | None) -> float:
    """A worker process's part: run one stage (as alone, with its threads); its seconds."""
    stage = {s.name: s for s in build_stages(config)}[name]
    started = time.perf_counter()
    with interrupts.graceful_stop(), _torch_threads(threads):
        stage.run(config, Path(out))
    return time.perf_counter() - started


def _run_side_by_side(
    stages: list[Stage],
    config: Profile,
    out: Path,
    markers: dict[str, dict],
    workers: int,
    stop_after: str | None,
) -> None:
    names = [s.name for s in stages]
    if stop_after is not None:
        names = names[: names.index(stop_after) + 1]
    by_name = {s.name: s for s in stages}
    needs = stage_needs(stages)
    bar = tqdm(total=len(names), desc=f"pipeline ({workers} workers)", unit="stage")
    bar.update(sum(1 for n in names if n in markers))

    def start(name):
        started = _start_stage(by_name[name], config, out, markers)
        if isinstance(started, dict):  # adopted: had finished
            markers[name] = started
            write_timings(out, stages, markers)
            bar.update(1)
            return None
        return started

    def end(name, started, seconds):
        markers[name] = _end_stage(started, config, out, others=True, seconds=seconds)
        write_timings(out, stages, markers)
        bar.update(1)

    def progress(running, _finished):
        bar.set_postfix_str(", ".join(running))

    threads = {n: stage_threads(by_name[n], config) for n in names}
    try:
        run_side_by_side(
            StageGraph(names, needs, threads, {n: by_name[n].cost for n in names}),
            set(markers),
            workers,
            StageHooks(
                start,
                end,
                lambda n: (_execute_in_worker, (n, config, str(out), threads[n])),
                progress,
            ),
        )
    finally:
        bar.close()


USER_ERRORS = (HalfDoneStageError, runlock.RunFolderError, files.DamagedFileError, WorkerDied)


def command_run(args) -> int:
    import sys

    config = load_config(args.config)
    if getattr(args, "dry_run", False):
        return run_plan.command_plan(args)
    run_plan.check_memory(config)  # before the warm start trains, not after it
    try:  # a stop (SIGINT/SIGTERM) is reported by the CLI with the command that continues
        timings = run_pipeline(config, args.out, workers=args.workers)
    except USER_ERRORS as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(
        f"run folder {args.out}: {timings['finished_stages']}/{timings['all_stages']} stages "
        f"finished; elapsed {timings['elapsed_seconds']:.1f} s (stage times summed "
        f"{timings['total_seconds']:.1f} s, {args.workers} worker(s))"
    )
    for group, seconds in timings["groups"].items():
        print(f"  {group:10s} {seconds:9.1f} s")
    print(f"report: {Path(args.out) / 'report.md'}")
    different = [
        p.stem for p in sorted(Path(args.out).glob("resume-*.json")) if not read_json(p)["equal"]
    ]
    if different:
        print(
            f"WARNING: continuous and resumed states differ for {different}; see "
            "OUT/resume-<branch>.json"
        )
        return 1
    return 0
