"""The model labs of `python -m verifiable_grpo lab` (Labs 1, 2 and 6's suite, greedy and
sampled, on SmolLM2-135M).

Unlike the synthetic labs (part3/labs.py: settings from a YAML, one metrics file written at
the end), these train a real model, save crash checkpoints and continue from them, so each
takes its options from the command line and writes its own records.
"""
from __future__ import annotations

import importlib
import sys
from pathlib import Path

from verifiable_grpo.core import runlock

# lab name -> "module:function" under verifiable_grpo.part3; the function takes the args.
MODEL_LABS = {
    "sft": ("sft_lab.masked_sft:command", "Lab 1: full-weight SFT with the assistant-only masked loss"),
    "sft-past-turn": ("sft_lab.past_turn:command",
                      "Lab 1, Try this: greedy past <|im_end|>, masked vs --no-mask policies"),
    "lora": ("lora_lab:command", "Lab 2: LoRA from scratch, zero-init check, merge"),
    "suite": ("suite_lab.greedy:command", "Lab 6: the 40-item behavioural suite, paired"),
    "suite-sampled": ("suite_lab.sampled:command",
                      "Lab 6, Try this: the suite sampled 5 times per item at temperature 0.7"),
}
MODEL_ONLY = ("full", "no_mask", "no_row_init", "policy", "cache")


def command(args) -> int:
    """Run one model lab; --export then copies its metrics to data/recorded/part3/."""
    if getattr(args, "settings", None) or getattr(args, "export_only", False):
        print(f"error: lab {args.name} takes its options on the command line "
              "(--full, --no-mask, --no-row-init, --policy, --cache), not --settings/--export-only",
              file=sys.stderr)
        return 2
    module_name, function = MODEL_LABS[args.name][0].split(":")
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
            module = importlib.import_module(f"verifiable_grpo.part3.{module_name}")
            code = getattr(module, function)(args)
    except (FileNotFoundError, FileExistsError, runlock.RunFolderError) as err:
        print(f"error: {err}", file=sys.stderr)   # a missing model, policy or wheel; a busy OUT
        return 2
    finally:
        torch.set_num_threads(previous)  # a caller's process keeps its own setting
    if args.export and not code:
        from verifiable_grpo.part3.smollm2.records import export

        # recorded under the run folder's name, so an ablation (--out runs/part3/sft-no-mask)
        # does not collide with the default run
        print(f"recorded: {export(args.out, args.name, recorded_as=Path(args.out).name)}")
    return code
