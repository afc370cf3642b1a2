"""`python -m verifiable_grpo COMMAND`: every stage of the pipeline from the shell.

Each command is handled by a `command_*` function of the module that owns the concept;
modules are imported only when their command runs, so `--help` needs no model.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from verifiable_grpo.core import refusals, runlock
from verifiable_grpo.core.argument_types import (
    positive,
    positive_float,
    seed,
    thread_count,
)
from verifiable_grpo.core.config import ConfigError, load_config  # light: no model, no torch
from verifiable_grpo.core.runfolder import MODES
from verifiable_grpo.part1 import learning_arguments, study_command  # their flags, light

# command -> (module, handler, help)
COMMANDS = {
    "data": (
        "task.data",
        "command_data",
        "write StockArithmetic-v1 (pages, labels, SHA-256 manifest)",
    ),
    "build-tiny-base": (
        "models.tinybase",
        "command_build",
        "build the tiny CPU base model and tokenizer",
    ),
    "warmstart": (
        "training.sft",
        "command_warmstart",
        "warm-start SFT (counts: the profile's warmstart section)",
    ),
    "sft": (
        "training.sft",
        "command_sft",
        "further SFT from the warm start (counts: the profile's sft section)",
    ),
    "grpo": ("training.grpo", "command_grpo", "GRPO with exact prefix KL from the warm start"),
    "verify-resume": (
        "core.checkpoint",
        "command_verify_resume",
        "prove continuous == resumed state, bit for bit",
    ),
    "evaluate": (
        "evaluation.evaluate",
        "command_evaluate",
        "greedy pass@1 and per-draw success on the test set",
    ),
    "exercise": ("part1.exercise", "command_exercise", "the G=2 / G=8 group-size exercise"),
    "run": ("part1.pipeline", "command_run", "the whole pipeline, resumable"),
    "config": (
        "core.config",
        "command_config",
        "print a profile as resolved: its base merged in, with its SHA-256",
    ),
    "plan": (
        "part1.run_plan",
        "command_plan",
        "before a run: planned disk, generated tokens and time per GPU class",
    ),
    "report": ("part1.report", "command_report", "summarise a run folder"),
    "lab": ("part3.lab_command", "command_lab", "run one Part III lab and record its metrics"),
    "family": (
        "part2.commands",
        "command_family",
        "Part II's GRPO family study: lock, run, study, analyse, status, export",
    ),
    "sweep": (
        "part1.sweep_command",
        "command_sweep",
        "Part I beyond the specification: GRPO settings swept from the recorded warm start",
    ),
    "learn": (
        "part1.learning_command",
        "command_learn",
        "GRPO learning runs: fixed prompts (ours, TRL) and the held-out lift study",
    ),
    "study": (
        "part1.study_command",
        "command_study",
        "Part I's recorded studies (the STUDIES table): list, run, export, check",
    ),
    "bench": (
        "part1.bench_command",
        "command_bench",
        "time a GRPO rollout set: ours batched, ours sequential, TRL's GRPOTrainer",
    ),
}
FAMILY_LOCK = "configs/part2/lock.json"
EXPLORATORY = "allow a dirty or uncommitted tree (the run is labelled exploratory)"


def _family_arguments(p) -> None:
    """The family study's subcommands (their handlers live in part2.commands)."""
    family = p.add_subparsers(dest="family")
    for name, text in (
        ("lock", "write the treatment lock (never replaced) or --check it"),
        ("run", "one arm / seed / regime, continued from its newest checkpoint"),
        ("study", "every pre-registered run not finished yet"),
        ("analyse", "the pre-registered analysis of the finished runs"),
        ("status", "finished / in flight / not started runs"),
        ("export", "record a finished study, trimmed, for the book"),
    ):
        q = family.add_parser(name, help=text, description=text)
        q.add_argument(
            "--lock", default=FAMILY_LOCK, help=f"treatment lock (default {FAMILY_LOCK})"
        )
        q.add_argument("--out", default="runs/family", help="study folder (default runs/family)")
        if name == "lock":
            q.add_argument(
                "--check",
                action="store_true",
                help="verify the existing lock instead of writing one",
            )
        if name == "run":
            q.add_argument("--arm", required=True)
            q.add_argument("--seed", type=int, required=True)
            q.add_argument(
                "--regime",
                default=None,
                help="on_policy or two_updates (--backend trl: default on_policy)",
            )
            q.add_argument(
                "--stop-after",
                type=positive,
                default=None,
                help="stop after this many steps (the rerun continues)",
            )
        if name in ("study", "status"):
            q.add_argument("--arms", nargs="+", default=None)
            q.add_argument("--seeds", nargs="+", type=int, default=None)
            q.add_argument("--regimes", nargs="+", default=None)
        if name == "study":
            q.add_argument(
                "--workers",
                type=positive,
                default=2,
                help="child processes of one CPU thread each, the seeds split "
                "between them (default 2; 1: this process, its threads)",
            )
        if name == "study":
            q.add_argument("--exploratory", action="store_true", help=EXPLORATORY)
        if name in ("run", "study"):
            _backend_arguments(q)
        if name == "study":
            from verifiable_grpo.part2.trl.study_args import add_node_arguments

            add_node_arguments(q)
        if name == "status":
            q.add_argument("--verbose", action="store_true", help="list finished runs too")
        if name == "export":
            q.add_argument(
                "--to",
                default="data/recorded/part2",
                help="record folder; a previous record there is swapped out once the new one is "
                "written, any other non-empty folder refused (default data/recorded/part2)",
            )


def _backend_arguments(q) -> None:
    """family run/study on our trainer (default) or another backend (part2/backends)."""
    from verifiable_grpo.part2.backends import DEFAULT, names  # light: the table only

    q.add_argument(
        "--backend",
        choices=names(),
        default=DEFAULT,
        help="ours (the tiny study's trainer) or trl (TRL's GRPOTrainer)",
    )
    q.add_argument(
        "--config",
        dest="trl_config",
        default=None,
        help="--backend trl: run configuration (configs/part2/card-*.yaml, trl-*.yaml)",
    )
    q.add_argument(
        "--accelerate-config",
        default=None,
        help="--backend trl: run each run under `accelerate launch` with this file",
    )


def _data_arguments(p) -> None:
    p.add_argument("--out", required=True, help="folder to write the dataset into")
    p.add_argument(
        "--seed", type=seed, default=None, help="generation seed (default: the config's data.seed)"
    )
    p.add_argument("--config", default="tiny")


def _tiny_base_arguments(p) -> None:
    p.add_argument("--out", default="data/tiny-base")
    p.add_argument("--force", action="store_true", help="replace an existing base")
    p.add_argument(
        "--minutes",
        type=positive_float,
        default=None,
        help="pretraining budget override (default: the build recipe's)",
    )


def _lab_arguments(p) -> None:
    # No --config: a lab's settings are its own YAML (configs/part3/NAME.yaml).
    from verifiable_grpo.core.settings_schema import add_flags
    from verifiable_grpo.part3.labs import LABS, model_settings  # light: no torch

    p.add_argument("name", choices=list(LABS))
    p.add_argument("--out", default=None, help="folder (default: runs/part3/NAME)")
    p.add_argument(
        "--settings", default=None, help="settings YAML (default: configs/part3/NAME.yaml)"
    )
    p.add_argument(
        "--threads",
        type=thread_count,
        default=None,
        help="torch threads (default: 1 for the synthetic labs, whose models are "
        "tiny; every core for the model labs, whose QUICK runs then fit in "
        "5 minutes on 2 cores; the bits are the same either way)",
    )
    p.add_argument(
        "--export",
        action="store_true",
        help="then copy metrics.json to data/recorded/part3/NAME.json",
    )
    p.add_argument("--export-only", action="store_true", help="only copy an existing run's metrics")
    # the model labs (sft, lora, suite: SmolLM2-135M) take these instead of --settings: each
    # lab's settings class (beside its run_lab) declares them, with their help and checks
    add_flags(p, model_settings())
    p.add_argument(
        "--cache",
        default=None,
        help="FP32 cache of the GGUF model (default: runs/part3/smollm2-fp32)",
    )


def _bench_arguments(p) -> None:
    p.add_argument(
        "what",
        choices=["grpo", "band", "pipeline"],
        help="grpo: one rollout set, ours against TRL; band: the same on SmolLM2-135M-"
        "Instruct at the band study's shape; pipeline: a finished run folder (--run) "
        "against the recorded tiny run",
    )
    p.add_argument("--run", default=None, help="pipeline: the finished run folder")
    p.add_argument("--sets", type=int, default=5, help="timed rollout sets per arm")
    p.add_argument("--warmup", type=int, default=1, help="untimed rollout sets first")
    p.add_argument("--no-trl", action="store_true", help="skip the TRL arm")
    p.add_argument("--no-kl", action="store_true", help="skip the exact-KL memory probe")
    p.add_argument(
        "--runs",
        nargs="+",
        default=["data/recorded/tiny"],
        help="run folders whose timings.json to print (stage wall times)",
    )
    p.add_argument(
        "--save",
        default=None,
        help="also write the result as JSON here (e.g. data/recorded/bench/grpo.json)",
    )


def _config_argument(p) -> None:
    p.add_argument("--config", default="tiny", help="profile name or YAML path (default: tiny)")


def _learn_arguments(p) -> None:
    _config_argument(p)
    learning_arguments.add_arguments(p, exploratory_help=EXPLORATORY)


def _study_arguments(p) -> None:
    _config_argument(p)
    study_command.add_arguments(p, exploratory_help=EXPLORATORY)


def _sweep_arguments(p) -> None:
    _config_argument(p)
    p.add_argument(
        "--out", default="runs/tiny-sweep", help="sweep folder (default runs/tiny-sweep)"
    )
    p.add_argument("--settings", nargs="+", default=None, help="only these settings")
    p.add_argument("--exploratory", action="store_true", help=EXPLORATORY)
    p.add_argument(
        "--export",
        action="store_true",
        help="then record the finished sweep in data/recorded/tiny-sweep",
    )


def _stage_arguments(name: str, p) -> None:
    """The pipeline's own commands: a profile, a run folder and the command's options."""
    _config_argument(p)
    p.add_argument("--out", default=None, help="run folder (default: runs/<profile>)")
    if name == "run":
        p.add_argument(
            "--workers",
            type=positive,
            default=min(2, os.cpu_count() or 1),
            help="stages side by side in this many worker processes (default: "
            "2, or 1 on a one-core machine); the numbers do not depend "
            "on it, only on the profile's threads",
        )
        p.add_argument(
            "--dry-run",
            action="store_true",
            help="print the plan (disk, generated tokens, time per GPU class) and start nothing",
        )
    if name in ("warmstart", "sft", "grpo"):
        p.add_argument("--mode", choices=list(MODES), default="continuous")
    if name == "grpo":
        p.add_argument(
            "--branch",
            default="grpo",
            help="grpo (the main run, G = grpo.group_size) or grpo-gN (an exercise group size)",
        )
    if name == "verify-resume":
        p.add_argument(
            "--branch",
            required=True,
            help="a branch of the profile: warmstart, sft, grpo or grpo-gN "
            "(N in exercise.group_sizes)",
        )
    if name == "evaluate":
        p.add_argument("--policy", default=None, help="one policy (default: all trained)")
    if name == "report":
        p.add_argument(
            "--export",
            nargs="?",
            const="default",
            default=None,
            help="also copy a small summary (no checkpoints) to this folder "
            "(default: data/recorded/<profile>)",
        )


# command -> its arguments, where they are not _stage_arguments'
ARGUMENTS = {
    "data": _data_arguments,
    "family": _family_arguments,
    "build-tiny-base": _tiny_base_arguments,
    "lab": _lab_arguments,
    "bench": _bench_arguments,
    "learn": _learn_arguments,
    "study": _study_arguments,
    "plan": _config_argument,
    "config": _config_argument,
    "sweep": _sweep_arguments,
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m verifiable_grpo", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (_, _, text) in COMMANDS.items():
        p = sub.add_parser(name, help=text, description=text)
        if name in ARGUMENTS:
            ARGUMENTS[name](p)
        else:
            _stage_arguments(name, p)
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except ConfigError as err:
        refusals.user_error(err)
    except refusals.REFUSALS as err:
        refusals.refused(err)
    except OSError as err:
        refusals.environment_error(err)  # a full disk: one line; anything else: raised


def _main(argv: list[str] | None) -> int:
    args = build_parser().parse_args(argv)
    if hasattr(args, "config"):
        # The whole profile is checked before any stage starts, so a typo costs a second.
        try:
            profile = load_config(args.config).profile
        except (ConfigError, FileNotFoundError) as err:
            refusals.user_error(err)
        if getattr(args, "out", None) is None:
            args.out = f"runs/{profile}"
    if getattr(args, "out", None) is not None:
        runlock.check_out_path(args.out)  # before any import of torch, any write
    module_name, handler, _ = COMMANDS[args.command]
    module = importlib.import_module(f"verifiable_grpo.{module_name}")
    from verifiable_grpo.core import interrupts

    again = " ".join(["python -m verifiable_grpo", *(argv if argv is not None else sys.argv[1:])])
    try:
        with interrupts.graceful_stop():
            result = getattr(module, handler)(args)
    except ConfigError as err:
        refusals.user_error(err)
    except interrupts.StopRequested as stop:
        print(
            f"{stop.signal_name}: stopped {stop.where}; finished work and the crash checkpoint "
            f"are kept; continue with: {again}",
            file=sys.stderr,
        )
        return stop.exit_code
    except KeyboardInterrupt:
        print(
            f"stopped at once (second signal); the step in flight is abandoned; continue "
            f"with: {again}",
            file=sys.stderr,
        )
        return 130
    except OSError as err:  # a full disk is said naming the folder being written
        err.folder = getattr(err, "folder", None) or err.filename or getattr(args, "out", None)
        raise
    return int(result or 0)


if __name__ == "__main__":
    sys.exit(main())
