"""The `lab` verb: a settings lab runs from its YAML through labs.run and is exported by
labs.export; a model lab goes to its runner, model_labs.command. The lab table itself is
labs.LABS."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

from verifiable_grpo.core.config import ConfigError
from verifiable_grpo.core.settings_schema import given_flags
from verifiable_grpo.part3 import labs, model_labs


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
    if not labs.LABS[args.name].takes_settings:
        return model_labs.command(args)
    given = given_flags(args, labs.model_settings())  # a settings lab takes none of them
    given += ["--cache"] if getattr(args, "cache", None) else []
    if given:
        print(
            f"error: {', '.join(given)} belong(s) to the model labs ({', '.join(labs.MODEL_LABS)}); "
            f"lab {args.name} reads configs/part3/{args.name}.yaml (or --settings)",
            file=sys.stderr,
        )
        return 2
    # A lab writes its metrics once, at the end, atomically: a signal can stop it at once
    # (the CLI's graceful stop would wait for a safe point that a lab never reaches).
    for number in (signal.SIGINT, signal.SIGTERM):
        try:
            signal.signal(number, _stop_at_once)
        except ValueError:  # not the main thread: leave signals alone
            pass
    try:
        if args.export_only:
            print(labs.export(args.name, args.out and Path(args.out) / "metrics.json"))
            return 0
        # one thread unless told: these models are tiny, and one thread is fastest for them
        threads = args.threads or 1
        target = labs.run(
            args.name, args.out, args.settings, threads, command=_command(args, threads)
        )
        print(target)
        if args.export:
            print(labs.export(args.name, target))
    except ConfigError:
        raise  # the CLI prints it: one line per problem, exit 2
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0
