"""`family run|study --backend trl`: the shell side of the TRL backend.

With `--accelerate-config FILE` the command checks everything it can before a model
loads (the lock, the run configuration, the arm, CUDA, FILE's process count against
the GPUs), then starts itself again under `accelerate launch --config_file FILE`, one
launch per run; without it, the run happens in this process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from verifiable_grpo.core import interrupts, preregistration
from verifiable_grpo.core.config import ConfigError
from verifiable_grpo.part2 import adoption, study
from verifiable_grpo.part2 import lock as lock_lib
from verifiable_grpo.part2.commands import dry_run, finished_run, refuse_unread_options
from verifiable_grpo.part2.trl import backend as trl_backend
from verifiable_grpo.part2.trl import run_config
from verifiable_grpo.part2.trl.study_args import SLOT_OPTIONS

LAUNCHED_ENV = "VERIFIABLE_GRPO_TRL_LAUNCHED"
PORT_ENV = "VERIFIABLE_GRPO_MAIN_PORT"  # set per device slot by part2/trl/study


def _needs_config(args) -> None:
    if not args.trl_config:
        raise ConfigError(
            [
                "--backend trl needs --config CONFIG (e.g. "
                "configs/part2/card-qwen3-8b-gsm8k.yaml or configs/part2/trl-smoke.yaml)"
            ]
        )


def launch_command(args, arm: str, seed: int, regime: str) -> list[str]:
    """The `accelerate launch` command line that runs one arm/seed/regime (on the port
    the study scheduler gave this slot, so that concurrent launches do not clash)."""
    port = os.environ.get(PORT_ENV)
    return [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--config_file",
        str(args.accelerate_config),
        *(["--main_process_port", port] if port else []),
        "-m",
        "verifiable_grpo",
        "family",
        "run",
        "--backend",
        "trl",
        "--config",
        str(args.trl_config),
        "--lock",
        str(args.lock),
        "--out",
        str(args.out),
        "--arm",
        arm,
        "--seed",
        str(seed),
        "--regime",
        regime,
    ]


def _launch(args, arm: str, seed: int, regime: str) -> int:
    processes = run_config.read_process_count(args.accelerate_config)
    trl_backend.check_request(
        args.lock, args.trl_config, lock_lib.LockedRun(arm, seed, regime), processes
    )
    code = subprocess.call(
        launch_command(args, arm, seed, regime),
        env={**os.environ, LAUNCHED_ENV: "1"},
        preexec_fn=interrupts.die_with_parent,
    )
    if code != 0:
        print(
            f"error: accelerate launch of {arm} seed {seed} exited {code}; run the same "
            "command again to continue from the newest checkpoint",
            file=sys.stderr,
        )
        return 2
    return 0


def _report(manifest: dict) -> None:
    s = manifest["summary"]
    print(
        f"trl {manifest['regime']} {manifest['arm']} seed {manifest['seed']}: held-out greedy "
        f"{s['heldout_greedy_all']:.3f}, mean ZVF {s['mean_zero_variance_fraction']:.3f}, rollouts "
        f"{s['rollouts_generated']} ({s['rollouts_discarded']} discarded)"
    )


def run(args) -> int:
    _needs_config(args)
    regime = args.regime or "on_policy"
    finished = finished_run(args.lock, args.out, args.arm, args.seed, regime)
    if finished is not None:
        _report(finished)
        return 0
    if args.accelerate_config and not os.environ.get(LAUNCHED_ENV):
        return _launch(args, args.arm, args.seed, regime)
    manifest = trl_backend.run_arm_trl(
        args.lock,
        args.trl_config,
        args.out,
        lock_lib.LockedRun(args.arm, args.seed, regime),
        stop_after=args.stop_after,
        progress=True,
    )
    if manifest is None and run_config.process_rank() != 0:
        return 0  # another process of the launch: the main one reports
    if manifest is None:
        print(f"stopped after step {args.stop_after}; continue with the same command")
        return 0
    _report(manifest)
    return 0


def run_study(args, runs: list[tuple[str, str, int]]) -> int:
    """Every requested run not finished yet: over device slots (part2/trl/study) with
    --devices or a CUDA configuration, else one after another in this process."""
    _needs_config(args)
    config = run_config.load_run_config(args.trl_config)
    if getattr(args, "devices", None) or config["device"] == "cuda":
        from verifiable_grpo.part2.trl import study as trl_study

        return trl_study.schedule(args, runs)
    refuse_unread_options(
        args,
        SLOT_OPTIONS,
        "a CPU study without --devices runs in this process, one run after another",
    )
    processes = (
        run_config.read_process_count(args.accelerate_config) if args.accelerate_config else 1
    )
    for regime, arm, seed in runs:  # every refusal before the first run starts
        trl_backend.check_request(
            args.lock, args.trl_config, lock_lib.LockedRun(arm, seed, regime), processes
        )
    if getattr(args, "dry_run", False):
        pending = [r for r in runs if not study.manifest_path(args.out, *r).is_file()]
        return dry_run(pending, args.out)
    stamp = preregistration.stamp_folder(Path(args.out), args.exploratory)
    adoption.refuse_unstamped_runs(args.out, stamp)
    base = trl_backend.base_heldout(args.lock, args.trl_config, args.out)
    print(f"untrained base: held-out greedy {base['heldout']['greedy']['ALL']['success_rate']:.3f}")
    for regime, arm, seed in runs:
        if study.manifest_path(args.out, regime, arm, seed).is_file():
            continue
        if args.accelerate_config:
            if _launch(args, arm, seed, regime) != 0:
                return 2
            continue
        run = lock_lib.LockedRun(arm, seed, regime)
        _report(trl_backend.run_arm_trl(args.lock, args.trl_config, args.out, run))
    return 0


def runs_of(args) -> list[tuple[str, str, int]]:
    lock, _ = lock_lib.read_lock(args.lock)
    arms = args.arms or list(lock["arms"])
    seeds = args.seeds or list(lock["seeds"])
    regimes = args.regimes or ["on_policy"]
    return [(r, a, s) for r in regimes for a in arms for s in seeds]
