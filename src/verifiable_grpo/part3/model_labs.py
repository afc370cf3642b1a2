"""The runner of the model labs of `python -m verifiable_grpo lab` (Labs 1, 2 and 6's suite,
greedy and sampled, on SmolLM2-135M; their rows in part3/labs.py name their settings class,
whose fields are the command's flags).

Unlike the settings labs (one metrics file written at the end), these train or run a real
model, save crash checkpoints and continue from them, so each takes its options from the
command line and writes its own records; this module holds the run folder, sets the
threads, calls the lab's run_lab and prints its summary line.
"""

from __future__ import annotations

import sys
from pathlib import Path

from verifiable_grpo.core import runlock
from verifiable_grpo.core.settings_schema import flag, flag_fields, from_flags, given_flags
from verifiable_grpo.part3.labs import LABS, lab_module, model_settings


def command(args) -> int:
    """Run one model lab; --export then copies its metrics to data/recorded/part3/."""
    if getattr(args, "settings", None) or getattr(args, "export_only", False):
        flags = ", ".join([*map(flag, flag_fields(model_settings())), "--cache"])
        print(
            f"error: lab {args.name} takes its options on the command line ({flags}), "
            "not --settings/--export-only",
            file=sys.stderr,
        )
        return 2
    foreign = given_flags(args, model_settings(), LABS[args.name].settings)
    if foreign:
        print(f"error: lab {args.name} does not take {', '.join(foreign)}", file=sys.stderr)
        return 2
    settings = from_flags(LABS[args.name].settings, args)  # ConfigError: one line per flag
    if args.out is None:
        args.out = f"runs/part3/{args.name}"
    import torch

    # --threads applies here too; by default torch's own (every core): a 135M model's matrix
    # products do use two cores (the same bits, less than half the time: compare the records
    # with data/recorded/part3/one-thread/). The provenance's cpu_threads is what ran.
    previous = torch.get_num_threads()
    torch.set_num_threads(getattr(args, "threads", None) or previous)
    try:
        # one process per run folder (OUT/.lock), taken before the model is loaded
        with runlock.locked(args.out, f"lab {args.name}"):
            module = lab_module(args.name)
            metrics = module.run_lab(args.out, settings, cache=getattr(args, "cache", None))
            print(module.summary(metrics))
    except (FileNotFoundError, FileExistsError, runlock.RunFolderError) as err:
        print(f"error: {err}", file=sys.stderr)  # a missing model, policy or wheel; a busy OUT
        return 2
    finally:
        torch.set_num_threads(previous)  # a caller's process keeps its own setting
    if args.export:
        from verifiable_grpo.part3.smollm2.records import export

        # recorded under the run folder's name, so an ablation (--out runs/part3/sft-no-mask)
        # does not collide with the default run
        print(f"recorded: {export(args.out, args.name, recorded_as=Path(args.out).name)}")
    return 0
