"""The group-size exercise: G=2 and G=8 against each other, with the main run protected.

(a) Constructed groups (hand-made rewards, NOT model outputs): what the advantage, the
    surrogate and its token gradients are when a group is all-wrong, all-right or mixed.
(b) Protection: SHA-256 of the main artifacts (config, results, the three main policies,
    their resume verdicts and inference files) and of the verifier are recorded before the
    exercise and checked after it; any change raises.
(c) Real training: G=2 and G=8 from the same warm start on the same prompt presentations,
    resumed and verified like the main branches, then evaluated on the same problems.
"""

from __future__ import annotations

from pathlib import Path

import torch

from verifiable_grpo.core.config import load_config, read_json, save_json, sha256_file
from verifiable_grpo.core.config_schema import Profile
from verifiable_grpo.core.runfolder import MODES, check_mode
from verifiable_grpo.evaluation.evaluate import MAIN_POLICIES, utc_now

CONSTRUCTED_LABEL = "constructed, not model outputs"
TOKENS_PER_CONSTRUCTED_RESPONSE = 3


# --------------------------------------------------------------------------- (a) constructed
def constructed_reward_patterns(group_size: int) -> list[list[float]]:
    """All wrong, all right, and alternating right/wrong for a group of this size."""
    if type(group_size) is not int or group_size < 2 or group_size % 2:
        raise ValueError(f"group_size must be an even integer >= 2, got {group_size!r}")
    return [[0.0] * group_size, [1.0] * group_size, [1.0, 0.0] * (group_size // 2)]


def constructed_group(
    rewards: list[float], epsilon: float = 1e-8, clip_epsilon: float = 0.2
) -> dict:
    """Advantages, std, surrogate and token gradients of one constructed group (float64).

    The response log-probs are made up (current == old, so every ratio is 1, as at the first
    update of a rollout set); only the rewards matter for what this shows.
    """
    from verifiable_grpo.training.losses import (
        ClipRange,
        TokenLogProbs,
        clipped_group_surrogate,
        group_advantages,
    )

    group = len(rewards)
    advantages, mean, std = group_advantages(
        torch.tensor([rewards], dtype=torch.float64), epsilon=epsilon
    )
    steps = torch.arange(TOKENS_PER_CONSTRUCTED_RESPONSE, dtype=torch.float64)
    logprobs = -1.0 - 0.25 * steps - 0.1 * torch.arange(group, dtype=torch.float64)[:, None]
    current = logprobs.clone().requires_grad_(True)
    mask = torch.ones_like(current, dtype=torch.bool)
    per_response, _ = clipped_group_surrogate(
        TokenLogProbs(current, logprobs.detach(), mask), advantages[0], ClipRange(clip_epsilon)
    )
    loss = per_response.mean()
    loss.backward()
    return {
        "source": CONSTRUCTED_LABEL,
        "group_size": group,
        "rewards": rewards,
        "mean": float(mean[0, 0]),
        "population_std": float(std[0, 0]),
        "advantages": advantages[0].tolist(),
        "surrogate_loss": float(loss.detach()),
        "token_gradients": (current.grad + 0.0).tolist(),  # + 0.0 turns -0.0 into 0.0
        "all_gradients_zero": bool((current.grad == 0).all()),
        "constant_group": len(set(rewards)) == 1,
    }


def constructed_groups(config: Profile) -> list[dict]:
    """The three patterns for G=4 and for every exercise group size."""
    sizes = sorted({config.grpo.group_size, *config.exercise.group_sizes})
    epsilon, clip = config.grpo.advantage_epsilon, config.grpo.clip_epsilon
    return [
        constructed_group(r, epsilon, clip) for g in sizes for r in constructed_reward_patterns(g)
    ]


# --------------------------------------------------------------------------- (b) protection
def main_artifacts(config: Profile, out_dir) -> dict[str, Path]:
    """label -> path of everything the exercise must leave untouched."""
    out_dir = Path(out_dir)
    paths = {"config": Path(config["_path"]), "results.json": out_dir / "results.json"}
    for policy in MAIN_POLICIES:
        paths[f"checkpoints/{policy}-resume.safetensors"] = (
            out_dir / "checkpoints" / f"{policy}-resume.safetensors"
        )
        paths[f"resume-{policy}.json"] = out_dir / f"resume-{policy}.json"
        for name in ("greedy.json", "sample.json", "audit.json"):
            paths[f"inference/{policy}/{name}"] = out_dir / "inference" / policy / name
    return paths


def _fingerprints(config: Profile, out_dir) -> dict:
    from verifiable_grpo.task import verifier

    files = {}
    for label, path in main_artifacts(config, out_dir).items():
        if not path.is_file():
            raise FileNotFoundError(
                f"main artifact {path} is missing: finish the main run "
                "(training, resume checks, evaluation) before the exercise"
            )
        files[label] = sha256_file(path)
    return {"files": files, "verifier_sha256": sha256_file(verifier.__file__)}


def protect(config: Profile, out_dir) -> dict:
    """Record OUT/exercise/protected.json (before the exercise), or, if it exists already
    (a continued exercise), check that nothing changed since it was recorded."""
    path = Path(out_dir) / "exercise" / "protected.json"
    if path.exists():
        return check_protected(config, out_dir)
    record = {**_fingerprints(config, out_dir), "recorded_at": utc_now()}
    save_json(path, record)
    return record


def check_protected(config: Profile, out_dir) -> dict:
    """Raise ValueError naming every protected file (or the verifier) that changed."""
    record = read_json(Path(out_dir) / "exercise" / "protected.json")
    paths = main_artifacts(config, out_dir)
    changed = []
    for label, digest in record["files"].items():
        path = paths[label]
        if not path.is_file() or sha256_file(path) != digest:
            changed.append(str(path))
    from verifiable_grpo.task import verifier

    if sha256_file(verifier.__file__) != record["verifier_sha256"]:
        changed.append(f"verifier ({verifier.__file__})")
    if changed:
        raise ValueError(f"protected main artifacts changed during the exercise: {changed}")
    return record


# --------------------------------------------------------------------------- (c) training
def branch_name(group_size: int) -> str:
    return f"grpo-g{group_size}"


def train_branch(config: Profile, out_dir, group_size: int, mode: str):
    from verifiable_grpo.training.grpo import run_grpo_branch

    check_mode(mode)
    # The branch grpo-gN names its group size and reads exercise.iterations and
    # exercise.interrupt_at itself.
    return run_grpo_branch(config, out_dir, branch_name(group_size), mode)


def verify_branch(config: Profile, out_dir, group_size: int):
    from verifiable_grpo.core.state_digests import verify_branch as verify

    return verify(config, out_dir, branch_name(group_size))


def evaluate_exercise(config: Profile, out_dir) -> dict:
    from verifiable_grpo.evaluation.evaluate import evaluate_policies

    policies = [branch_name(g) for g in config.exercise.group_sizes]
    return evaluate_policies(config, out_dir, policies, Path(out_dir) / "exercise" / "results.json")


def _run_record(out_dir, branch: str) -> dict:
    path = Path(out_dir) / "learning" / f"{branch}-continuous.json"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: train the {branch} branch first")
    return read_json(path)


def budget(record: dict) -> dict:
    """Updates, prompt presentations, rollouts and seconds of one continuous run."""
    history = record["history"]
    return {
        "iterations": len(history),
        "updates": record["updates"],
        "prompts": sum(len(h["document_ids"]) for h in history),
        "rollouts": sum(len(g["rewards"]) for h in history for g in h["groups"]),
        "seconds": record["timings"]["total_seconds"],
    }


def summarise(config: Profile, out_dir) -> dict:
    """OUT/exercise/group-size.json: budgets, checks, evaluation, constructed groups."""
    out_dir = Path(out_dir)
    protected = check_protected(config, out_dir)
    branches = [branch_name(g) for g in config.exercise.group_sizes]
    records = {b: _run_record(out_dir, b) for b in branches}
    initial = {b: r["initial_model_digest"] for b, r in records.items()}
    orders = {b: [h["document_ids"] for h in r["history"]] for b, r in records.items()}
    if len(set(initial.values())) != 1:
        raise ValueError(f"the exercise branches start from different weights: {initial}")
    if any(order != orders[branches[0]] for order in orders.values()):
        raise ValueError("the exercise branches saw different prompt presentations")
    results = read_json(out_dir / "exercise" / "results.json")
    resume = {b: read_json(out_dir / f"resume-{b}.json") for b in branches}
    summary = {
        "constructed_groups": constructed_groups(config),
        "constructed_label": CONSTRUCTED_LABEL,
        "budgets": {b: budget(r) for b, r in records.items()},
        "same_initial_digest": True,
        "initial_model_digest": initial[branches[0]],
        "same_prompt_order": True,
        "prompt_presentations": sum(len(ids) for ids in orders[branches[0]]),
        "resume": resume,
        "evaluation": {
            b: {
                "greedy_pass_at_1": results["policies"][b]["greedy_pass_at_1"],
                "per_draw_success": results["policies"][b]["per_draw_success"],
            }
            for b in branches
        },
        "protected_sha256": protected,
        "main_artifacts_unchanged": True,
        "verifier_unchanged": True,
        "limitation": (
            f"G=2 and G=8 share their start, prompts and number of updates, but the main G=4 "
            f"run has {config.grpo.iterations} iterations against "
            f"{config.exercise.iterations} here: comparing it with these branches is not "
            "an ablation of group size alone. Equal updates do not mean equal compute "
            "(more rollouts per prompt cost more generation and scoring); equal compute is "
            "not claimed."
        ),
        "equal_compute_claimed": False,
        "finished_at": utc_now(),
    }
    save_json(out_dir / "exercise" / "group-size.json", summary)
    return summary


def run_exercise(config: Profile, out_dir) -> dict:
    """Everything in order: protect, train the two branches (3 modes), verify, evaluate,
    summarise, check the protection again."""
    out_dir = Path(out_dir)
    protect(config, out_dir)
    for group_size in config.exercise.group_sizes:
        for mode in MODES:
            train_branch(config, out_dir, group_size, mode)
        verify_branch(config, out_dir, group_size)
    evaluate_exercise(config, out_dir)
    return summarise(config, out_dir)


def command_exercise(args) -> int:
    config = load_config(args.config)
    summary = run_exercise(config, args.out)
    for branch, numbers in summary["budgets"].items():
        evaluation = summary["evaluation"][branch]
        print(
            f"{branch}: {numbers['updates']} updates, {numbers['prompts']} prompts, "
            f"{numbers['rollouts']} rollouts, {numbers['seconds']:.1f} s; greedy pass@1 "
            f"{evaluation['greedy_pass_at_1']['ALL']['success_rate']:.3f}, per-draw "
            f"{evaluation['per_draw_success']['ALL']['success_rate']:.3f}"
        )
    print("main artifacts and verifier unchanged (SHA-256 checked)")
    return 0
