"""`python -m verifiable_grpo family SUBCOMMAND`: the family study from the shell.

lock     write the treatment lock (never replaced), or --check it against the code
run      one arm / seed / regime (continues from its newest checkpoint)
study    every pre-registered run not finished yet, plus the warm start's accuracy
analyse  the pre-registered analysis of the finished runs (also OUT/analysis.json)
status   which runs are finished, in flight (a checkpoint) or not started
export   the trimmed record of a finished study (data/recorded/part2)
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from verifiable_grpo.core import files, preregistration, runlock
from verifiable_grpo.core.config import ConfigError, provenance, resolve
from verifiable_grpo.part2 import adoption, analysis, backends, record, study
from verifiable_grpo.part2 import lock as lock_lib
from verifiable_grpo.part2.trl.study_args import SLOT_OPTIONS
from verifiable_grpo.training import samplers


def _lock(args):
    path = Path(args.lock)
    if args.check:
        lock, sha = lock_lib.read_lock(path)
        lock_lib.check_lock(lock, path=path)
        print(
            f"treatment lock {path} matches the code, the profile and the warm start "
            f"(SHA-256 {sha})"
        )
        return 0
    written = lock_lib.write_lock(lock_lib.build_lock(), path)
    print(f"wrote {written} (SHA-256 {lock_lib.read_lock(written)[1]})")
    return 0


def _runs_of(lock, args):
    arms = args.arms or list(lock["arms"])
    seeds = args.seeds or list(lock["seeds"])
    regimes = args.regimes or list(lock["regimes"])
    return [(r, a, s) for r in regimes for a in arms for s in seeds]


def finished_run(lock_file, out, arm: str, seed: int, regime: str) -> dict | None:
    """The manifest of this run when it has finished under this lock, else None.

    `family run` skips a finished run (exit 0) instead of refusing it, so a script that
    reruns every run after a crash just continues; the library call still refuses, as
    evidence is never overwritten. A manifest from another lock is refused in one line.
    """
    path = study.manifest_path(out, regime, arm, seed)
    if not path.is_file():
        return None
    manifest = files.read_json(path)
    lock_sha = lock_lib.read_lock(lock_file)[1]
    if manifest.get("lock_sha256") != lock_sha:
        raise ConfigError(
            [
                f"{path} was finished under another lock (SHA-256 "
                f"{str(manifest.get('lock_sha256'))[:12]}..., {lock_file} is {lock_sha[:12]}...); "
                "use a new --out folder"
            ]
        )
    print(f"{regime} {arm} seed {seed}: finished already ({path}); kept, nothing to do")
    return manifest


def refuse_unread_options(args, options, why: str) -> None:
    """ConfigError naming the first of `options` the user set that this way of running
    does not read: an option is honoured or refused, never silently ignored."""
    given = [name for name in options if getattr(args, name, None) not in (None, False)]
    if given:
        flag = {"trl_config": "--config"}.get(given[0], "--" + given[0].replace("_", "-"))
        raise ConfigError([f"{flag}: {why}; refused rather than ignored"])


# what --backend ours (this process, the tiny study's trainer) never reads
TRL_ONLY = ("trl_config", "accelerate_config", *SLOT_OPTIONS)


def _run(args):
    if getattr(args, "backend", backends.DEFAULT) != backends.DEFAULT:
        return backends.backend_module(args.backend).run(args)
    refuse_unread_options(args, TRL_ONLY, "read by --backend trl only")
    if args.regime is None:
        raise ConfigError(["family run needs --regime (on_policy or two_updates)"])
    started = time.perf_counter()
    finished = finished_run(args.lock, args.out, args.arm, args.seed, args.regime)
    manifest = finished or study.run_arm(
        args.lock,
        args.out,
        lock_lib.LockedRun(args.arm, args.seed, args.regime),
        stop_after=args.stop_after,
        progress=True,
    )
    if manifest is None:
        print(f"stopped after step {args.stop_after}; continue with the same command")
        return 0
    s = manifest["summary"]
    print(
        f"{args.regime} {args.arm} seed {args.seed}: held-out greedy "
        f"{s['heldout_greedy_all']:.3f} (ID50 {s['heldout_greedy_id50']:.3f}, OOD100 "
        f"{s['heldout_greedy_ood100']:.3f}), per-draw {s['heldout_per_draw_all']:.3f}, mean "
        f"ZVF {s['mean_zero_variance_fraction']:.3f}, rollouts {s['rollouts_generated']} "
        f"({s['rollouts_discarded']} discarded), {s['seconds_per_step']:.2f} s/step, "
        f"{time.perf_counter() - started:.1f} s"
    )
    return 0


def _pending(lock, args) -> list[tuple[str, str, int]]:
    return [
        (r, a, s)
        for r, a, s in _runs_of(lock, args)
        if not study.manifest_path(args.out, r, a, s).is_file()
    ]


def _study(args):
    if getattr(args, "backend", backends.DEFAULT) != backends.DEFAULT:
        module = backends.backend_module(args.backend)
        return module.run_study(args, module.runs_of(args))
    refuse_unread_options(args, TRL_ONLY, "read by --backend trl only")
    lock, sha = lock_lib.read_lock(args.lock)
    lock_lib.check_lock(lock, path=args.lock)
    for regime, arm, seed in _runs_of(lock, args):  # every requested run, before any compute
        lock_lib.check_request(lock, arm, seed, regime)
    if getattr(args, "dry_run", False):
        return dry_run(_pending(lock, args), args.out)
    if os.environ.get(runlock.PARENT_ENV):
        # a worker of a study: its parent holds OUT; it dies with it (each run folder is
        # locked by run_arm, so nothing else can train there meanwhile)
        runlock.exit_with_parent()
        return _study_here(args, lock, sha)
    now = preregistration.start_stamp(args.exploratory)  # a dirty tree: refused before OUT exists
    with runlock.locked(args.out, "family study"):
        stamp = preregistration.stamp_folder(Path(args.out), args.exploratory, now=now)
        adoption.refuse_unstamped_runs(args.out, stamp)
        return _study_here(args, lock, sha)


def dry_run(runs, out) -> int:
    """`family study --dry-run`: the runs the study would start; nothing is computed,
    locked, stamped or written."""
    print(f"dry run: {len(runs)} run(s) not finished in {out}; nothing started or written")
    for regime, arm, seed in runs:
        print(f"  {regime:12} {arm:7} seed {seed}")
    return 0


def _study_here(args, lock, sha) -> int:
    study.bind_study_folder(args.out, sha, args.lock)
    warm = study.warmstart_heldout(lock, args.out, sha)
    print(f"warm start: held-out greedy {warm['heldout']['greedy']['ALL']['success_rate']:.3f}")
    if args.workers > 1:
        return _study_in_workers(args, lock)
    for regime, arm, seed in _pending(lock, args):
        args.arm, args.seed, args.regime, args.stop_after = arm, seed, regime, None
        _run(args)
    return 0


def _study_in_workers(args, lock) -> int:
    """Split the seeds over `workers` child processes of one CPU thread each: on a small
    model two one-thread runs side by side get more done than one run on two threads.
    Each child is `family study` on its seeds (it skips finished runs, so a killed study
    continues with the same command) and exits within a second if this process dies.
    A run's numbers do not depend on its worker, but they may on the thread count: the
    manifests record the stack, this note the threads."""
    import subprocess

    seeds = args.seeds or list(lock["seeds"])
    shares = [seeds[i :: args.workers] for i in range(args.workers)]
    base = [
        sys.executable,
        "-m",
        "verifiable_grpo",
        "family",
        "study",
        "--lock",
        str(args.lock),
        "--out",
        str(args.out),
        "--workers",
        "1",
    ]
    for name in ("arms", "regimes"):
        if getattr(args, name):
            base += [f"--{name}", *map(str, getattr(args, name))]
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        runlock.PARENT_ENV: str(os.getpid()),
    }
    children = [
        subprocess.Popen(base + ["--seeds", *map(str, share)], env=env) for share in shares if share
    ]
    codes = [child.wait() for child in children]
    failed = [code for code in codes if code != 0]
    if failed:
        print(
            f"error: {len(failed)} of {len(children)} workers failed; run the same command "
            "again to continue (finished runs are kept)",
            file=sys.stderr,
        )
        return 2
    return 0


def _analyse(args):
    lock, sha = lock_lib.read_lock(args.lock)
    runs = analysis.load_manifests(args.out)
    result = analysis.analyse(lock, runs, lock_sha=sha)
    warm = Path(args.out) / "warmstart-heldout.json"
    if warm.is_file():
        result["warm_start"] = files.read_json(warm)["heldout"]["greedy"]["ALL"]
    result["lock_sha256"] = sha
    result["provenance"] = provenance()
    path = Path(args.out) / "analysis.json"
    if path.exists():
        path.unlink()  # derived from the manifests, recomputed exactly each time
    files.save_json(path, result)
    print(analysis.format_analysis(result))
    return 0


def _status(args):
    if not Path(args.out).is_dir():
        raise FileNotFoundError(
            f"--out {args.out}: no study folder there (nothing was started in it); name the "
            "folder `family study` ran in"
        )
    lock, _ = lock_lib.read_lock(args.lock)
    counts = {"finished": 0, "in flight": 0, "not started": 0}
    for regime, arm, seed in _runs_of(lock, args):
        folder = study.run_dir(args.out, regime, arm, seed)
        if (folder / "run_manifest.json").is_file():
            state = "finished"
        elif any((folder / "checkpoints").glob("checkpoint-*")):  # ours: .pt; TRL: folders
            state = "in flight"
        else:
            state = "not started"
        counts[state] += 1
        if state != "finished" or args.verbose:
            print(f"{regime:12} {arm:7} seed {seed:>3}: {state}")
    print(", ".join(f"{n} {k}" for k, n in counts.items()))
    return 0


def _export(args):
    if args.to.strip() in ("", "."):  # not the repository root it would resolve to
        raise ValueError(f"--to {args.to!r} names no record folder; give one")
    result = record.export_study(args.out, resolve(args.to), args.lock)
    print(f"recorded {args.out} in {args.to}")
    print(analysis.format_analysis(result))
    return 0


HANDLERS = {
    "lock": _lock,
    "run": _run,
    "study": _study,
    "analyse": _analyse,
    "status": _status,
    "export": _export,
}


def command_family(args) -> int:
    """Bad input and refusals (unknown arm, lock mismatch, finished run, foreign checkpoint,
    dynamic sampling exhausted) print one line naming the fix and exit 2."""
    if args.family is None:
        raise ConfigError(["family needs a subcommand: " + ", ".join(HANDLERS)])
    try:
        return HANDLERS[args.family](args)
    except (
        ValueError,
        FileExistsError,
        FileNotFoundError,
        samplers.DynamicSamplingExhausted,
    ) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
