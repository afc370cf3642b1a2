"""GRPO from the warm start: "educational GRPO, exact KL on prefixes".

One iteration: take prompts_per_iteration training prompts (a seeded permutation read
with a cursor), sample a group of G responses to each with the current policy (which is
then the old/behaviour policy), score them with the verifier, turn the rewards into
group-relative advantages, check that full-sequence rescoring recovers the captured
log-probs, then make updates_per_rollout AdamW updates on all of the iteration's
responses. The loss is the clipped surrogate plus kl_coefficient times the exact KL to
the frozen reference on every visited prefix, both averaged over tokens, then responses,
then prompts (losses.grpo_objective).

Three roles, never interchanged: the policy (trained), the old log-probs (captured at
sampling time, never recomputed), the reference (a second strict reload of the warm
start, frozen, checked unchanged by digest).

Resume boundary: after both updates of an iteration. The saved state holds everything
the rest of the run depends on (weights, AdamW, scheduler, prompt order, generation RNG,
system RNGs, consumed rollout ids, history); wall times live under "timings", which the
state comparison ignores.

Outputs (OUT = out_dir):
  OUT/rollouts/{branch}-{mode}/iteration-NNNN.json   what was sampled, scored and updated
  OUT/checkpoints/{branch}-{mode}.pt.gz               the full state after the last iteration
  OUT/checkpoints/{branch}-resume.safetensors         final weights (mode resume)
  OUT/learning/{branch}-{mode}.json                   history, telemetry with times, costs
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from verifiable_grpo.core import checkpoint, crash, files, interrupts
from verifiable_grpo.core import model as model_lib
from verifiable_grpo.core.config import (
    ConfigError,
    load_config,
    provenance,
    sections_hash,
    sha256_file,
)
from verifiable_grpo.core.config_schema import Profile, typed
from verifiable_grpo.core.faults import fault_point
from verifiable_grpo.core.progress import tqdm
from verifiable_grpo.core.resumable_run import ResumableRun, deterministic_kernels
from verifiable_grpo.core.runfolder import RunFolder, check_mode, compute_identity, stage_name
from verifiable_grpo.task import data, prompts
from verifiable_grpo.training import batched_rollout, batched_scoring, objectives, rollout
from verifiable_grpo.training.gradients import accumulate_gradients  # noqa: F401 (re-exported)
from verifiable_grpo.training.grpo_plan import (  # noqa: F401 (re-exported)
    GENERATION_SEED_OFFSET,
    PROMPT_ORDER_SEED_OFFSET,
    PromptOrder,
    branch_budget,
)
from verifiable_grpo.training.grpo_record import history_entry

# The code a GRPO state depends on: this module and everything it imports (a resume
# refuses a state written by other code).
CODE_ENTRY = "training/grpo.py"


# --------------------------------------------------------------------------- one update
def grpo_update(policy, reference, optimizer, scheduler, groups: list[dict], config: dict,
                objective: objectives.Objective | None = None, slots: int | None = None,
                reference_memo: dict | None = None) -> dict:
    """One AdamW update on every response of a rollout set (Part I's objective unless
    another is given; `slots` and `reference_memo` as in gradients.accumulate_gradients);
    returns its telemetry."""
    if policy.training or reference.training:
        raise ValueError("dropout must stay off: policy and reference in eval mode")
    learning_rate = optimizer.param_groups[0]["lr"]
    optimizer.zero_grad(set_to_none=True)
    telemetry = accumulate_gradients(policy, reference, groups, config, objective, slots,
                                     reference_memo)
    grad_norm = torch.nn.utils.clip_grad_norm_(
        model_lib.unique_parameters(policy), typed(config).grpo.max_grad_norm,
        error_if_nonfinite=True)
    if any(p.grad is not None or p.requires_grad for p in reference.parameters()):
        raise ValueError("the reference received gradients or became trainable")
    optimizer.step()
    scheduler.step()
    optimizer.zero_grad(set_to_none=True)
    return {"learning_rate": learning_rate, **telemetry, "grad_norm": float(grad_norm)}


# --------------------------------------------------------------------------- run folder
# The config parts a GRPO state depends on (the data and the warm start enter by SHA-256).
IDENTITY_SECTIONS = ("seed", "device", "model", "tokens", "sampling", "grpo")


def _paths(out_dir: Path, branch: str, mode: str) -> dict:
    folder = RunFolder(out_dir)
    return {
        "out": out_dir,
        "warmstart": folder.policy("warmstart"),
        "learning_data": folder.learning_data,
        "state": folder.state(branch, mode),
        "interrupt_state": folder.state(branch, "interrupt"),
        "weights": folder.policy(branch),
        "record": folder.record(branch, mode),
        "rollouts": folder.rollouts(branch, mode),
    }


def _outputs(paths: dict, mode: str) -> list[Path]:
    """Every file this branch and mode writes (rollout evidence included)."""
    found = [p for p in (paths["state"], paths["record"]) if p.exists()]
    if mode == "resume" and paths["weights"].exists():
        found.append(paths["weights"])
    if paths["rollouts"].is_dir():
        found += sorted(p for p in paths["rollouts"].iterdir() if p.is_file())
    return found


def _identity(config, cfg, budget, paths, tokenizer, initial_digest, reference_digest,
              device) -> dict:
    """What a resumed run must share with the interrupted one (modes excluded)."""
    sections = IDENTITY_SECTIONS + (("exercise",) if budget["branch"] != "grpo" else ())
    return {
        "variant": "educational GRPO, exact KL on prefixes",
        **{k: budget[k] for k in ("branch", "group_size", "iterations", "prompts_per_iteration",
                                  "updates_per_rollout", "total_updates")},
        "config_sections": list(sections),
        "config_sha256": sections_hash(config, sections),
        "code_sha256": GRPORun.code_sha256(),
        "warmstart_sha256": sha256_file(paths["warmstart"]),
        "initial_model_digest": initial_digest,
        "reference_model_digest": reference_digest,
        "learning_data_sha256": data.dataset_sha256(paths["learning_data"]),
        "template": prompts.template_identity(tokenizer, config),
        "seeds": {"system": cfg.seed,
                  "generation": cfg.seed + GENERATION_SEED_OFFSET,
                  "prompt_order": cfg.seed + PROMPT_ORDER_SEED_OFFSET},
        "compute": compute_identity(device),
    }


# --------------------------------------------------------------------------- run context
@dataclass
class GRPORun(ResumableRun):
    """Everything one branch-and-mode run shares between its steps."""
    CODE_ENTRY = CODE_ENTRY
    STATE_ORDER = ("identity", "iteration", "updates", "model", "optimizer", "scheduler",
                   "prompt_order", "generation_rng", "system_rng", "consumed_rollout_ids",
                   "history", "timings")
    config: dict                           # the carrier (hashes, provenance, callees)
    cfg: Profile                           # how its values are read
    budget: dict
    branch: str
    mode: str
    paths: dict
    examples: list
    tokenizer: object
    policy: object
    reference: object
    device: torch.device
    progress: bool
    command_start: float
    identity: dict = field(default_factory=dict)
    initial_digest: str = ""
    reference_digest: str = ""
    optimizer: object = None
    scheduler: object = None
    order: PromptOrder | None = None
    generator: torch.Generator | None = None
    iteration: int = 0                     # iterations done (the next one to run)
    updates_done: int = 0
    consumed: list = field(default_factory=list)
    history: list = field(default_factory=list)
    times: list = field(default_factory=list)          # per-iteration times of this mode
    loop_seconds_before: float = 0.0       # loop time spent before a crash
    evidence: dict = field(default_factory=dict)       # rollout file (relative) -> sha256
    crash_saves: list = field(default_factory=list)

    @property
    def section(self):
        return self.cfg.grpo

    @property
    def stage(self) -> str:
        return stage_name(self.branch, self.mode)

    @property
    def stop(self) -> int:
        return self.budget["interrupt_at"] if self.mode == "interrupt" else self.budget["iterations"]

    def run_state(self) -> dict:
        """The GRPO part of a state at an iteration boundary."""
        return {"iteration": self.iteration, "updates": self.updates_done,
                "prompt_order": self.order.state(), "generation_rng": self.generator.get_state(),
                "consumed_rollout_ids": list(self.consumed), "history": self.history}

    def load_run_state(self, state: dict) -> None:
        self.order.load(state["prompt_order"])
        self.generator.set_state(state["generation_rng"])
        self.iteration, self.consumed = state["iteration"], list(state["consumed_rollout_ids"])
        self.history = list(state["history"])
        self.updates_done = state["updates"]

    def check_boundary(self, what: str) -> None:
        if self.updates_done != self.iteration * self.budget["updates_per_rollout"] \
                or len(self.history) != self.iteration:
            raise ValueError(f"{what} is not at a completed iteration boundary")

    def timings(self, loop_seconds: float) -> dict:
        return {"loop_seconds": loop_seconds, "per_iteration": list(self.times)}


def _prepare(run: GRPORun) -> None:
    """Digests, identity, optimizer, schedule, prompt order and RNG streams of a fresh run."""
    run.initial_digest = model_lib.model_digest(run.policy)
    run.reference_digest = model_lib.model_digest(run.reference)
    run.identity = _identity(run.config, run.cfg, run.budget, run.paths, run.tokenizer,
                             run.initial_digest, run.reference_digest, run.device)
    run.prepare_optimizer(run.section, run.budget["total_updates"])
    run.order = PromptOrder(len(run.examples), run.cfg.seed + PROMPT_ORDER_SEED_OFFSET)
    run.generator = torch.Generator(device=run.device).manual_seed(
        run.cfg.seed + GENERATION_SEED_OFFSET)
    checkpoint.seed_everything(run.cfg.seed)  # the run never depends on the process's RNG


def _continue_after_crash(run: GRPORun) -> bool:
    """Continue from the newest crash checkpoint if there is one; move whatever the run
    wrote after it into OUT/aborted. Returns whether a crash checkpoint was used."""
    out = run.paths["out"]
    existing = [p.relative_to(out).as_posix() for p in _outputs(run.paths, run.mode)]
    found = run.continue_after_crash(out, run.stage, existing)
    if found is None:
        return False
    state, note = found
    run.times = list(state["timings"]["per_iteration"])
    run.loop_seconds_before = float(state["timings"]["loop_seconds"])
    run.evidence = dict(note["evidence"])
    for rel, digest in run.evidence.items():
        files.check_sha256(out / rel, digest, "rollout evidence")
    beyond = [rel for rel in existing if rel not in run.evidence]
    crash.move_aside(out, run.stage, beyond,
                     f"written after the crash checkpoint at iteration {run.iteration}")
    return True


# --------------------------------------------------------------------------- one iteration
def _sample(run: GRPORun, iteration: int) -> tuple[list, str, float]:
    indices = run.order.take(run.budget["prompts_per_iteration"])
    tick = time.perf_counter()
    behaviour_digest = model_lib.model_digest(run.policy)
    digest_seconds = time.perf_counter() - tick
    objective = objectives.objective_from_config(run.config)  # the sampler gives rewards only
    group_ids = [f"{run.branch}/iteration-{iteration:04d}/prompt-{position:02d}"
                 for position in range(len(indices))]
    if run.cfg.sampling.batched:  # all P x G responses in one batch
        sampled = batched_rollout.sample_groups(
            run.policy, run.tokenizer, [run.examples[i] for i in indices], run.config,
            run.generator, run.budget["group_size"], group_ids, policy_digest=behaviour_digest)
    else:
        sampled = [rollout.sample_group(run.policy, run.tokenizer, run.examples[index],
                                        run.config, run.generator, run.budget["group_size"],
                                        group_id=group_id, policy_digest=behaviour_digest)
                   for index, group_id in zip(indices, group_ids)]
    groups = objectives.batch_with_advantages(sampled, objective)
    rows = [r for g in groups for r in g["responses"]]
    ids = [r["rollout_id"] for r in rows]
    consumed = set(run.consumed)
    reused = sorted(set(i for i in ids if i in consumed or ids.count(i) > 1))
    if reused:
        raise ValueError(f"rollouts would be consumed twice: {reused[:5]}")
    return groups, behaviour_digest, digest_seconds


def _verify(run: GRPORun, rows: list) -> tuple[dict, float]:
    model_lib.synchronize(run.device)
    tick = time.perf_counter()
    verification = batched_scoring.verify_rollout_set(run.policy, rows, run.config, run.tokenizer)
    model_lib.synchronize(run.device)
    return verification, time.perf_counter() - tick


def _update(run: GRPORun, groups: list) -> tuple[list, float]:
    tick = time.perf_counter()
    updates = []
    memo: dict = {}   # the frozen reference's logits, computed once per rollout set
    for _ in range(run.budget["updates_per_rollout"]):
        updates.append(grpo_update(run.policy, run.reference, run.optimizer, run.scheduler,
                                   groups, run.config, reference_memo=memo))
        run.updates_done += 1
    model_lib.synchronize(run.device)
    run.consumed.extend(r["rollout_id"] for g in groups for r in g["responses"])
    return updates, time.perf_counter() - tick


def _record(run: GRPORun, iteration: int, groups: list, behaviour_digest: str,
            verification: dict, updates: list) -> float:
    """Write the iteration's evidence file and append its history entry."""
    tick = time.perf_counter()
    evidence = {
        "branch": run.branch, "mode": run.mode, "iteration": iteration,
        "policy_digest": behaviour_digest, "reference_digest": run.reference_digest,
        "document_ids": [g["document_id"] for g in groups],
        "verification": verification,
        "groups": groups,
        "updates": updates,
    }
    path = files.save_json(run.paths["rollouts"] / f"iteration-{iteration:04d}.json", evidence)
    run.evidence[path.relative_to(run.paths["out"]).as_posix()] = sha256_file(path)
    evidence_seconds = time.perf_counter() - tick
    run.history.append(history_entry(iteration, groups, behaviour_digest, verification,
                                     updates))
    return evidence_seconds


def _iterate(run: GRPORun, iteration: int) -> None:
    """Sample, verify, update, record: one iteration (the resume boundary is after it)."""
    iteration_start = time.perf_counter()
    groups, behaviour_digest, digest_seconds = _sample(run, iteration)
    rows = [r for g in groups for r in g["responses"]]
    verification, verification_seconds = _verify(run, rows)
    updates, optimisation_seconds = _update(run, groups)
    evidence_seconds = _record(run, iteration, groups, behaviour_digest, verification, updates)
    run.iteration = iteration + 1
    model_lib.synchronize(run.device)
    run.times.append({"iteration": iteration,
                      "generation_seconds": sum(r["seconds"] for r in rows),
                      "verification_seconds": verification_seconds,
                      "optimisation_seconds": optimisation_seconds,
                      "digest_seconds": digest_seconds, "evidence_seconds": evidence_seconds,
                      "iteration_seconds": time.perf_counter() - iteration_start})


def _save_crash(run: GRPORun, loop_seconds: float) -> None:
    saved = run.save_crash(run.paths["out"], run.stage, run.iteration, run.evidence,
                           timings=run.timings(loop_seconds))
    run.crash_saves.append({"iteration": run.iteration, "seconds": saved["seconds"],
                            "bytes": saved["bytes"]})


def _loop(run: GRPORun) -> float:
    """Iterations from run.iteration to the stop, a crash checkpoint every
    checkpoint_every_iterations (and at a requested stop); returns the loop's seconds."""
    every = run.section.checkpoint_every_iterations
    bar = tqdm(range(run.iteration, run.stop), desc=f"GRPO {run.branch} ({run.mode})",
               initial=run.iteration, total=run.stop, disable=not run.progress, unit="it")
    model_lib.synchronize(run.device)
    loop_start = time.perf_counter()

    def elapsed():
        return run.loop_seconds_before + time.perf_counter() - loop_start

    for iteration in bar:
        _iterate(run, iteration)
        last = run.history[-1]
        bar.set_postfix(reward=f"{last['mean_reward']:.3f}",
                        zvf=f"{last['zero_variance_fraction']:.2f}",
                        kl=f"{last['mean_exact_kl']:.2e}")
        fault_point("grpo-after-iteration")
        if run.iteration % every == 0 or interrupts.requested():
            _save_crash(run, elapsed())
        interrupts.check(f"after iteration {run.iteration} of {run.stage} (saved)")
    bar.close()
    model_lib.synchronize(run.device)
    return elapsed()


def _finish(run: GRPORun, loop_seconds: float) -> dict:
    """Final checks, the final state, the weights (mode resume) and the learning record."""
    reference_after = model_lib.model_digest(run.reference)
    if reference_after != run.reference_digest:
        raise ValueError(f"the frozen reference changed: {run.reference_digest} -> "
                         f"{reference_after}")
    if any(p.grad is not None for p in run.reference.parameters()):
        raise ValueError("the frozen reference holds gradients")
    final_digest = model_lib.model_digest(run.policy)
    saved = run.save_final(run.paths["state"], timings=run.timings(loop_seconds))
    fault_point("grpo-after-final-state")
    weights = None
    if run.mode == "resume":
        tick = time.perf_counter()
        sha = model_lib.save_policy(run.policy, run.paths["weights"], {
            "branch": run.branch, "source": "GRPO resume", "iterations": run.stop,
            "updates": run.updates_done, "warmstart_sha256": run.identity["warmstart_sha256"]})
        weights = {"path": str(run.paths["weights"]), "sha256": sha, "model_digest": final_digest,
                   "seconds": time.perf_counter() - tick}
    peak = torch.cuda.max_memory_allocated(run.device) if run.device.type == "cuda" else None
    telemetry = [{**run.history[t["iteration"]], "times": t} for t in run.times]

    def total(key):
        return sum(t[key] for t in run.times)

    record = {
        "branch": run.branch, "mode": run.mode, "provenance": provenance(run.config),
        "identity": run.identity, "budget": run.budget,
        "iterations_run": [telemetry[0]["iteration"] if telemetry else run.stop, run.stop],
        "updates": run.updates_done,
        "initial_model_digest": run.initial_digest, "final_model_digest": final_digest,
        "reference_digest_before": run.reference_digest, "reference_digest_after": reference_after,
        "consumed_rollouts": len(run.consumed),
        "history": run.history,
        "telemetry": telemetry,
        "costs": {
            "responses_generated": sum(len(g["rewards"]) for h in telemetry for g in h["groups"]),
            "response_tokens_generated": sum(h["response_tokens"] for h in telemetry),
            "kv_cache": run.cfg.sampling.use_kv_cache,
            "batched": run.cfg.sampling.batched,
            "state_bytes": saved["bytes"], "state_save_seconds": saved["seconds"],
            "state_sha256": saved["sha256"], "state_path": str(run.paths["state"]),
            "crash_checkpoints": {"saved": len(run.crash_saves),
                                  "seconds": sum(c["seconds"] for c in run.crash_saves)},
            "peak_cuda_memory_bytes": peak,
            "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
        },
        "final_weights": weights,
        "timings": {
            "generation_seconds": total("generation_seconds"),
            "verification_seconds": total("verification_seconds"),
            "optimisation_seconds": total("optimisation_seconds"),
            "digest_seconds": total("digest_seconds"),
            "evidence_seconds": total("evidence_seconds"),
            "loop_seconds": loop_seconds,
            "total_seconds": time.perf_counter() - run.command_start,
        },
    }
    files.save_json(run.paths["record"], record)
    fault_point("after-record")
    run.finished(run.paths["out"], run.stage)
    return record


# --------------------------------------------------------------------------- the branch
def run_grpo_branch(config: dict, out_dir, branch: str = "grpo", mode: str = "continuous",
                    group_size: int | None = None, iterations: int | None = None,
                    interrupt_at: int | None = None, progress: bool = True) -> dict:
    """Run one GRPO branch in one mode; returns the learning record (also written to
    OUT/learning/{branch}-{mode}.json).

    continuous: all iterations. interrupt: the first interrupt_at iterations. resume: load
    the interrupt state into freshly loaded models and run the remaining iterations. A run
    cut short (crash, kill, signal) continues from its newest crash checkpoint.
    """
    command_start = time.perf_counter()
    check_mode(mode)
    cfg = typed(config)  # the whole profile is checked before anything is read or written
    if cfg.grpo.share_prompts and not cfg.sampling.batched:
        raise ConfigError(["grpo.share_prompts: needs sampling.batched (the one-at-a-time path "
                           "has no prompt to share); set it to false"])
    try:
        objectives.objective_from_config(config)
    except ValueError as error:
        raise ConfigError([f"grpo.objective: {error}"]) from None
    budget = branch_budget(config, branch, group_size, iterations, interrupt_at)
    out_dir = Path(out_dir)
    paths = _paths(out_dir, branch, mode)
    if crash.branch_finished(out_dir, branch, mode):
        raise FileExistsError(f"GRPO {branch} {mode} already ran ({paths['record']} exists); "
                              "evidence is never overwritten (use a new --out folder)")
    if not paths["warmstart"].is_file():
        raise FileNotFoundError(f"{paths['warmstart']} is missing: run the warm start first")
    if mode == "resume" and not paths["interrupt_state"].is_file():
        raise FileNotFoundError(f"{paths['interrupt_state']} is missing: run mode interrupt first")
    data.assert_learning_only(paths["learning_data"])
    examples = data.read_examples(paths["learning_data"], "train")

    tokenizer = model_lib.load_tokenizer(config)
    warmstart_sha = RunFolder(out_dir).recorded_policy_sha256("warmstart")
    policy, _ = model_lib.reload_policy(paths["warmstart"], config, warmstart_sha)
    reference, reference_meta = model_lib.reload_policy(paths["warmstart"], config, warmstart_sha)
    policy.eval()
    reference.eval()
    reference.requires_grad_(False)
    device = rollout.model_device(policy)
    run = GRPORun(config, cfg, budget, branch, mode, paths, examples, tokenizer, policy,
                  reference, device, progress, command_start)
    with deterministic_kernels(device):
        _prepare(run)
        if not run.initial_digest == run.reference_digest == reference_meta["model_digest"]:
            raise ValueError("policy and reference must both be the warm start as saved "
                             f"({reference_meta['model_digest']}); got {run.initial_digest} "
                             f"and {run.reference_digest}")
        if not _continue_after_crash(run) and mode == "resume":
            state = checkpoint.load_state(paths["interrupt_state"],
                                          RunFolder(out_dir).recorded_state_sha256(branch, "interrupt"))
            run.restore(state, f"GRPO state {paths['interrupt_state']}")
            del state
        return _finish(run, _loop(run))


def command_grpo(args) -> int:
    config = load_config(args.config)
    branch = getattr(args, "branch", None) or "grpo"
    record = run_grpo_branch(config, args.out, branch=branch, mode=args.mode)
    last = record["history"][-1] if record["history"] else {}
    print(f"GRPO {branch} ({args.mode}): iterations {record['iterations_run'][0]}->"
          f"{record['iterations_run'][1]}, updates {record['updates']}, last mean reward "
          f"{last.get('mean_reward')}, state {record['costs']['state_path']} "
          f"({record['costs']['state_bytes']:,} bytes), "
          f"{record['timings']['total_seconds']:.1f} s")
    return 0
