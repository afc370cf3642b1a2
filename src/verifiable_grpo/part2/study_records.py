"""What a family-study run leaves behind: its manifest and the summaries both backends
(ours and TRL's) compute from their telemetry."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from verifiable_grpo.core.config import provenance, sha256_bytes
from verifiable_grpo.core.runfolder import compute_identity
from verifiable_grpo.training import lora

SCHEMA = "verifiable-grpo-family-run-v1"


def mean(values) -> float:
    values = list(values)
    return sum(values) / len(values) if values else float("nan")


def stack_fingerprint(config: dict) -> str:
    versions = provenance(config)["packages"]
    return sha256_bytes(
        repr(
            (
                sorted(versions.items()),
                torch.__config__.parallel_info().splitlines()[:1],
                compute_identity(torch.device("cpu")),
            )
        ).encode()
    )


def telemetry_summary(telemetry: list, step_seconds: list) -> dict:
    """The telemetry's means and sums every manifest summary holds (either backend)."""
    last = telemetry[-10:]
    return {
        "last10_mean_reward": mean(t["mean_reward"] for t in last),
        "mean_zero_variance_fraction": mean(t["zero_variance_fraction"] for t in telemetry),
        "mean_gu": mean(t["gu"] for t in telemetry),
        "mean_zero_variance_fraction_drawn": mean(
            t["zero_variance_fraction_drawn"] for t in telemetry
        ),
        "mean_reward_drawn": mean(t["mean_reward_drawn"] for t in telemetry),
        "rollouts_generated": sum(t["rollouts_generated"] for t in telemetry),
        "rollouts_discarded": sum(t["rollouts_discarded"] for t in telemetry),
        "tokens_generated": sum(t["tokens_generated"] for t in telemetry),
        "seconds_per_step": mean(step_seconds),
    }


def manifest_summary(telemetry: list, times: list, result: dict) -> dict:
    """The manifest's summary: held-out accuracy and the telemetry's means and sums."""
    return {
        "heldout_greedy_all": result["greedy"]["ALL"]["success_rate"],
        "heldout_greedy_id50": result["greedy"]["ID50"]["success_rate"],
        "heldout_greedy_ood100": result["greedy"]["OOD100"]["success_rate"],
        "heldout_per_draw_all": result["per_draw"]["ALL"]["success_rate"],
        **telemetry_summary(telemetry, [t["step_seconds"] for t in times]),
    }


@dataclass(frozen=True)
class WeightDigests:
    """The policy's fingerprints: its digest before and after training (model_digest) and
    the SHA-256 of the final weights file it was saved to."""

    initial: str
    final: str
    file_sha256: str


def manifest(
    run,
    result: dict,
    adapters: list,
    digests: WeightDigests,
    resumed_from: int | None,
    wall_seconds: float,
) -> dict:
    """The run manifest of a finished study run (`run`: a study.StudyRun)."""
    initial_digest, final_digest = digests.initial, digests.final
    weights_sha = digests.file_sha256
    return {
        "schema": SCHEMA,
        "arm": run.arm,
        "seed": run.seed,
        "regime": run.regime,
        "lock_sha256": run.lock_sha,
        "identity": run.identity,
        "resumed_from_step": resumed_from,
        "config": run.config,
        "provenance": provenance(run.config),
        "stack_fingerprint": stack_fingerprint(run.config),
        "initial_model_digest": initial_digest,
        "final_model_digest": final_digest,
        "trainable": {
            "mode": run.budget["trainable"],
            "adapters": len(adapters),
            **lora.parameter_counts(run.policy),
        },
        "final_weights_sha256": weights_sha,
        "telemetry": run.telemetry,
        "times": run.times,
        "summary": manifest_summary(run.telemetry, run.times, result),
        "heldout": result,
        "wall_seconds": wall_seconds,
    }
