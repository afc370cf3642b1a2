"""The one refusal table: which registry entries a backend cannot run, and why.

Keyed by entry name, then by where the entry is refused: "trl" (TRL 1.16's GRPOTrainer,
training/trl_parity.py) or "part1" (Part I's loop, objectives.on_part1). Each reason is
the words the refusal itself says. An entry absent from a backend's column runs there;
tests/training/test_registry_complete.py fails when an entry is refused without a row
here, or has a row yet runs, so no entry goes unclassified.
"""

from __future__ import annotations

BACKENDS = ("trl", "part1")

REFUSED: dict[str, dict[str, str]] = {
    "part1": {"trl": "has no exact prefix KL"},
    "dapo": {"part1": "its sampler (dynamic"},
    "aero": {"part1": "its sampler (aero"},
    "gmpo": {"trl": "has no gmpo loss_type"},
    "rloo": {"trl": "has no leave_one_out advantage rule"},
    "reinforce_pp": {"trl": "scale_rewards='batch' divides"},
    "reinforce": {"trl": "has no none advantage rule"},
    "reinforce_baseline": {"trl": "has no reinforce loss_type"},
}


def refused_by(backend: str) -> dict[str, str]:
    """{entry: reason} for the entries `backend` refuses."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}: use one of {BACKENDS}")
    return {name: where[backend] for name, where in REFUSED.items() if backend in where}
