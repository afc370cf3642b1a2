"""One GRPO iteration of a run, step by step: sample a rollout set with the current policy
(scored, with advantages), verify its captured log-probs by rescoring, make
updates_per_rollout AdamW updates (`grpo_update`, which Part II's study and the bench use
too), and record the iteration's evidence file and history entry.

training/grpo.py runs the iterations; the run's context is grpo_run.GRPORun.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from verifiable_grpo.core import files
from verifiable_grpo.core import model as model_lib
from verifiable_grpo.core.config import sha256_file
from verifiable_grpo.core.config_schema import Profile
from verifiable_grpo.training import (
    batched_rollout,
    batched_scoring,
    control_rewards,
    objectives,
    reward_terms,
    rollout,
)
from verifiable_grpo.training.gradients import (
    PROFILE_OPTIONS,
    UpdateOptions,
    accumulate_gradients,
)
from verifiable_grpo.training.grpo_record import history_entry
from verifiable_grpo.training.grpo_run import GRPORun


# --------------------------------------------------------------------------- one update
@dataclass(frozen=True)
class Trainee:
    """The policy being trained, its frozen reference, and the optimizer and learning-rate
    schedule that step the policy."""

    policy: torch.nn.Module
    reference: torch.nn.Module
    optimizer: torch.optim.Optimizer
    scheduler: object


def grpo_update(
    trainee: Trainee,
    groups: list[dict],
    config: Profile,
    options: UpdateOptions = PROFILE_OPTIONS,
) -> dict:
    """One AdamW update on every response of a rollout set (Part I's objective unless
    `options` names another; see gradients.UpdateOptions); returns its telemetry."""
    policy, reference, optimizer = trainee.policy, trainee.reference, trainee.optimizer
    if policy.training or reference.training:
        raise ValueError("dropout must stay off: policy and reference in eval mode")
    learning_rate = optimizer.param_groups[0]["lr"]
    optimizer.zero_grad(set_to_none=True)
    telemetry = accumulate_gradients(policy, reference, groups, config, options)
    grad_norm = torch.nn.utils.clip_grad_norm_(
        model_lib.unique_parameters(policy),
        config.grpo.max_grad_norm,
        error_if_nonfinite=True,
    )
    if any(p.grad is not None or p.requires_grad for p in reference.parameters()):
        raise ValueError("the reference received gradients or became trainable")
    optimizer.step()
    trainee.scheduler.step()
    optimizer.zero_grad(set_to_none=True)
    return {"learning_rate": learning_rate, **telemetry, "grad_norm": float(grad_norm)}


# --------------------------------------------------------------------------- one iteration
def _rewarded(groups: list, run: GRPORun) -> list:
    """The groups under the profile's grpo.reward: the verifier's as sampled, a control's
    (control_rewards) or the declared reward terms (reward_terms)."""
    kind = run.config.grpo.reward
    if kind in ("random", "format"):
        return control_rewards.rewarded(groups, run.config)
    if kind in reward_terms.TERMS_OF and kind != "verifier":
        return reward_terms.rewarded(groups, run.config, run.examples)
    return groups


def _sample(run: GRPORun, iteration: int) -> tuple[list, str, float]:
    indices = run.order.take(run.budget["prompts_per_iteration"])
    tick = time.perf_counter()
    behaviour_digest = model_lib.model_digest(run.policy)
    digest_seconds = time.perf_counter() - tick
    objective = objectives.objective_from_config(run.config)  # the sampler gives rewards only
    group_ids = [
        f"{run.branch}/iteration-{iteration:04d}/prompt-{position:02d}"
        for position in range(len(indices))
    ]
    sampler = rollout.Sampler(
        run.policy, run.tokenizer, run.config, run.generator, policy_digest=behaviour_digest
    )
    size = run.budget["group_size"]
    if run.config.sampling.batched:  # all P x G responses in one batch
        examples = [run.examples[i] for i in indices]
        sampled = batched_rollout.sample_groups(sampler, examples, size, group_ids)
    else:
        sampled = [
            rollout.sample_group(sampler, run.examples[index], size, group_id)
            for index, group_id in zip(indices, group_ids)
        ]
    sampled = _rewarded(sampled, run)  # grpo.reward
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
    memo: dict = {}  # the frozen reference's logits, computed once per rollout set
    for _ in range(run.budget["updates_per_rollout"]):
        updates.append(
            grpo_update(
                Trainee(run.policy, run.reference, run.optimizer, run.scheduler),
                groups,
                run.config,
                UpdateOptions(reference_memo=memo),
            )
        )
        run.updates_done += 1
    model_lib.synchronize(run.device)
    run.consumed.extend(r["rollout_id"] for g in groups for r in g["responses"])
    return updates, time.perf_counter() - tick


def _record(
    run: GRPORun,
    iteration: int,
    groups: list,
    behaviour_digest: str,
    verification: dict,
    updates: list,
) -> float:
    """Write the iteration's evidence file and append its history entry."""
    tick = time.perf_counter()
    evidence = {
        "branch": run.branch,
        "mode": run.mode,
        "iteration": iteration,
        "policy_digest": behaviour_digest,
        "reference_digest": run.reference_digest,
        "document_ids": [g["document_id"] for g in groups],
        "verification": verification,
        "groups": groups,
        "updates": updates,
    }
    path = files.save_json(run.paths["rollouts"] / f"iteration-{iteration:04d}.json", evidence)
    run.evidence[path.relative_to(run.paths["out"]).as_posix()] = sha256_file(path)
    evidence_seconds = time.perf_counter() - tick
    questions = {e["document_id"]: e.get("statement") for e in run.examples}
    entry = history_entry(iteration, groups, behaviour_digest, verification, updates, questions)
    run.history.append(entry)
    return evidence_seconds


def run_iteration(run: GRPORun, iteration: int) -> None:
    """Sample, verify, update, record: one iteration (the resume boundary is after it)."""
    iteration_start = time.perf_counter()
    groups, behaviour_digest, digest_seconds = _sample(run, iteration)
    rows = [r for g in groups for r in g["responses"]]
    verification, verification_seconds = _verify(run, rows)
    updates, optimisation_seconds = _update(run, groups)
    evidence_seconds = _record(run, iteration, groups, behaviour_digest, verification, updates)
    run.iteration = iteration + 1
    model_lib.synchronize(run.device)
    run.times.append(
        {
            "iteration": iteration,
            "generation_seconds": sum(r["seconds"] for r in rows),
            "verification_seconds": verification_seconds,
            "optimisation_seconds": optimisation_seconds,
            "digest_seconds": digest_seconds,
            "evidence_seconds": evidence_seconds,
            "iteration_seconds": time.perf_counter() - iteration_start,
        }
    )
