"""How the TRL backend generates its rollouts: a choice of the treatment lock.

TRL's GRPOTrainer samples with the model's own `generate` (the card's run) or with vLLM
(colocated on the training GPUs, or a separate server). vLLM's kernels sample from
slightly other probabilities than the trainer computes, and TRL 1.16 corrects for that by
default: it reweights each sequence by the trainer/sampler probability ratio and drops
those whose ratio exceeds 3 (`vllm_importance_sampling_mode="sequence_mask"`, cap 3.0).
That changes every arm's loss, so it is never left to a default: a lock that generates with
vLLM states the correction (off, or on with its mode and caps), and a run whose TRL
settings (its run configuration's trl_pins, or GRPOConfig after TRL's own checks) differ
from the lock's is refused in one line.

A lock without a `generation` section (configs/part2/lock.json, pre-registered before this
choice existed) means DEFAULT: the model's own `generate`, no correction (there is no
second sampler to correct for), written into GRPOConfig explicitly all the same.
"""

from __future__ import annotations

from verifiable_grpo.core.config import ConfigError

DEFAULT = {"engine": "transformers", "importance_sampling": {"correction": False}}
ENGINES = ("transformers", "vllm")
VLLM_MODES = ("colocate", "server")
IS_MODES = ("sequence_mask", "sequence_truncate", "token_mask", "token_truncate")
# Arms whose batch our own sampler assembles (trl/trainer.assemble): it carries no
# sampler log-probabilities, so TRL's correction has nothing to reweight with.
OWN_BATCH_SAMPLERS = ("dynamic", "aero")


def check_generation(spec: dict) -> dict:
    """A lock's generation section, checked (ValueError naming the key)."""
    if not isinstance(spec, dict) or spec.get("engine") not in ENGINES:
        raise ValueError(f"generation.engine: one of {ENGINES}")
    sampling = spec.get("importance_sampling")
    if not isinstance(sampling, dict) or not isinstance(sampling.get("correction"), bool):
        raise ValueError(
            "generation.importance_sampling.correction: state it (true or false); "
            "TRL's default would switch it on silently under vLLM"
        )
    if spec["engine"] == "transformers":
        if sampling != {"correction": False} or set(spec) != {"engine", "importance_sampling"}:
            raise ValueError(
                "generation: engine 'transformers' samples with the trained model itself: "
                "importance_sampling must be {'correction': false} and nothing else"
            )
        return spec
    if spec.get("vllm_mode") not in VLLM_MODES:
        raise ValueError(f"generation.vllm_mode: one of {VLLM_MODES}")
    if sampling["correction"]:
        if sampling.get("mode") not in IS_MODES:
            raise ValueError(f"generation.importance_sampling.mode: one of {IS_MODES}")
        for key in ("clip_max", "clip_min"):
            if key not in sampling:
                raise ValueError(
                    f"generation.importance_sampling.{key}: state it (a number or null)"
                )
    elif set(sampling) != {"correction"}:
        raise ValueError("generation.importance_sampling: with correction false, nothing else")
    return spec


def generation_of(lock: dict) -> dict:
    return lock.get("generation", DEFAULT)


def trl_fields(generation: dict) -> dict:
    """The GRPOConfig fields a generation section fixes."""
    sampling = generation["importance_sampling"]
    fields = {
        "use_vllm": generation["engine"] == "vllm",
        "vllm_importance_sampling_correction": sampling["correction"],
    }
    if generation["engine"] == "vllm":
        fields["vllm_mode"] = generation["vllm_mode"]
    if sampling["correction"]:
        fields.update(
            vllm_importance_sampling_mode=sampling["mode"],
            vllm_importance_sampling_clip_max=sampling["clip_max"],
            vllm_importance_sampling_clip_min=sampling["clip_min"],
        )
    return fields


def check_run(lock: dict, config: dict, sampler_kind: str) -> dict:
    """The lock's generation fields for this run, refused in one line where the run
    configuration pins another value, or where the arm or the device cannot honour them."""
    generation = check_generation(generation_of(lock))
    fields = trl_fields(generation)
    name = config.get("name")
    for key, value in config["trl_pins"].items():
        if key in fields and value != fields[key]:
            raise ConfigError(
                [
                    f"{name}: trl_pins.{key} is {value!r} but the treatment lock's generation "
                    f"section gives {fields[key]!r} (engine {generation['engine']!r}, "
                    f"importance-sampling correction {generation['importance_sampling']}); "
                    "the generation engine is a lock choice: pre-register a lock that "
                    "declares it, or drop the pin"
                ]
            )
    if generation["engine"] == "vllm" and config["device"] != "cuda":
        raise ConfigError([f"{name}: the lock generates with vLLM, which needs device: cuda"])
    if fields["vllm_importance_sampling_correction"] and sampler_kind in OWN_BATCH_SAMPLERS:
        raise ConfigError(
            [
                f"the {sampler_kind} sampler assembles its own batch without the sampler's "
                "log-probabilities, so the lock's vLLM importance-sampling correction "
                "cannot apply to it: declare correction false for this arm's study"
            ]
        )
    return fields


def check_effective(args, expected: dict) -> None:
    """After TRL's own __post_init__: every field the lock fixes is what GRPOConfig
    holds (a later TRL that renames or rewrites a value is refused, not followed)."""
    for key, value in expected.items():
        found = getattr(args, key, "<absent>")
        if found != value:
            raise ConfigError(
                [
                    f"GRPOConfig.{key} is {found!r} after TRL's checks but the treatment "
                    f"lock fixes {value!r}; this TRL version does not run the locked study"
                ]
            )
