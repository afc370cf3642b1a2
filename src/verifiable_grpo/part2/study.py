"""One run of the family study: an arm, a seed, a regime, under the treatment lock.

A step: the arm's sampler collects the batch (training/samplers.py) from a rollout source
that wraps the policy and the verifier; the arm's objective turns rewards into
advantages; the captured log-probs are checked against rescoring; then the regime's
updates (1 or 2 per rollout set) run through Part I's `grpo.grpo_update` with the arm's
objective. Nothing here is a second training loop's arithmetic.

Resume boundary: after a step. Every `checkpoint_every_steps` steps the full state
(weights, AdamW, scheduler, prompt order, generation, sampler and system RNGs, the
telemetry so far) goes to RUN/checkpoints/checkpoint-NNNN.pt with its SHA-256 in
checkpoint-NNNN.json (the newest pair kept); a checkpoint whose bytes no longer have that
SHA-256 is refused before it is unpickled. A run started again continues from it and ends
in the same bits as an uninterrupted run (the
steps after it are redone from the restored RNG states). The run folder belongs to one
arm, seed and regime: a checkpoint of another is refused.

Layout (OUT = the study folder):
  OUT/study.json                      the lock SHA-256 this folder is bound to
  OUT/data/, OUT/learning-data/       the dataset (written once) and its learning view
  OUT/warmstart-heldout.json          the untrained warm start's held-out accuracy
  OUT/runs/{regime}/{arm}-seed-{S}/   checkpoints/, final.safetensors, run_manifest.json
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from verifiable_grpo.core import anchors, checkpoint, files, interrupts, preregistration, runlock
from verifiable_grpo.core import model as model_lib
from verifiable_grpo.core.config import ConfigError, provenance
from verifiable_grpo.core.config_schema import Profile
from verifiable_grpo.core.faults import fault_point
from verifiable_grpo.core.progress import tqdm
from verifiable_grpo.core.resumable_run import ResumableRun
from verifiable_grpo.part2 import heldout, study_records
from verifiable_grpo.part2 import lock as lock_lib
from verifiable_grpo.part2.policy_source import PolicySource
from verifiable_grpo.part2.study_adapters import (  # noqa: F401 (re-exported)
    LORA_SEED_OFFSET,
    attach_adapters,
    merged_copy,
)
from verifiable_grpo.task import data
from verifiable_grpo.training import (
    batched_scoring,
    grpo,
    objectives,
    rollout,
    samplers,
)

SAMPLER_SEED_OFFSET = 400  # grpo.py uses 200 (generation) and 300 (prompt order)
# The code a study checkpoint depends on: this module and everything it imports.
CODE_ENTRY = "part2/study.py"


# --------------------------------------------------------------------------- folders
def run_dir(out, regime: str, arm: str, seed: int) -> Path:
    return Path(out) / "runs" / regime / f"{arm}-seed-{seed}"


def manifest_path(out, regime: str, arm: str, seed: int) -> Path:
    return run_dir(out, regime, arm, seed) / "run_manifest.json"


def bind_study_folder(out, lock_sha: str, lock_file: str) -> None:
    """The first run binds OUT to the lock's SHA-256; a changed lock is refused after."""
    path = Path(out) / "study.json"
    if path.is_file():
        bound = files.read_json(path)["lock_sha256"]
        if bound != lock_sha:
            raise ConfigError(
                [
                    f"the treatment lock changed: {out} was started under lock "
                    f"{bound[:12]}... but {lock_file} now hashes to {lock_sha[:12]}...; "
                    "a pre-registered study cannot change its lock: restore the "
                    "file, or run the new lock in a new --out folder"
                ]
            )
        return
    files.save_json(path, {"lock_sha256": lock_sha, "lock_file": str(lock_file)})


def prepare_data(out, config: Profile) -> tuple[Path, Path]:
    """OUT/data (all splits) and OUT/learning-data (what training may read), once."""
    out = Path(out)
    data_dir, learning = out / "data", out / "learning-data"
    if not (data_dir / "MANIFEST.json").is_file():
        data.write_dataset(data_dir, config.data.seed)
    if not (learning / "MANIFEST.json").is_file():
        data.write_learning_view(data_dir, learning)
    data.assert_learning_only(learning)
    return data_dir, learning


# --------------------------------------------------------------------------- the run
@dataclass
class StudyRun(ResumableRun):
    CODE_ENTRY = CODE_ENTRY
    STATE_ORDER = (
        "identity",
        "step",
        "model",
        "optimizer",
        "scheduler",
        "prompt_order",
        "generation_rng",
        "sampler_rng",
        "system_rng",
        "telemetry",
        "timings",
    )
    config: Profile
    lock: dict
    lock_sha: str
    arm: str
    seed: int
    regime: str
    folder: Path
    examples: list
    tokenizer: object
    policy: object
    reference: object
    objective: objectives.Objective
    identity: dict = field(default_factory=dict)
    optimizer: object = None
    scheduler: object = None
    order: grpo.PromptOrder | None = None
    generator: torch.Generator | None = None
    sampler_rng: torch.Generator | None = None
    step: int = 0
    telemetry: list = field(default_factory=list)
    times: list = field(default_factory=list)
    stamp_sha256: str | None = None  # the study stamp this run runs under (None: none)

    @property
    def budget(self) -> dict:
        return self.lock["budget"]

    @property
    def updates_per_rollout(self) -> int:
        return self.lock["regimes"][self.regime]["updates_per_rollout"]

    def run_state(self) -> dict:
        return {
            "step": self.step,
            "prompt_order": self.order.state(),
            "generation_rng": self.generator.get_state(),
            "sampler_rng": self.sampler_rng.get_state(),
            "telemetry": self.telemetry,
            "timings": {"per_step": list(self.times)},
        }

    def load_run_state(self, state: dict) -> None:
        self.order.load(state["prompt_order"])
        self.generator.set_state(state["generation_rng"])
        self.sampler_rng.set_state(state["sampler_rng"])
        self.step = int(state["step"])
        self.telemetry = list(state["telemetry"])
        self.times = list(state["timings"]["per_step"])

    def check_boundary(self, what: str) -> None:
        if len(self.telemetry) != self.step:
            raise ValueError(f"{what} is not at a completed step boundary")


def _identity(run: StudyRun, warm_sha: str, learning_sha: str) -> dict:
    return {
        "lock_sha256": run.lock_sha,
        "arm": run.arm,
        "seed": run.seed,
        "regime": run.regime,
        "objective_sha256": run.objective.sha256(),
        **run.shared_identity(run.config),  # the whole config: no sections
        "warm_start_sha256": warm_sha,
        "learning_data_sha256": learning_sha,
    }


def _prepare(run: StudyRun) -> None:
    run.prepare_optimizer(run.config.grpo, run.budget["steps"] * run.updates_per_rollout)
    run.order = grpo.PromptOrder(len(run.examples), run.seed + grpo.PROMPT_ORDER_SEED_OFFSET)
    device = rollout.model_device(run.policy)
    run.generator = torch.Generator(device=device).manual_seed(
        run.seed + grpo.GENERATION_SEED_OFFSET
    )
    run.sampler_rng = torch.Generator().manual_seed(run.seed + SAMPLER_SEED_OFFSET)
    checkpoint.seed_everything(run.seed)


def _checkpoints(run: StudyRun) -> list[Path]:
    return sorted((run.folder / "checkpoints").glob("checkpoint-*.pt"))


def _recorded_sha256(path: Path) -> str | None:
    """The SHA-256 written beside a checkpoint once it was complete (None: no record, the
    write was cut short)."""
    record = path.with_suffix(".json")
    return files.read_json(record)["sha256"] if record.is_file() else None


def _anchored(path: Path) -> bool:
    """Whether the checkpoint's record is anchored (core.anchors: one without was cut short)."""
    record = path.with_suffix(".json")
    return record.is_file() and anchors.is_anchored(path.parent, record, "study checkpoint")


def _restore(run: StudyRun) -> bool:
    # Only a checkpoint with its anchored record is trusted, and only if it still matches.
    found = [p for p in _checkpoints(run) if _anchored(p)]
    if not found:
        return False
    path = found[-1]
    state = checkpoint.load_state(path, _recorded_sha256(path))
    theirs = state["identity"]
    mine = run.identity
    other = [k for k in ("arm", "seed", "regime") if theirs.get(k) != mine[k]]
    if other:
        raise ValueError(
            f"{path} is a checkpoint of arm {theirs.get('arm')} seed "
            f"{theirs.get('seed')} regime {theirs.get('regime')}, not of this run "
            f"(arm {run.arm} seed {run.seed} regime {run.regime}): a run resumes "
            "only from its own folder's checkpoints; move the file back to its "
            "own run folder"
        )
    run.restore(state, f"checkpoint {path}")
    return True


def _save_checkpoint(run: StudyRun) -> None:
    """checkpoint-NNNN.pt, then checkpoint-NNNN.json with its SHA-256, anchored (as Part I's
    crash pairs); older pairs go only after, so a kill leaves one complete pair."""
    target = run.folder / "checkpoints" / f"checkpoint-{run.step:04d}.pt"
    record = target.with_suffix(".json")
    old = [
        p for p in (run.folder / "checkpoints").glob("checkpoint-*.*") if p not in (target, record)
    ]
    anchors.forget(target.parent, drop={record.name})
    for path in (record, target):  # the same step redone after a crash
        if path.exists():
            path.unlink()
    saved = checkpoint.save_state(target, run.state(), compress=False)  # gzip costs seconds
    files.save_json(record, {"step": run.step, "sha256": saved["sha256"], "bytes": saved["bytes"]})
    anchors.anchor(target.parent, record, run.stamp_sha256)
    fault_point("family-after-checkpoint")
    for path in old:
        path.unlink()
    anchors.forget(target.parent, keep={record.name})


def _step(run: StudyRun) -> None:
    started = time.perf_counter()
    step = run.step
    objective = run.objective
    budget = run.budget
    batch = samplers.collect(
        PolicySource(run),
        objective.sampler,
        budget["prompts_per_step"],
        budget["group_size"],
        step,
        run.sampler_rng,
    )
    generation_seconds = time.perf_counter() - started
    groups = []
    for g in batch.groups:
        one = len(g["rewards"]) == 1
        groups.append(
            objectives.with_advantages(
                g, objective, g["successes"] if one else None, g["observations"] if one else None
            )
        )
    rows = [r for g in groups for r in g["responses"]]
    # run_config keeps grpo.share_prompts false: the recorded study reruns as recorded.
    verification = batched_scoring.verify_rollout_set(run.policy, rows, run.config, run.tokenizer)
    tick = time.perf_counter()
    slots = budget["group_size"] if objective.sampler.kind == "aero" else None
    updates = [
        grpo.grpo_update(
            grpo.Trainee(run.policy, run.reference, run.optimizer, run.scheduler),
            groups,
            run.config,
            grpo.UpdateOptions(objective, slots=slots),
        )
        for _ in range(run.updates_per_rollout)
    ]
    update_seconds = time.perf_counter() - tick
    drawn = [r for group in batch.drawn for r in group]
    zero_variance_fraction = study_records.mean(g["zero_variance"] for g in groups)
    run.telemetry.append(
        {
            "step": step,
            "document_ids": [g["document_id"] for g in groups],
            "rewards": [g["rewards"] for g in groups],
            "advantages": [g["advantages"] for g in groups],
            "strategies": [g["strategy"] for g in groups],
            "mean_reward": study_records.mean(r for g in groups for r in g["rewards"]),
            "mean_reward_drawn": study_records.mean(drawn),
            "zero_variance_fraction": zero_variance_fraction,
            "gu": 1.0 - zero_variance_fraction,
            "zero_variance_fraction_drawn": study_records.mean(
                len(set(d)) == 1 for d in batch.drawn
            ),
            **batch.cost.as_dict(),
            "tokens_trained": sum(r["response_tokens"] for r in rows),
            "verify_max_abs_difference": verification["max_abs_difference"],
            "loss": [u["loss"] for u in updates],
            "grad_norm": [u["grad_norm"] for u in updates],
            "learning_rate": [u["learning_rate"] for u in updates],
            "clip_low_fraction": [u["clip_low_fraction"] for u in updates],
            "clip_high_fraction": [u["clip_high_fraction"] for u in updates],
            "mean_exact_kl": [u["mean_exact_kl"] for u in updates],
            "ratio_range": [[u["ratio_min"], u["ratio_max"]] for u in updates],
        }
    )
    run.step += 1
    run.times.append(
        {
            "step": step,
            "generation_seconds": generation_seconds,
            "update_seconds": update_seconds,
            "step_seconds": time.perf_counter() - started,
        }
    )


def warmstart_heldout(lock: dict, out, lock_sha: str, progress: bool = False) -> dict:
    """The untrained warm start's held-out accuracy, measured once per study folder."""
    out = Path(out)
    path = out / "warmstart-heldout.json"
    if path.is_file():
        return files.read_json(path)
    config = lock_lib.run_config(lock, next(iter(lock["regimes"])), lock["seeds"][0])
    data_dir, _ = prepare_data(out, config)
    warm = lock["warm_start"]
    policy, _ = model_lib.reload_policy(lock_lib.warm_start_path(warm), config, warm["sha256"])
    policy.eval()
    result = heldout.heldout_accuracy(policy, model_lib.load_tokenizer(config), config, data_dir)
    record = {
        "policy": "warm start (untrained)",
        "lock_sha256": lock_sha,
        "warm_start_sha256": warm["sha256"],
        "heldout": result,
        "provenance": provenance(config),
    }
    files.save_json(path, record)
    return record


def run_arm(
    lock_file,
    out,
    run: lock_lib.LockedRun,
    stop_after: int | None = None,
    progress: bool = False,
) -> dict | None:
    """Run (or continue) one arm/seed/regime; returns its manifest, or None when stopped
    after `stop_after` steps (a checkpoint boundary or not: the rerun continues from the
    newest checkpoint)."""
    started = time.perf_counter()
    arm, seed, regime = run.arm, run.seed, run.regime
    lock, lock_sha = lock_lib.read_lock(lock_file)
    lock_lib.check_lock(lock, arm, seed, regime, lock_file)
    config = lock_lib.run_config(lock, regime, seed)
    out = runlock.usable_folder(out)
    bind_study_folder(out, lock_sha, str(lock_file))
    folder = run_dir(out, regime, arm, seed)
    # One process per run folder: a second command on it is refused here, before compute.
    with runlock.locked(folder, f"family run --arm {arm} --seed {seed} --regime {regime}"):
        if (folder / "run_manifest.json").is_file():
            raise FileExistsError(
                f"{folder / 'run_manifest.json'} exists: this run is finished and evidence is "
                "never overwritten (use a new --out folder)"
            )
        request = RunRequest(
            lock, lock_sha, config, out, folder, arm, seed, regime, stop_after, progress, started
        )
        stamp = preregistration.vouched_stamp_sha256(out)
        return _train_and_record(request, stamp)


@dataclass(frozen=True)
class RunRequest:
    """One run, checked against the lock, its folder held: what the training needs."""

    lock: dict
    lock_sha: str
    config: dict  # the lock's run configuration for this regime and seed
    out: Path  # the study folder (its data, shared by the runs)
    folder: Path  # this run's folder
    arm: str
    seed: int
    regime: str
    stop_after: int | None  # stop (checkpointed) after this many steps; None: to the end
    progress: bool
    started: float  # time.perf_counter() when the command started


def _train_and_record(request: RunRequest, stamp_sha256: str | None) -> dict | None:
    """run_arm's work once the run folder is held; `stamp_sha256`: the study stamp the run
    runs under, anchored with its checkpoints (None: a run made outside a stamp)."""
    data_dir, learning = prepare_data(request.out, request.config)
    examples = data.read_examples(learning, "train")
    warm = request.lock["warm_start"]
    warm_path = lock_lib.warm_start_path(warm)
    policy, _ = model_lib.reload_policy(warm_path, request.config, warm["sha256"])
    reference, _ = model_lib.reload_policy(warm_path, request.config, warm["sha256"])
    policy.eval()
    reference.eval()
    reference.requires_grad_(False)
    adapters = attach_adapters(policy, request.lock["budget"], request.seed)
    tokenizer = model_lib.load_tokenizer(request.config)
    run = StudyRun(
        request.config,
        request.lock,
        request.lock_sha,
        request.arm,
        request.seed,
        request.regime,
        request.folder,
        examples,
        tokenizer,
        policy,
        reference,
        objectives.get_objective(request.arm),
        stamp_sha256=stamp_sha256,
    )
    initial_digest = model_lib.model_digest(policy)
    reference_digest = model_lib.model_digest(reference)
    run.identity = _identity(run, warm["sha256"], data.dataset_sha256(learning))
    _prepare(run)
    resumed_from = run.step if _restore(run) else None
    every = run.budget["checkpoint_every_steps"]
    steps = run.budget["steps"]
    bar = tqdm(
        range(run.step, steps),
        desc=f"{run.regime} {run.arm} seed {run.seed}",
        initial=run.step,
        total=steps,
        disable=not request.progress,
        unit="step",
    )
    for _ in bar:
        _step(run)
        fault_point("family-after-step")
        stopping = request.stop_after is not None and request.stop_after <= run.step < steps
        if run.step % every == 0 or run.step == steps or stopping or interrupts.requested():
            _save_checkpoint(run)  # a signal or a requested stop keeps the step just done
        if stopping:
            return None
        interrupts.check(f"after step {run.step} of {run.regime}/{run.arm}/seed {run.seed}")
    bar.close()
    if model_lib.model_digest(reference) != reference_digest:
        raise ValueError("the frozen reference changed during the run")
    return _finish(run, data_dir, adapters, initial_digest, resumed_from, request.started)


def _finish(
    run: StudyRun,
    data_dir: Path,
    adapters: list,
    initial_digest: str,
    resumed_from: int | None,
    command_start: float,
) -> dict:
    """The final weights, the held-out evaluation and the run manifest."""
    folder = run.folder
    final_digest = model_lib.model_digest(run.policy)
    if (folder / "final.safetensors").exists():  # written before a crash, no manifest yet
        (folder / "final.safetensors").unlink()
    # A LoRA policy is saved merged (a plain model reload_policy can read); the held-out
    # evaluation below uses the policy as trained, adapters unmerged.
    weights_sha = model_lib.save_policy(
        merged_copy(run.policy) if adapters else run.policy,
        folder / "final.safetensors",
        {
            "arm": run.arm,
            "seed": run.seed,
            "regime": run.regime,
            "steps": run.budget["steps"],
            "lock_sha256": run.lock_sha,
            "trainable": run.budget["trainable"],
        },
    )
    result = heldout.heldout_accuracy(run.policy, run.tokenizer, run.config, data_dir)
    manifest = study_records.manifest(
        run,
        result,
        adapters,
        study_records.WeightDigests(initial_digest, final_digest, weights_sha),
        resumed_from,
        time.perf_counter() - command_start,
    )
    files.save_json(folder / "run_manifest.json", manifest)
    return manifest
