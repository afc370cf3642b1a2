"""Training backends of the family study: where `family run|study --backend NAME` goes.

`ours` is the tiny study's own trainer (part2/study, run by part2/commands). Every other
backend is a module named in BACKENDS that defines three functions:

    run(args) -> int                  one arm / seed / regime, like `family run`
    run_study(args, runs) -> int      every (regime, arm, seed) of `runs` not finished yet
    runs_of(args) -> list             the requested runs, from the lock and --arms/--seeds

Each run refuses a request the treatment lock does not cover before any compute, and
leaves `run_manifest.json` (study_records.SCHEMA) where study.manifest_path says, so
`family analyse` reads either backend's study the same way. The CLI's `--backend`
choices are this table's keys: registering a backend is one row.
"""

from __future__ import annotations

import importlib

DEFAULT = "ours"
# name -> the module that runs it (imported only when chosen: it may need TRL, a GPU)
BACKENDS = {
    "trl": "verifiable_grpo.part2.trl.commands",
}
INTERFACE = ("run", "run_study", "runs_of")


def names() -> tuple[str, ...]:
    """Every name `--backend` accepts, the default first."""
    return (DEFAULT, *BACKENDS)


def backend_module(name: str):
    """The module of a registered backend other than the default."""
    return importlib.import_module(BACKENDS[name])
