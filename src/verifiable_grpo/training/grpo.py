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

This module runs a branch: the loop, the crash checkpoints and the final record. The run's
context is grpo_run.GRPORun; the steps of one iteration are in grpo_iteration.py.
"""

from __future__ import annotations

import time
from pathlib import Path

import torch

from verifiable_grpo.core import checkpoint, crash, files, interrupts
from verifiable_grpo.core import model as model_lib
from verifiable_grpo.core.config import ConfigError, load_config, provenance
from verifiable_grpo.core.config_schema import Profile
from verifiable_grpo.core.faults import fault_point
from verifiable_grpo.core.progress import tqdm
from verifiable_grpo.core.resumable_run import deterministic_kernels
from verifiable_grpo.core.runfolder import RunFolder, check_mode
from verifiable_grpo.task import data
from verifiable_grpo.training import objectives, rollout
from verifiable_grpo.training.gradients import (  # noqa: F401 (re-exported)
    UpdateOptions,
    accumulate_gradients,
)
from verifiable_grpo.training.grpo_iteration import (  # noqa: F401 (grpo_update re-exported)
    Trainee,
    grpo_update,
    run_iteration,
)
from verifiable_grpo.training.grpo_plan import (  # noqa: F401 (re-exported)
    GENERATION_SEED_OFFSET,
    PROMPT_ORDER_SEED_OFFSET,
    PromptOrder,
    branch_budget,
)
from verifiable_grpo.training.grpo_run import (  # noqa: F401 (CODE_ENTRY re-exported)
    CODE_ENTRY,
    GRPORun,
    prepare,
    run_outputs,
    run_paths,
)


def _continue_after_crash(run: GRPORun) -> bool:
    """Continue from the newest crash checkpoint if there is one; move whatever the run
    wrote after it into OUT/aborted. Returns whether a crash checkpoint was used."""
    out = run.paths["out"]
    existing = [p.relative_to(out).as_posix() for p in run_outputs(run.paths, run.mode)]
    found = run.continue_after_crash(out, run.stage, existing)
    if found is None:
        return False
    state, note = found
    run.times = list(state["timings"]["per_iteration"])
    run.loop_seconds_before = float(state["timings"]["loop_seconds"])
    run.evidence = dict(note["evidence"])
    for rel, digest in run.evidence.items():
        where = files.inside(out, rel, f"crash note of {run.stage}: evidence")
        files.check_sha256(where, digest, "rollout evidence")
    beyond = [rel for rel in existing if rel not in run.evidence]
    crash.move_aside(
        out, run.stage, beyond, f"written after the crash checkpoint at iteration {run.iteration}"
    )
    return True


def _save_crash(run: GRPORun, loop_seconds: float) -> None:
    saved = run.save_crash(
        run.paths["out"], run.stage, run.iteration, run.evidence, timings=run.timings(loop_seconds)
    )
    run.crash_saves.append(
        {"iteration": run.iteration, "seconds": saved["seconds"], "bytes": saved["bytes"]}
    )


def _loop(run: GRPORun, after_iteration=None) -> float:
    """Iterations from run.iteration to the stop, a crash checkpoint every
    checkpoint_every_iterations (and at a requested stop); returns the loop's seconds.
    after_iteration(run): called after each iteration, before its crash checkpoint, so a
    crash inside it repeats the iterations since the last checkpoint and calls it again."""
    every = run.section.checkpoint_every_iterations
    bar = tqdm(
        range(run.iteration, run.stop),
        desc=f"GRPO {run.branch} ({run.mode})",
        initial=run.iteration,
        total=run.stop,
        disable=not run.progress,
        unit="it",
    )
    model_lib.synchronize(run.device)
    loop_start = time.perf_counter()

    def elapsed():
        return run.loop_seconds_before + time.perf_counter() - loop_start

    for iteration in bar:
        run_iteration(run, iteration)
        last = run.history[-1]
        bar.set_postfix(
            reward=f"{last['mean_reward']:.3f}",
            zero_var=f"{last['zero_variance_fraction']:.2f}",
            kl=f"{last['mean_exact_kl']:.2e}",
        )
        fault_point("grpo-after-iteration")
        if after_iteration is not None:
            after_iteration(run)
        if run.iteration % every == 0 or interrupts.requested():
            _save_crash(run, elapsed())
        interrupts.check(f"after iteration {run.iteration} of {run.stage} (saved)")
    bar.close()
    model_lib.synchronize(run.device)
    return elapsed()


def _check_reference_unchanged(run: GRPORun) -> str:
    """The frozen reference's digest after the run; ValueError if it changed or holds
    gradients."""
    reference_after = model_lib.model_digest(run.reference)
    if reference_after != run.reference_digest:
        raise ValueError(
            f"the frozen reference changed: {run.reference_digest} -> {reference_after}"
        )
    if any(p.grad is not None for p in run.reference.parameters()):
        raise ValueError("the frozen reference holds gradients")
    return reference_after


def _save_weights(run: GRPORun, final_digest: str) -> dict | None:
    """The final weights, saved in mode resume only (None otherwise)."""
    if run.mode != "resume":
        return None
    tick = time.perf_counter()
    sha = model_lib.save_policy(
        run.policy,
        run.paths["weights"],
        {
            "branch": run.branch,
            "source": "GRPO resume",
            "iterations": run.stop,
            "updates": run.updates_done,
            "warmstart_sha256": run.identity["warmstart_sha256"],
        },
    )
    return {
        "path": str(run.paths["weights"]),
        "sha256": sha,
        "model_digest": final_digest,
        "seconds": time.perf_counter() - tick,
    }


def _costs(run: GRPORun, telemetry: list, saved: dict, peak: int | None) -> dict:
    """What the run cost: responses and tokens generated, state size, crash checkpoints."""
    return {
        "responses_generated": sum(len(g["rewards"]) for h in telemetry for g in h["groups"]),
        "response_tokens_generated": sum(h["response_tokens"] for h in telemetry),
        "kv_cache": run.config.sampling.use_kv_cache,
        "batched": run.config.sampling.batched,
        "state_bytes": saved["bytes"],
        "state_save_seconds": saved["seconds"],
        "state_sha256": saved["sha256"],
        "state_path": str(run.paths["state"]),
        "crash_checkpoints": {
            "saved": len(run.crash_saves),
            "seconds": sum(c["seconds"] for c in run.crash_saves),
        },
        "peak_cuda_memory_bytes": peak,
        "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
    }


def _total_timings(run: GRPORun, loop_seconds: float) -> dict:
    def total(key):
        return sum(t[key] for t in run.times)

    return {
        "generation_seconds": total("generation_seconds"),
        "verification_seconds": total("verification_seconds"),
        "optimisation_seconds": total("optimisation_seconds"),
        "digest_seconds": total("digest_seconds"),
        "evidence_seconds": total("evidence_seconds"),
        "loop_seconds": loop_seconds,
        "total_seconds": time.perf_counter() - run.command_start,
    }


def _finish(run: GRPORun, loop_seconds: float) -> dict:
    """Final checks, the final state, the weights (mode resume) and the learning record."""
    reference_after = _check_reference_unchanged(run)
    final_digest = model_lib.model_digest(run.policy)
    saved = run.save_final(run.paths["state"], timings=run.timings(loop_seconds))
    fault_point("grpo-after-final-state")
    weights = _save_weights(run, final_digest)
    peak = torch.cuda.max_memory_allocated(run.device) if run.device.type == "cuda" else None
    telemetry = [{**run.history[t["iteration"]], "times": t} for t in run.times]
    record = {
        "branch": run.branch,
        "mode": run.mode,
        "provenance": provenance(run.config),
        "identity": run.identity,
        "budget": run.budget,
        "iterations_run": [telemetry[0]["iteration"] if telemetry else run.stop, run.stop],
        "updates": run.updates_done,
        "initial_model_digest": run.initial_digest,
        "final_model_digest": final_digest,
        "reference_digest_before": run.reference_digest,
        "reference_digest_after": reference_after,
        "consumed_rollouts": len(run.consumed),
        "history": run.history,
        "telemetry": telemetry,
        "costs": _costs(run, telemetry, saved, peak),
        "final_weights": weights,
        "timings": _total_timings(run, loop_seconds),
    }
    files.save_json(run.paths["record"], record)
    fault_point("after-record")
    run.finished(run.paths["out"], run.stage)
    return record


# --------------------------------------------------------------------------- the branch
def _check_profile(config: Profile) -> None:
    """The whole profile checked before anything is read or written, the objective and its
    sampling path included."""
    if config.grpo.share_prompts and not config.sampling.batched:
        raise ConfigError(
            [
                "grpo.share_prompts: needs sampling.batched (the one-at-a-time path "
                "has no prompt to share); set it to false"
            ]
        )
    try:
        objectives.objective_from_config(config)
    except ValueError as error:
        raise ConfigError([f"grpo.objective: {error}"]) from None


def _check_run_folder(out_dir: Path, branch: str, mode: str, paths: dict) -> None:
    """Refuse a branch that already ran, and a start without the files it reads."""
    if crash.branch_finished(out_dir, branch, mode):
        raise FileExistsError(
            f"GRPO {branch} {mode} already ran ({paths['record']} exists); "
            "evidence is never overwritten (use a new --out folder)"
        )
    if not paths["warmstart"].is_file():
        raise FileNotFoundError(f"{paths['warmstart']} is missing: run the warm start first")
    if mode == "resume" and not paths["interrupt_state"].is_file():
        raise FileNotFoundError(f"{paths['interrupt_state']} is missing: run mode interrupt first")


def _load_policy_and_reference(config: Profile, out_dir: Path, paths: dict) -> tuple:
    """Two strict reloads of the warm start, both in eval mode: the policy, and the frozen
    reference with its metadata."""
    warmstart_sha = RunFolder(out_dir).recorded_policy_sha256("warmstart")
    policy, _ = model_lib.reload_policy(paths["warmstart"], config, warmstart_sha)
    reference, reference_meta = model_lib.reload_policy(paths["warmstart"], config, warmstart_sha)
    policy.eval()
    reference.eval()
    reference.requires_grad_(False)
    return policy, reference, reference_meta


def run_grpo_branch(
    config: Profile,
    out_dir,
    branch: str = "grpo",
    mode: str = "continuous",
    progress: bool = True,
    after_iteration=None,
) -> dict:
    """Run one GRPO branch in one mode; returns the learning record (also written to
    OUT/learning/{branch}-{mode}.json). Group size, iterations and interrupt point are the
    profile's for the branch (grpo_plan.branch_budget): another size is another profile,
    `config.replaced(grpo={...})`, so the run's config hash says what it ran.

    continuous: all iterations. interrupt: the first interrupt_at iterations. resume: load
    the interrupt state into freshly loaded models and run the remaining iterations. A run
    cut short (crash, kill, signal) continues from its newest crash checkpoint.
    after_iteration(run): see _loop (e.g. a held-out curve at chosen iterations).
    """
    command_start = time.perf_counter()
    check_mode(mode)
    _check_profile(config)
    budget = branch_budget(config, branch)
    out_dir = Path(out_dir)
    paths = run_paths(out_dir, branch, mode)
    _check_run_folder(out_dir, branch, mode, paths)
    data.assert_learning_only(paths["learning_data"])
    examples = data.read_examples(paths["learning_data"], "train")

    tokenizer = model_lib.load_tokenizer(config)
    policy, reference, reference_meta = _load_policy_and_reference(config, out_dir, paths)
    device = rollout.model_device(policy)
    run = GRPORun(
        config=config,
        budget=budget,
        branch=branch,
        mode=mode,
        paths=paths,
        examples=examples,
        tokenizer=tokenizer,
        policy=policy,
        reference=reference,
        device=device,
        progress=progress,
        command_start=command_start,
    )
    with deterministic_kernels(device):
        prepare(run)
        if not run.initial_digest == run.reference_digest == reference_meta["model_digest"]:
            raise ValueError(
                "policy and reference must both be the warm start as saved "
                f"({reference_meta['model_digest']}); got {run.initial_digest} "
                f"and {run.reference_digest}"
            )
        if not _continue_after_crash(run) and mode == "resume":
            state = checkpoint.load_state(
                paths["interrupt_state"],
                RunFolder(out_dir).recorded_state_sha256(branch, "interrupt"),
            )
            run.restore(state, f"GRPO state {paths['interrupt_state']}")
            del state
        return _finish(run, _loop(run, after_iteration))


def finished_or_trained(
    config: Profile, out_dir, progress: bool = True, after_iteration=None
) -> dict:
    """The learning record of the "grpo" branch's continuous run in `out_dir`: read when
    that run finished, else trained now (a run that stopped continues from its crash
    checkpoint)."""
    finished = RunFolder(out_dir).record("grpo", "continuous")
    if finished.is_file():
        return files.read_json(finished)
    return run_grpo_branch(
        config, out_dir, "grpo", "continuous", progress=progress, after_iteration=after_iteration
    )


def with_trained_weights(policy, out_dir):
    """`policy` (a fresh copy of the run's starting model) given the continuous run's final
    weights, checked against the state digest its learning record holds; in eval mode."""
    run_folder = RunFolder(out_dir)
    state = checkpoint.load_state(
        run_folder.state("grpo", "continuous"),
        run_folder.recorded_state_sha256("grpo", "continuous"),
    )
    policy.load_state_dict(state["model"], strict=True)
    return policy.eval()


def command_grpo(args) -> int:
    config = load_config(args.config)
    branch = getattr(args, "branch", None) or "grpo"
    record = run_grpo_branch(config, args.out, branch=branch, mode=args.mode)
    last = record["history"][-1] if record["history"] else {}
    print(
        f"GRPO {branch} ({args.mode}): iterations {record['iterations_run'][0]}->"
        f"{record['iterations_run'][1]}, updates {record['updates']}, last mean reward "
        f"{last.get('mean_reward')}, state {record['costs']['state_path']} "
        f"({record['costs']['state_bytes']:,} bytes), "
        f"{record['timings']['total_seconds']:.1f} s"
    )
    return 0
