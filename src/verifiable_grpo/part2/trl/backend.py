"""`family run --backend trl`: one arm / seed / regime of the family study on TRL's
GRPOTrainer, under the same treatment lock, seeds and run_manifest.json schema as the
tiny study, so `family analyse` reads a GPU study and the tiny one the same way.

The lock fixes the arm (its GRPOConfig fields, checked against training/trl_parity),
the seeds, the regimes (num_iterations = updates per rollout set) and the analysis; the
run configuration (trl/run_config) fixes the model, LoRA, data and budgets.

Checkpoints and resume. Every `checkpoint_every_steps` optimizer steps TRL's Trainer
writes RUN/checkpoints/checkpoint-N with the LoRA adapter (or the weights), the
optimizer, the scheduler, the trainer state (step, log history) and the RNG states
(Python, NumPy, torch CPU and CUDA); we add family_telemetry.json (the per-step records
so far and the run's identity). A rerun of the same command resumes from the newest
checkpoint: TRL restores all of that, skips the dataloader batches already used (the
prompt order is regenerated from the seeded sampler, not saved) and regenerates the
rollout set of the first step after the resume (TRL never saves buffered completions;
a checkpoint sits on a rollout-set boundary, so none is lost). Our samplers' refills
and curation draw from generators seeded by (seed, step), so they are regenerated too.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import torch

from verifiable_grpo.core import files, input_digests, interrupts, preregistration, runlock
from verifiable_grpo.core.config import ConfigError, config_hash, provenance, sha256_bytes
from verifiable_grpo.core.record_names import with_current_names
from verifiable_grpo.part2 import generation_lock, study, study_records
from verifiable_grpo.part2 import lock as lock_lib
from verifiable_grpo.part2.trl import checkpoints as trl_checkpoints
from verifiable_grpo.part2.trl import data as backend_data
from verifiable_grpo.part2.trl import run_config
from verifiable_grpo.part2.trl.trainer import TELEMETRY_FILE, StopAfter, TelemetryCheckpoint
from verifiable_grpo.training import objectives, trl_config, trl_parity

SCHEMA = "verifiable-grpo-family-run-v1"
LOGGED = (
    "loss",
    "grad_norm",
    "learning_rate",
    "clip_ratio/region_mean",
    "clip_ratio/low_mean",
    "clip_ratio/high_mean",
    "entropy",
    "step_time",
)


def arm_fields(lock: dict, arm: str) -> dict:
    """The arm's GRPOConfig fields as the lock pre-registered them, refused when TRL
    cannot express the arm or today's trl_parity mapping differs from the lock's."""
    objective = objectives.get_objective(arm)
    try:
        live = trl_parity.trl_arm(objective)
    except trl_parity.NotExpressibleInTRL as err:
        raise ConfigError([f"arm {arm!r} cannot run on the TRL backend: {err}"]) from err
    locked = lock["arms"][arm]["trl"]
    if locked["config"] != live.config:
        raise ConfigError(
            [
                f"arm {arm!r}: the lock's TRL fields {locked['config']} differ from "
                f"training/trl_parity's {live.config}; pre-register a new lock"
            ]
        )
    return dict(live.config)


def _identity(lock_sha, config, arm, seed, regime) -> dict:
    return {
        "backend": "trl",
        "lock_sha256": lock_sha,
        "arm": arm,
        "seed": seed,
        "regime": regime,
        "run_config_sha256": config_hash(config),
        "objective_sha256": objectives.get_objective(arm).sha256(),
        "inputs": backend_data.run_inputs(config),
    }


def bind_run_config(out, config: dict) -> None:
    """The first TRL run binds OUT to its run configuration's hash; another is refused
    (one study, one model and budget, as one lock)."""
    path = Path(out) / "trl-run-config.json"
    digest = config_hash(config)
    if not path.is_file():
        files.save_json(
            path,
            {"run_config_sha256": digest, "source_file": config["_source_file"], "config": config},
        )
        return
    bound = files.read_json(path)
    if bound["run_config_sha256"] != digest:
        raise ConfigError(
            [
                f"{out} holds runs of the configuration {bound['source_file']} "
                f"({bound['run_config_sha256'][:12]}...), not {config['_source_file']} "
                f"({digest[:12]}...): a study keeps one configuration; use a new --out"
            ]
        )


def _newest_checkpoint(folder: Path, identity: dict, main: bool = True) -> Path | None:
    """The newest sealed checkpoint of the run, verified file by file (trl/checkpoints)."""
    newest = trl_checkpoints.newest_verified(folder, main)
    if newest is None:
        return None
    theirs = files.read_json(newest / TELEMETRY_FILE)["identity"]
    input_digests.check_unchanged(theirs.get("inputs") or {}, identity["inputs"], newest)
    differ = [k for k in identity if theirs.get(k) != identity[k]]
    if differ:
        raise ValueError(
            f"{newest} belongs to another run ({differ[0]} is "
            f"{theirs.get(differ[0])!r}, this run's {identity[differ[0]]!r}): "
            "a run resumes only from its own checkpoints; use a new --out folder"
        )
    return newest


@dataclass(frozen=True)
class TrainerRequest:
    """What builds one run's GRPOTrainer (build_trainer) and its GRPOConfig (grpo_config)."""

    config: dict  # the run configuration (check_request's, with "_generation")
    fields: dict  # the arm's GRPOConfig fields, as the lock pre-registered them
    arm: str
    seed: int
    updates: int  # updates per rollout set (the regime's num_iterations)
    folder: Path  # this run's folder (checkpoints go to folder/checkpoints)
    processes: int = 1  # accelerate's processes for this run
    progress: bool = False


def grpo_config(request: TrainerRequest, layout: dict):
    """The run's GRPOConfig: the arm's fields (the lock's), the step layout, the run
    configuration's budget and pins, and the lock's generation fields."""
    config, fields, seed = request.config, request.fields, request.seed
    updates, folder, progress = request.updates, Path(request.folder), request.progress
    budget, cuda = config["budget"], config["device"] == "cuda"
    # the lock's generation fields (checked against trl_pins by check_request); the pins
    # name no field of the layout or the budget (run_schema.RESERVED_PINS)
    generation = config.get("_generation") or generation_lock.trl_fields(generation_lock.DEFAULT)
    run = {
        "output_dir": str(folder / "checkpoints"),
        **layout,
        **{**config["trl_pins"], **generation},
        "num_iterations": updates,
        "max_completion_length": budget["max_completion_length"],
        "temperature": budget["temperature"],
        "learning_rate": budget["learning_rate"],
        "lr_scheduler_type": budget["lr_scheduler"],
        "warmup_steps": budget["warmup_steps"],
        "weight_decay": budget["weight_decay"],
        "max_grad_norm": budget["max_grad_norm"],
        "max_steps": budget["steps"] * updates,
        "save_strategy": "steps",
        "save_steps": budget["checkpoint_every_steps"] * updates,
        "save_only_model": False,
        "logging_steps": 1,
        "report_to": config.get("report_to", "none"),
        "seed": seed,
        "data_seed": seed,
        "use_cpu": not cuda,
        "bf16": cuda and config["model"]["dtype"] == "bfloat16",
        "activation_checkpointing": budget["gradient_checkpointing"],
        "disable_tqdm": not progress,
        "dataloader_num_workers": 0,
        "log_completions": False,
        "chat_template_kwargs": config["data"]["chat_template_kwargs"],
    }
    args = trl_config.grpo_config(fields, run)
    generation_lock.check_effective(args, {**fields, **generation})
    return args


def _model_and_tokenizer(config: dict):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    spec = config["model"]
    where = spec["name_or_path"]
    local = backend_data.checked_base(where)  # a flipped byte in the base: refused
    where = str(local) if local.exists() else where
    tokenizer = AutoTokenizer.from_pretrained(where, revision=spec["revision"])
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    try:
        model = AutoModelForCausalLM.from_pretrained(
            where, revision=spec["revision"], dtype=getattr(torch, spec["dtype"])
        )
    except Exception as err:  # a truncated or altered weights file: one line, not a traceback
        first = (str(err).strip().splitlines() or [""])[0][:200]
        raise files.DamagedFileError(
            f"model.name_or_path {where}: the weights cannot be loaded "
            f"({type(err).__name__}: {first}); restore the model folder"
        ) from err
    return model, tokenizer


def _lora(config: dict):
    from peft import LoraConfig

    spec = config["model"]["lora"]
    return LoraConfig(
        r=spec["r"],
        lora_alpha=spec["alpha"],
        lora_dropout=spec["dropout"],
        target_modules=spec["target_modules"],
        task_type="CAUSAL_LM",
    )


def check_request(lock_file, config_file, run: lock_lib.LockedRun, processes=1, cuda_count=None):
    """Everything refusable before a model loads: (lock, sha, config, fields); `cuda_count`
    stands in for this machine's GPUs (a dry run of a GPU study on a CPU machine)."""
    arm, seed, regime = run.arm, run.seed, run.regime
    lock, lock_sha = lock_lib.read_lock(lock_file)
    lock_lib.check_lock(lock, arm, seed, regime, lock_file)
    config = run_config.load_run_config(config_file)
    fields = arm_fields(lock, arm)
    if config["budget"]["beta"] != fields["beta"]:
        raise ConfigError(
            [
                f"{config['name']}: budget.beta is {config['budget']['beta']}, the "
                f"lock's arm {arm} runs beta {fields['beta']}"
            ]
        )
    sampler = objectives.get_objective(arm).sampler.kind
    run_config.check_machine(config, processes, sampler, cuda_count)
    # "_": outside the run configuration's hash; the lock's own hash covers it
    config = {**config, "_generation": generation_lock.check_run(lock, config, sampler)}
    return lock, lock_sha, config, fields


def run_arm_trl(
    lock_file,
    config_file,
    out,
    run: lock_lib.LockedRun,
    stop_after: int | None = None,
    progress: bool = False,
) -> dict | None:
    """Run (or continue) one arm/seed/regime through GRPOTrainer; its manifest, or None
    when stopped after `stop_after` optimizer steps."""
    started = time.perf_counter()
    arm, seed, regime = run.arm, run.seed, run.regime
    processes = run_config.world_size()
    lock, lock_sha, config, fields = check_request(lock_file, config_file, run, processes)
    folder = study.run_dir(out, regime, arm, seed)
    if (folder / "run_manifest.json").is_file():
        raise FileExistsError(
            f"{folder / 'run_manifest.json'} exists: this run is finished "
            "and evidence is never overwritten (use a new --out folder)"
        )
    request = TRLRunRequest(
        lock,
        lock_sha,
        config,
        fields,
        folder,
        arm,
        seed,
        regime,
        processes,
        stop_after,
        progress,
        started,
        preregistration.vouched_stamp_sha256(out),
    )
    if run_config.process_rank() != 0:  # the main process holds the folder and writes
        return _train_and_record(request)
    out = runlock.usable_folder(out)
    study.bind_study_folder(out, lock_sha, str(lock_file))
    bind_run_config(out, config)
    with runlock.locked(folder, f"family run --backend trl --arm {arm} --seed {seed}"):
        return _train_and_record(request)


def build_trainer(request: TrainerRequest):
    """(FamilyGRPOTrainer for this arm, tokenizer): the model, LoRA, data and GRPOConfig."""
    from datasets import Dataset
    from transformers import PrinterCallback, set_seed

    from verifiable_grpo.part2.trl.trainer import FamilyGRPOTrainer, GSM8KReward

    config, seed, progress = request.config, request.seed, request.progress
    layout = run_config.step_layout(config, request.processes)
    train = backend_data.examples(config, "train")
    args = grpo_config(request, layout)
    model, tokenizer = _model_and_tokenizer(config)  # after the settings are refusable
    set_seed(seed)  # the LoRA A matrices draw from the global generator
    trainer = FamilyGRPOTrainer(
        model=model,
        args=args,
        train_dataset=Dataset.from_list(train),
        processing_class=tokenizer,
        peft_config=_lora(config),
        objective=objectives.get_objective(request.arm),
        seed=seed,
        pool=train,
        reward=GSM8KReward(),
    )
    if not progress:
        trainer.remove_callback(PrinterCallback)  # no per-step log dicts on stdout
    return trainer, tokenizer


@dataclass(frozen=True)
class TRLRunRequest:
    """One TRL run, checked before any model loads (check_request): what the training needs."""

    lock: dict
    lock_sha: str
    config: dict  # the run configuration, its lock's generation fields in "_generation"
    fields: dict  # the arm's GRPOConfig fields, as the lock pre-registered them
    folder: Path  # this run's folder
    arm: str
    seed: int
    regime: str
    processes: int  # accelerate's processes for this run
    stop_after: int | None  # stop (checkpointed) after this many steps; None: to the end
    progress: bool
    started: float  # time.perf_counter() when the command started
    stamp_sha256: str | None = None  # the study stamp the run runs under (None: none)


def _train_and_record(request: TRLRunRequest):
    """run_arm_trl's work once the run folder is held (or on a process other than the main)."""
    identity = _identity(
        request.lock_sha, request.config, request.arm, request.seed, request.regime
    )
    resume = _newest_checkpoint(request.folder, identity, run_config.process_rank() == 0)
    updates = request.lock["regimes"][request.regime]["updates_per_rollout"]
    trainer, tokenizer = build_trainer(
        TrainerRequest(
            request.config,
            request.fields,
            request.arm,
            request.seed,
            updates,
            request.folder,
            request.processes,
            request.progress,
        )
    )
    trainer.add_callback(TelemetryCheckpoint(trainer, identity, request.stamp_sha256))
    trainer.add_callback(
        StopAfter(request.stop_after * updates if request.stop_after is not None else None)
    )
    if resume is not None:
        # a checkpoint written before the rename says `zvf` (no code hash guards this resume)
        trainer.family_telemetry = with_current_names(
            files.read_json(resume / TELEMETRY_FILE)["telemetry"]
        )
    trainer.train(resume_from_checkpoint=str(resume) if resume is not None else None)
    if trainer.state.global_step < trainer.state.max_steps:
        interrupts.check(
            f"after step {trainer.state.global_step // updates} of {request.regime}/{request.arm}/"
            f"seed {request.seed} (checkpoint saved)"
        )
        return None
    final = request.folder / "final"
    trainer.save_model(str(final))
    tokenizer.save_pretrained(str(final))
    # every process evaluates its share of the batches (trl/data); the results are
    # gathered once, and the main process writes the manifest (its telemetry holds every
    # process's groups: FamilyGRPOTrainer gathers them).
    result = backend_data.heldout_accuracy(trainer.model, tokenizer, request.config)
    if run_config.process_rank() != 0:
        return None
    telemetry = _with_updates(trainer.family_telemetry, trainer.state.log_history, updates)
    manifest = {
        "schema": SCHEMA,
        "backend": "trl",
        "arm": request.arm,
        "seed": request.seed,
        "regime": request.regime,
        "lock_sha256": request.lock_sha,
        "identity": identity,
        "resumed_from_step": int(resume.name.split("-")[1]) // updates if resume else None,
        "config": {
            **request.config,
            "grpo": _study_view(request.config, updates),
            "trl_fields": request.fields,
        },
        "provenance": provenance(),
        "versions": _versions(),
        "stack_fingerprint": stack_fingerprint(request.config),
        "telemetry": telemetry,
        "summary": _summary(telemetry, result),
        "heldout": result,
        "wall_seconds": time.perf_counter() - request.started,
    }
    files.save_json(request.folder / "run_manifest.json", manifest)
    return manifest


def base_heldout(lock_file, config_file, out) -> dict:
    """The untrained base's held-out accuracy (a LoRA adapter starts as the base: B = 0),
    measured once per study folder as OUT/warmstart-heldout.json, which `family analyse`
    reports beside the arms (the card's manifests do not store it)."""
    path = Path(out) / "warmstart-heldout.json"
    if path.is_file():
        return files.read_json(path)
    lock, lock_sha = lock_lib.read_lock(lock_file)
    lock_lib.check_lock(lock, path=lock_file)
    config = run_config.load_run_config(config_file)
    run_config.check_machine(config, 1, "plain")
    study.bind_study_folder(out, lock_sha, str(lock_file))
    bind_run_config(out, config)
    model, tokenizer = _model_and_tokenizer(config)
    if config["device"] == "cuda":
        model.to("cuda")
    result = backend_data.heldout_accuracy(model, tokenizer, config)
    record = {
        "policy": f"untrained base {config['model']['name_or_path']}",
        "lock_sha256": lock_sha,
        "run_config_sha256": config_hash(config),
        "heldout": result,
        "versions": _versions(),
        "provenance": provenance(),
    }
    files.save_json(path, record)
    return record


def _study_view(config: dict, updates: int) -> dict:
    """The run's counts under the names the tiny study's manifests use (analysis reads them)."""
    budget = config["budget"]
    return {
        "iterations": budget["steps"],
        "prompts_per_iteration": budget["prompts_per_step"],
        "group_size": budget["group_size"],
        "updates_per_rollout": updates,
        "learning_rate": budget["learning_rate"],
        "kl_coefficient": budget["beta"],
    }


def _with_updates(telemetry: list, log_history: list, updates: int) -> list:
    """Each rollout set's record with the optimizer steps it fed (TRL's logged values)."""
    logged = {e["step"]: e for e in log_history if "loss" in e}
    joined = []
    for record in telemetry:
        steps = [record["step"] * updates + u + 1 for u in range(updates)]
        values = {
            key.replace("/", "_"): [logged.get(s, {}).get(key) for s in steps] for key in LOGGED
        }
        # the names our runner's telemetry uses for the same quantities
        values["clip_low_fraction"] = values["clip_ratio_low_mean"]
        values["clip_high_fraction"] = values["clip_ratio_high_mean"]
        joined.append({**record, **values})
    return joined


def _summary(telemetry: list, result: dict) -> dict:
    # TRL's step_time covers generation, scoring and the update of an optimizer step
    times = [
        sum(t["step_time"]) if None not in t["step_time"] else t["generation_seconds"]
        for t in telemetry
    ]
    return {
        "heldout_greedy_all": result["greedy"]["ALL"]["success_rate"],
        **study_records.telemetry_summary(telemetry, times),
    }


def _versions() -> dict:
    import accelerate
    import peft
    import transformers
    import trl

    return {
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "trl": trl.__version__,
        "peft": peft.__version__,
        "accelerate": accelerate.__version__,
    }


def stack_fingerprint(config: dict) -> str:
    """SHA-256 of the library versions, the device and the precision a run used."""
    device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
    return sha256_bytes(
        repr(
            (
                sorted(_versions().items()),
                device,
                config["model"]["dtype"],
                torch.__config__.parallel_info().splitlines()[:1],
            )
        ).encode()
    )
