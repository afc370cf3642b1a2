"""The card's unstated defaults, faced: a sensitivity study declared before it runs.

The study card never states TRL's `loss_type`. Its TRL 1.8 defaulted to `dapo` (every
token's loss summed over the batch, divided by the batch's token count), while the
committed lock runs `grpo` (a token mean per response, then a mean over responses); and
its gspo arm clips the sequence ratio to [0.8, 1.2] where the GSPO paper and TRL's docs
use [1 - 3e-4, 1 + 4e-4]. This lock pre-registers the tiny study's answer to both: the
committed lock's seeds, regimes, budgets and analysis for four arms,

    grpo         the committed baseline (per-response token mean);
    dapo_token   grpo with TRL 1.8's default aggregation (loss_type 'dapo');
    gspo         the committed gspo arm (clip 0.2 on the sequence ratio);
    gspo_paper   gspo at the paper's clip range.

The pre-registered analysis compares each arm with grpo; gspo_paper against gspo is read
from the same per-seed table (both paired with grpo's seed). grpo and gspo rerun the
committed arms with the same seeds and code, so their manifests should equal the recorded
study's (a free check of the runner's determinism). Written and hashed, not run: the
command and its expected duration are `COMMAND` and `expected_seconds()`.
"""

from __future__ import annotations

import statistics
from pathlib import Path

from verifiable_grpo.core import files
from verifiable_grpo.core.config import resolve
from verifiable_grpo.part2 import lock as lock_lib

PATH = "configs/part2/lock-card-defaults.json"
LOCKED_AT = "2026-12-04"
ARMS = ("grpo", "dapo_token", "gspo", "gspo_paper")
PINNED_SHA256 = "403c1c35a04198a3980297c526ef2ea07c208b8d031f4994a3f6450e5fe8cc25"
COMMAND = (
    "python -m verifiable_grpo family study --lock configs/part2/lock-card-defaults.json "
    "--out runs/family-card-defaults"
)
RECORDED = "data/recorded/part2/runs"
# The recorded arm whose cost each arm shares (the same model, sampler and step count).
COSTS_LIKE = {"grpo": "grpo", "dapo_token": "grpo", "gspo": "gspo", "gspo_paper": "gspo"}

NOTES = [
    "a sensitivity of the committed study to two choices the study card left unstated: "
    "the loss aggregation (dapo_token: TRL 1.8's default loss_type 'dapo', token sum over "
    "the generation batch / its token count, against grpo's per-response token mean) and "
    "gspo's clip range (gspo_paper: the GSPO paper's 3e-4 below and 4e-4 above 1, against "
    "0.2 on both sides).",
    "gspo_paper against gspo is read from the per-seed table (both paired with grpo's "
    "seed); the pre-registered tests compare every arm with grpo only.",
    "on_policy: every ratio is 1 up to rescoring noise (about 1e-5), inside even the paper's "
    "range, so the clip range can only act in two_updates; the aggregation acts in both.",
    "grpo and gspo rerun the committed arms with the same seeds: their manifests should "
    "equal data/recorded/part2's.",
    "pre-registered but not run. Its runs go to a new study folder; a folder bound to "
    "configs/part2/lock.json refuses them.",
    *lock_lib.NOTES,
]


def build() -> dict:
    """The lock as the code, the tiny profile and the warm start define it today."""
    return lock_lib.build_lock(
        lock_lib.LockChoices(arms=ARMS, locked_at=LOCKED_AT, notes=tuple(NOTES))
    )


def write(path: str = PATH):
    """Pre-register it (once: an existing lock or pin is never replaced)."""
    return lock_lib.write_lock(build(), path)


def expected_seconds(workers: int = 2, recorded: str = RECORDED) -> float:
    """Wall seconds `COMMAND` should take (its default two workers): the recorded study's
    mean wall seconds per run of the arm each arm costs like, times 8 seeds, both regimes,
    divided over the workers."""
    total = 0.0
    for regime in lock_lib.REGIMES:
        for arm in ARMS:
            walls = [
                files.read_json(p)["wall_seconds"]
                for p in Path(resolve(recorded), regime).glob(f"{COSTS_LIKE[arm]}-seed-*/*.json")
            ]
            total += statistics.mean(walls) * len(lock_lib.SEEDS)
    return total / workers
