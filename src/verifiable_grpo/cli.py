"""`python -m verifiable_grpo COMMAND`: every stage of the pipeline from the shell.

Each command is handled by a `command_*` function of the module that owns the concept;
modules are imported only when their command runs, so `--help` needs no model.
"""
from __future__ import annotations

import argparse
import importlib
import sys

from verifiable_grpo.core.runfolder import MODES

from verifiable_grpo.core.config import ConfigError, load_config  # light: no model, no torch
from verifiable_grpo.core.config_schema import typed

# command -> (module, handler, help)
COMMANDS = {
    "data": ("task.data", "command_data", "write StockArithmetic-v1 (pages, labels, SHA-256 manifest)"),
    "build-tiny-base": ("task.tinybase", "command_build", "build the tiny CPU base model and tokenizer"),
    "warmstart": ("training.sft", "command_warmstart", "warm-start SFT (128 examples x 3 epochs)"),
    "sft": ("training.sft", "command_sft", "further SFT from the warm start (872 examples x 2 epochs)"),
    "grpo": ("training.grpo", "command_grpo", "GRPO with exact prefix KL from the warm start"),
    "verify-resume": ("core.checkpoint", "command_verify_resume",
                      "prove continuous == resumed state, bit for bit"),
    "evaluate": ("evaluation.evaluate", "command_evaluate", "greedy pass@1 and per-draw success on the test set"),
    "exercise": ("part1.exercise", "command_exercise", "the G=2 / G=8 group-size exercise"),
    "run": ("part1.pipeline", "command_run", "the whole pipeline, resumable"),
    "report": ("part1.report", "command_report", "summarise a run folder"),
    "lab": ("cli", "command_lab", "a Part III lab: sft | lora | suite (SmolLM2-135M GGUF)"),
}
# lab name -> "module:function" (module under verifiable_grpo); the function takes the args.
LABS = {
    "sft": "part3.lab1_sft:command",
    "lora": "part3.lab2_lora:command",
    "suite": "part3.lab6_suite_run:command",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m verifiable_grpo", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (_, _, text) in COMMANDS.items():
        p = sub.add_parser(name, help=text, description=text)
        if name == "data":
            p.add_argument("--out", required=True, help="folder to write the dataset into")
            p.add_argument("--seed", type=int, default=None,
                           help="generation seed (default: the config's data.seed)")
            p.add_argument("--config", default="tiny")
            continue
        if name == "build-tiny-base":
            p.add_argument("--out", default="data/tiny-base")
            p.add_argument("--force", action="store_true", help="replace an existing base")
            p.add_argument("--minutes", type=float, default=None,
                           help="pretraining budget override (default: the build recipe's)")
            continue
        if name == "lab":
            p.add_argument("lab", choices=list(LABS))
            p.add_argument("--out", default=None, help="run folder (default: runs/part3/<lab>)")
            p.add_argument("--full", action="store_true", help="the FULL budget instead of QUICK")
            p.add_argument("--no-mask", action="store_true", help="sft: loss on every token")
            p.add_argument("--no-row-init", action="store_true",
                           help="keep the chat rows of the embedding as loaded")
            p.add_argument("--policy", default=None,
                           help="suite: the fine-tuned model (default: runs/part3/sft/sft-policy)")
            p.add_argument("--export", action="store_true",
                           help="then copy the metrics to data/recorded/part3/")
            p.add_argument("--cache", default=None,
                           help="FP32 cache folder of the GGUF model (default: runs/part3/smollm2-fp32)")
            continue
        p.add_argument("--config", default="tiny", help="profile name or YAML path (default: tiny)")
        p.add_argument("--out", default=None, help="run folder (default: runs/<profile>)")
        if name in ("warmstart", "sft", "grpo"):
            p.add_argument("--mode", choices=list(MODES), default="continuous")
        if name == "grpo":
            p.add_argument("--branch", default="grpo",
                           help="grpo (the main G=4 run) or grpo-gN (an exercise group size)")
        if name == "verify-resume":
            p.add_argument("--branch", required=True,
                           help="a branch of the profile: warmstart, sft, grpo or grpo-gN "
                                "(N in exercise.group_sizes)")
        if name == "evaluate":
            p.add_argument("--policy", default=None, help="one policy (default: all trained)")
        if name == "report":
            p.add_argument("--export", nargs="?", const="default", default=None,
                           help="also copy a small summary (no checkpoints) to this folder "
                                "(default: data/recorded/<profile>)")
    return parser


def _user_error(err: Exception) -> None:
    """A mistake in what the user gave: say what, without a traceback; exit 2 like argparse."""
    problems = getattr(err, "problems", None) or [str(err)]
    if len(problems) == 1:
        print(f"error: {problems[0]}", file=sys.stderr)
    else:
        print(f"error: {len(problems)} problems in the config:", file=sys.stderr)
        for problem in problems:
            print(f"  {problem}", file=sys.stderr)
    raise SystemExit(2)


def command_lab(args) -> int:
    module_name, function = LABS[args.lab].split(":")
    if args.out is None:
        args.out = f"runs/part3/{args.lab}"
    try:
        code = getattr(importlib.import_module(f"verifiable_grpo.{module_name}"), function)(args)
    except (FileNotFoundError, FileExistsError) as err:  # a missing model, policy or wheel
        _user_error(err)
    if args.export and not code:
        from verifiable_grpo.part3.lab1_record import export

        from pathlib import Path

        # recorded under the run folder's name, so an ablation (--out runs/part3/sft-no-mask)
        # does not collide with the default run
        print(f"recorded: {export(args.out, args.lab, recorded_as=Path(args.out).name)}")
    return code


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if hasattr(args, "config"):
        # The whole profile is checked before any stage starts, so a typo costs a second.
        try:
            profile = typed(load_config(args.config)).profile
        except (ConfigError, FileNotFoundError) as err:
            _user_error(err)
        if getattr(args, "out", None) is None:
            args.out = f"runs/{profile}"
    module_name, handler, _ = COMMANDS[args.command]
    module = importlib.import_module(f"verifiable_grpo.{module_name}")
    from verifiable_grpo.core import interrupts

    again = " ".join(["python -m verifiable_grpo", *(argv if argv is not None else sys.argv[1:])])
    try:
        with interrupts.graceful_stop():
            result = getattr(module, handler)(args)
    except ConfigError as err:
        _user_error(err)
    except interrupts.StopRequested as stop:
        print(f"{stop.signal_name}: stopped {stop.where}; finished work and the crash checkpoint "
              f"are kept; continue with: {again}", file=sys.stderr)
        return stop.exit_code
    except KeyboardInterrupt:
        print(f"stopped at once (second signal); the step in flight is abandoned; continue "
              f"with: {again}", file=sys.stderr)
        return 130
    return int(result or 0)


if __name__ == "__main__":
    sys.exit(main())
