"""A pre-registration for the TRL backend generating with vLLM (part2/generation_lock).

The committed lock's seeds, regimes, budgets and analysis, for the arms whose batch TRL
builds itself (grpo, drgrpo, gspo), with rollouts from vLLM colocated on the training GPUs
and TRL 1.16's importance-sampling correction written out: each sequence reweighted by
its trainer/sampler probability ratio, sequences whose ratio exceeds 3 dropped
(sequence_mask, cap 3.0, no lower cap). dapo and aero are left out: their batches come from
our samplers and carry no sampler log-probabilities to correct with. Written and hashed,
not run (no GPU has run it); its SHA-256 is pinned here and in its pin file.
"""

from __future__ import annotations

from verifiable_grpo.part2 import lock as lock_lib

PATH = "configs/part2/lock-vllm.json"
LOCKED_AT = "2026-12-04"
ARMS = ("grpo", "drgrpo", "gspo")
GENERATION = {
    "engine": "vllm",
    "vllm_mode": "colocate",
    "importance_sampling": {
        "correction": True,
        "mode": "sequence_mask",
        "clip_max": 3.0,
        "clip_min": None,
    },
}
PINNED_SHA256 = "a996f6e75cd5cccdcdb771ae1e78fa7b628c551448bca6eb7447386208cf9548"

NOTES = [
    "rollouts from vLLM colocated with training (TRL use_vllm, vllm_mode colocate): vLLM "
    "samples from probabilities that differ slightly from the trainer's, so TRL's "
    "importance-sampling correction is on and stated: sequence_mask, clip_max 3.0, "
    "clip_min null (TRL 1.16's defaults, written out so that a later default cannot move).",
    "arms grpo, drgrpo and gspo only: dapo's dynamic sampling and aero's rescue assemble "
    "their own batches, which carry no sampler log-probabilities for the correction.",
    "pre-registered but not run. Its runs go to a new study folder; a folder bound to "
    "configs/part2/lock.json refuses them.",
    *lock_lib.NOTES,
]


def build() -> dict:
    """The lock as the code, the tiny profile and the warm start define it today."""
    return lock_lib.build_lock(
        lock_lib.LockChoices(
            arms=ARMS, locked_at=LOCKED_AT, notes=tuple(NOTES), generation=GENERATION
        )
    )


def write(path: str = PATH):
    """Pre-register it (once: an existing lock or pin is never replaced)."""
    return lock_lib.write_lock(build(), path)
