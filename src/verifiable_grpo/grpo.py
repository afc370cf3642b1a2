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

import re
import time
from pathlib import Path

import torch
from .progress import tqdm

from . import checkpoint, data, losses, prompts, rollout, schedule, scoring
from . import model as model_lib
from .config import config_hash, load_config, provenance, save_json, sha256_file

MODES = ("continuous", "interrupt", "resume")
# Offsets from config["seed"]: one independent stream per purpose.
GENERATION_SEED_OFFSET = 200
PROMPT_ORDER_SEED_OFFSET = 300
# The modules whose code decides the numbers of a GRPO run: a resume refuses other code.
TRAINING_MODULES = ("grpo.py", "rollout.py", "losses.py", "scoring.py", "model.py", "prompts.py",
                    "verifier.py", "schedule.py", "checkpoint.py", "statements.py", "data.py")


# --------------------------------------------------------------------------- budget
def branch_budget(config: dict, branch: str = "grpo", group_size: int | None = None,
                  iterations: int | None = None, interrupt_at: int | None = None) -> dict:
    """Group size, iterations and interrupt point of a branch (explicit values win).

    "grpo" reads config.grpo; "grpo-gN" is an exercise branch (N in exercise.group_sizes)
    reading exercise.iterations and exercise.interrupt_at.
    """
    section = config["grpo"]
    if branch == "grpo":
        defaults = (section["group_size"], section["iterations"], section["interrupt_at"])
    else:
        match = re.fullmatch(r"grpo-g(\d+)", branch)
        if not match:
            raise ValueError(f"unknown GRPO branch {branch!r}: use 'grpo' or 'grpo-gN' with N in "
                             f"exercise.group_sizes {config['exercise']['group_sizes']}")
        named = int(match.group(1))
        if named not in config["exercise"]["group_sizes"]:
            raise ValueError(f"branch {branch!r}: group size {named} is not in "
                             f"exercise.group_sizes {config['exercise']['group_sizes']}")
        if group_size is not None and group_size != named:
            raise ValueError(f"branch {branch!r} names group size {named}, got {group_size}")
        ex = config["exercise"]
        defaults = (named, ex["iterations"], ex["interrupt_at"])
    g = defaults[0] if group_size is None else group_size
    n = defaults[1] if iterations is None else iterations
    k = defaults[2] if interrupt_at is None else interrupt_at
    if type(g) is not int or g < 2:
        raise ValueError(f"group_size must be an integer >= 2, got {g!r}")
    if type(n) is not int or n < 1:
        raise ValueError(f"iterations must be a positive integer, got {n!r}")
    if type(k) is not int or not 1 <= k < n:
        raise ValueError(f"interrupt_at must be an integer in [1, {n - 1}], got {k!r}")
    updates = int(section["updates_per_rollout"])
    if updates < 1:
        raise ValueError(f"grpo.updates_per_rollout must be >= 1, got {updates}")
    return {"branch": branch, "group_size": g, "iterations": n, "interrupt_at": k,
            "prompts_per_iteration": int(section["prompts_per_iteration"]),
            "updates_per_rollout": updates, "total_updates": n * updates}


# --------------------------------------------------------------------------- prompt order
class PromptOrder:
    """Prompts without replacement: a seeded permutation read with a cursor, reshuffled
    (from the same generator) when a pass is exhausted."""

    def __init__(self, size: int, seed: int):
        if size < 1:
            raise ValueError("no training prompts")
        self.size = size
        self.generator = torch.Generator().manual_seed(seed)
        self.permutation: list[int] = []
        self.cursor = 0
        self.passes = 0

    def take(self, count: int) -> list[int]:
        chosen = []
        while len(chosen) < count:
            if self.cursor >= len(self.permutation):
                self.permutation = torch.randperm(self.size, generator=self.generator).tolist()
                self.cursor = 0
                self.passes += 1
            chosen.append(self.permutation[self.cursor])
            self.cursor += 1
        return chosen

    def state(self) -> dict:
        return {"size": self.size, "permutation": list(self.permutation), "cursor": self.cursor,
                "passes": self.passes, "generator": self.generator.get_state()}

    def load(self, state: dict) -> None:
        if state["size"] != self.size:
            raise ValueError(f"saved prompt order covers {state['size']} prompts, not {self.size}")
        self.permutation = list(state["permutation"])
        self.cursor = int(state["cursor"])
        self.passes = int(state["passes"])
        self.generator.set_state(state["generator"])


# --------------------------------------------------------------------------- one update
def _response_logits(model, prompt_ids: list[int], response_ids: list[int]) -> torch.Tensor:
    """Float32 logits [1, R, V] at the R prefixes that predicted the response tokens."""
    device = rollout.model_device(model)
    ids = torch.tensor([prompt_ids + response_ids], dtype=torch.long, device=device)
    logits = scoring.forward_logits(model, ids, torch.ones_like(ids))
    return logits[:, rollout.response_slice(len(prompt_ids), len(response_ids))]


def accumulate_gradients(policy, reference, groups: list[dict], config: dict) -> dict:
    """Backpropagate the GRPO loss of a rollout set into policy .grad; returns telemetry.

    Responses go through the network one at a time (memory stays that of one sequence);
    each adds loss_i / (P * G) to the gradient, which sums to the token -> response ->
    prompt mean of losses.grpo_objective because every prompt has G responses.
    """
    section = config["grpo"]
    group_size = len(groups[0]["responses"])
    if any(len(g["responses"]) != group_size for g in groups):
        raise ValueError("every prompt of a rollout set needs the same number of responses")
    weight = 1.0 / (len(groups) * group_size)
    device = rollout.model_device(policy)
    losses_, surrogates, kls, audits = [], [], [], []
    counts = {"tokens": 0, "clip_low": 0.0, "clip_high": 0.0, "outside": 0.0}
    ratio_min, ratio_max = float("inf"), float("-inf")
    for group in groups:
        for member, row in enumerate(group["responses"]):
            response = row["response_ids"]
            with torch.no_grad():
                reference_logits = _response_logits(reference, row["prompt_ids"], response)
            current_logits = _response_logits(policy, row["prompt_ids"], response)
            targets = torch.tensor([response], dtype=torch.long, device=device)
            current = torch.log_softmax(current_logits, dim=-1).gather(
                -1, targets.unsqueeze(-1)).squeeze(-1)
            old = torch.tensor([row["behaviour_logprobs"]], dtype=torch.float32, device=device)
            advantage = torch.tensor([group["advantages"][member]], dtype=torch.float32,
                                     device=device)
            mask = torch.ones_like(targets, dtype=torch.bool)
            kl = losses.exact_prefix_kl(current_logits, reference_logits,
                                        block_size=section["kl_block_size"])
            loss, audit = losses.grpo_objective(
                current, old, advantage, mask, kl, group_size=1,
                clip_epsilon=section["clip_epsilon"], kl_coefficient=section["kl_coefficient"])
            if not torch.isfinite(loss):
                raise ValueError(f"non-finite GRPO loss on {row['rollout_id']}")
            (loss * weight).backward()
            tokens = audit["active_tokens"]
            counts["tokens"] += tokens
            counts["clip_low"] += audit["clip_low_fraction"] * tokens
            counts["clip_high"] += audit["clip_high_fraction"] * tokens
            counts["outside"] += audit["outside_fraction"] * tokens
            ratios = audit["ratios"][0]
            ratio_min = min(ratio_min, float(ratios.min()))
            ratio_max = max(ratio_max, float(ratios.max()))
            losses_.append(audit["loss"])
            surrogates.append(audit["surrogate"])
            kls.append(audit["kl"])
            audits.append({"rollout_id": row["rollout_id"], "ratios": ratios.tolist(),
                           "exact_kl": kl.detach()[0].tolist(), "surrogate": audit["surrogate"],
                           "kl": audit["kl"]})
            del current_logits, reference_logits, current, kl, loss

    def reduced(values):  # token -> response -> prompt, as in the objective
        table = torch.tensor(values, dtype=torch.float64).reshape(len(groups), group_size)
        return float(losses.reduce_responses_then_prompts(table))

    tokens = counts["tokens"]
    return {
        "loss": reduced(losses_),
        "surrogate": reduced(surrogates),
        "mean_exact_kl": reduced(kls),
        "clip_low_fraction": counts["clip_low"] / tokens,
        "clip_high_fraction": counts["clip_high"] / tokens,
        "outside_fraction": counts["outside"] / tokens,
        "ratio_min": ratio_min,
        "ratio_max": ratio_max,
        "tokens": tokens,
        "responses": audits,
    }


def grpo_update(policy, reference, optimizer, scheduler, groups: list[dict], config: dict) -> dict:
    """One AdamW update on every response of a rollout set; returns its telemetry."""
    if policy.training or reference.training:
        raise ValueError("dropout must stay off: policy and reference in eval mode")
    learning_rate = optimizer.param_groups[0]["lr"]
    optimizer.zero_grad(set_to_none=True)
    telemetry = accumulate_gradients(policy, reference, groups, config)
    grad_norm = torch.nn.utils.clip_grad_norm_(
        model_lib.unique_parameters(policy), config["grpo"]["max_grad_norm"],
        error_if_nonfinite=True)
    if any(p.grad is not None or p.requires_grad for p in reference.parameters()):
        raise ValueError("the reference received gradients or became trainable")
    optimizer.step()
    scheduler.step()
    optimizer.zero_grad(set_to_none=True)
    return {"learning_rate": learning_rate, **telemetry, "grad_norm": float(grad_norm)}


# --------------------------------------------------------------------------- helpers
def _paths(out_dir: Path, branch: str, mode: str) -> dict:
    return {
        "warmstart": out_dir / "checkpoints" / "warmstart-resume.safetensors",
        "learning_data": out_dir / "learning-data",
        "state": out_dir / "checkpoints" / f"{branch}-{mode}.pt.gz",
        "interrupt_state": out_dir / "checkpoints" / f"{branch}-interrupt.pt.gz",
        "weights": out_dir / "checkpoints" / f"{branch}-resume.safetensors",
        "record": out_dir / "learning" / f"{branch}-{mode}.json",
        "rollouts": out_dir / "rollouts" / f"{branch}-{mode}",
    }


def _refuse_existing(paths: dict, mode: str) -> None:
    targets = [paths["state"], paths["record"]] + ([paths["weights"]] if mode == "resume" else [])
    found = [str(p) for p in targets if p.exists()]
    if paths["rollouts"].is_dir() and any(paths["rollouts"].iterdir()):
        found.append(f"{paths['rollouts']} (rollout evidence, possibly of an unfinished run)")
    if found:
        raise FileExistsError(f"GRPO {mode} outputs already exist: {found}; evidence is never "
                              "overwritten (use a new --out folder)")


def _identity(config, budget, paths, tokenizer, initial_digest, reference_digest, device) -> dict:
    """What a resumed run must share with the interrupted one (modes excluded)."""
    return {
        "variant": "educational GRPO, exact KL on prefixes",
        **{k: budget[k] for k in ("branch", "group_size", "iterations", "prompts_per_iteration",
                                  "updates_per_rollout", "total_updates")},
        "config_sha256": config_hash(config),
        "code_sha256": checkpoint.modules_sha256(TRAINING_MODULES),
        "warmstart_sha256": sha256_file(paths["warmstart"]),
        "initial_model_digest": initial_digest,
        "reference_model_digest": reference_digest,
        "learning_data_sha256": data.dataset_sha256(paths["learning_data"]),
        "template": prompts.template_identity(tokenizer, config),
        "seeds": {"system": config["seed"],
                  "generation": config["seed"] + GENERATION_SEED_OFFSET,
                  "prompt_order": config["seed"] + PROMPT_ORDER_SEED_OFFSET},
        # Another GPU model or CPU thread count can change floating-point results:
        # a bitwise resume must run on the same kind of machine.
        "compute": {"device": (torch.cuda.get_device_name(device) if device.type == "cuda"
                               else "cpu"),
                    "torch_threads": torch.get_num_threads(), "torch": torch.__version__},
    }


def _group_record(group: dict) -> dict:
    """The part of a group that enters the history (no times, no token lists)."""
    return {"group_id": group["group_id"], "document_id": group["document_id"],
            "rewards": group["rewards"], "advantages": group["advantages"],
            "reward_std": group["reward_std"], "zero_variance": group["zero_variance"],
            "finish_reasons": [r["finish_reason"] for r in group["responses"]],
            "response_tokens": [r["response_tokens"] for r in group["responses"]],
            "tokenization_valid": [r["tokenization_valid"] for r in group["responses"]]}


def _mean(values) -> float:
    values = list(values)
    return sum(values) / len(values)


# --------------------------------------------------------------------------- the branch
def run_grpo_branch(config: dict, out_dir, branch: str = "grpo", mode: str = "continuous",
                    group_size: int | None = None, iterations: int | None = None,
                    interrupt_at: int | None = None, progress: bool = True) -> dict:
    """Run one GRPO branch in one mode; returns the learning record (also written to
    OUT/learning/{branch}-{mode}.json).

    continuous: all iterations. interrupt: the first interrupt_at iterations. resume: load
    the interrupt state into freshly loaded models and run the remaining iterations.
    """
    command_start = time.perf_counter()
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    rollout.check_sampling_config(config)
    budget = branch_budget(config, branch, group_size, iterations, interrupt_at)
    section = config["grpo"]
    out_dir = Path(out_dir)
    paths = _paths(out_dir, branch, mode)
    _refuse_existing(paths, mode)
    if not paths["warmstart"].is_file():
        raise FileNotFoundError(f"{paths['warmstart']} is missing: run the warm start first")
    if mode == "resume" and not paths["interrupt_state"].is_file():
        raise FileNotFoundError(f"{paths['interrupt_state']} is missing: run mode interrupt first")
    data.assert_learning_only(paths["learning_data"])
    examples = data.read_examples(paths["learning_data"], "train")

    tokenizer = model_lib.load_tokenizer(config)
    policy, _ = model_lib.reload_policy(paths["warmstart"], config)
    reference, reference_meta = model_lib.reload_policy(paths["warmstart"], config)
    policy.eval()
    reference.eval()
    reference.requires_grad_(False)
    device = rollout.model_device(policy)
    deterministic_before = torch.are_deterministic_algorithms_enabled()
    if device.type == "cuda":  # bitwise resume on a GPU needs deterministic kernels
        torch.use_deterministic_algorithms(True, warn_only=True)
        torch.cuda.reset_peak_memory_stats(device)
    try:
        return _run(config, budget, section, branch, mode, paths, examples, tokenizer, policy,
                    reference, reference_meta, device, progress, command_start)
    finally:
        if device.type == "cuda":
            torch.use_deterministic_algorithms(deterministic_before)


def _run(config, budget, section, branch, mode, paths, examples, tokenizer, policy, reference,
         reference_meta, device, progress, command_start) -> dict:
    initial_digest = model_lib.model_digest(policy)
    reference_digest = model_lib.model_digest(reference)
    if not initial_digest == reference_digest == reference_meta["model_digest"]:
        raise ValueError("policy and reference must both be the warm start as saved "
                         f"({reference_meta['model_digest']}); got {initial_digest} and "
                         f"{reference_digest}")
    identity = _identity(config, budget, paths, tokenizer, initial_digest, reference_digest,
                         device)

    parameters = model_lib.unique_parameters(policy)
    optimizer = torch.optim.AdamW(parameters, lr=section["learning_rate"],
                                  weight_decay=section["weight_decay"])
    scheduler = schedule.make_scheduler(optimizer, budget["total_updates"], section)
    order = PromptOrder(len(examples), config["seed"] + PROMPT_ORDER_SEED_OFFSET)
    generator = torch.Generator(device=device).manual_seed(config["seed"] + GENERATION_SEED_OFFSET)
    checkpoint.seed_everything(config["seed"])  # the run never depends on the process's RNG
    start, consumed, history = 0, [], []
    if mode == "resume":
        state = checkpoint.load_state(paths["interrupt_state"])
        checkpoint.check_identity(identity, state["identity"],
                                  f"GRPO state {paths['interrupt_state']}")
        policy.load_state_dict(state["model"], strict=True)
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        order.load(state["prompt_order"])
        generator.set_state(state["generation_rng"])
        checkpoint.restore_rng(state["system_rng"])  # after seeding, never before
        start, consumed, history = state["iteration"], list(state["consumed_rollout_ids"]), \
            list(state["history"])
        if state["updates"] != start * budget["updates_per_rollout"] or len(history) != start:
            raise ValueError("the interrupt state is not at a completed iteration boundary")
        del state
    stop = budget["interrupt_at"] if mode == "interrupt" else budget["iterations"]
    consumed_set = set(consumed)
    updates_done = start * budget["updates_per_rollout"]
    telemetry = []
    tolerance = section["verify_tolerance"]
    bar = tqdm(range(start, stop), desc=f"GRPO {branch} ({mode})", initial=start,
               total=stop, disable=not progress, unit="it")
    model_lib.synchronize(device)
    loop_start = time.perf_counter()
    for iteration in bar:
        iteration_start = time.perf_counter()
        indices = order.take(budget["prompts_per_iteration"])
        tick = time.perf_counter()
        behaviour_digest = model_lib.model_digest(policy)
        digest_seconds = time.perf_counter() - tick
        groups = []
        for position, index in enumerate(indices):
            groups.append(rollout.sample_group(
                policy, tokenizer, examples[index], config, generator, budget["group_size"],
                group_id=f"{branch}/iteration-{iteration:04d}/prompt-{position:02d}",
                policy_digest=behaviour_digest))
        rows = [r for g in groups for r in g["responses"]]
        generation_seconds = sum(r["seconds"] for r in rows)
        ids = [r["rollout_id"] for r in rows]
        reused = sorted(set(i for i in ids if i in consumed_set or ids.count(i) > 1))
        if reused:
            raise ValueError(f"rollouts would be consumed twice: {reused[:5]}")

        model_lib.synchronize(device)
        tick = time.perf_counter()
        verification = rollout.verify_captured_logprobs(policy, rows, tolerance)
        model_lib.synchronize(device)
        verification_seconds = time.perf_counter() - tick

        tick = time.perf_counter()
        updates = []
        for _ in range(budget["updates_per_rollout"]):
            updates.append(grpo_update(policy, reference, optimizer, scheduler, groups, config))
            updates_done += 1
        model_lib.synchronize(device)
        optimisation_seconds = time.perf_counter() - tick
        consumed.extend(ids)
        consumed_set.update(ids)

        tick = time.perf_counter()
        evidence = {
            "branch": branch, "mode": mode, "iteration": iteration,
            "policy_digest": behaviour_digest, "reference_digest": reference_digest,
            "document_ids": [g["document_id"] for g in groups],
            "verification": verification,
            "groups": [{k: v for k, v in g.items()} for g in groups],
            "updates": [{k: v for k, v in u.items()} for u in updates],
        }
        save_json(paths["rollouts"] / f"iteration-{iteration:04d}.json", evidence)
        evidence_seconds = time.perf_counter() - tick

        summaries = [{k: v for k, v in u.items() if k != "responses"} for u in updates]
        record = {
            "iteration": iteration,
            "document_ids": [g["document_id"] for g in groups],
            "policy_digest": behaviour_digest,
            "mean_reward": _mean(r for g in groups for r in g["rewards"]),
            "zero_variance_fraction": _mean(g["zero_variance"] for g in groups),
            "mean_exact_kl": _mean(u["mean_exact_kl"] for u in summaries),
            "clip_low_fraction": _mean(u["clip_low_fraction"] for u in summaries),
            "clip_high_fraction": _mean(u["clip_high_fraction"] for u in summaries),
            "grad_norm": _mean(u["grad_norm"] for u in summaries),
            "learning_rate": summaries[0]["learning_rate"],
            "loss": _mean(u["loss"] for u in summaries),
            "responses_without_eos": sum(r["finish_reason"] != "eos" for r in rows),
            "response_tokens": sum(r["response_tokens"] for r in rows),
            "verify_max_abs_difference": verification["max_abs_difference"],
            "updates": summaries,
            "groups": [_group_record(g) for g in groups],
        }
        history.append(record)
        model_lib.synchronize(device)
        times = {"iteration": iteration, "generation_seconds": generation_seconds,
                 "verification_seconds": verification_seconds,
                 "optimisation_seconds": optimisation_seconds,
                 "digest_seconds": digest_seconds, "evidence_seconds": evidence_seconds,
                 "iteration_seconds": time.perf_counter() - iteration_start}
        telemetry.append({**record, "times": times})
        bar.set_postfix(reward=f"{record['mean_reward']:.3f}",
                        zvf=f"{record['zero_variance_fraction']:.2f}",
                        kl=f"{record['mean_exact_kl']:.2e}")
    bar.close()
    model_lib.synchronize(device)
    loop_seconds = time.perf_counter() - loop_start

    reference_after = model_lib.model_digest(reference)
    if reference_after != reference_digest:
        raise ValueError(f"the frozen reference changed: {reference_digest} -> {reference_after}")
    if any(p.grad is not None for p in reference.parameters()):
        raise ValueError("the frozen reference holds gradients")
    final_digest = model_lib.model_digest(policy)
    timings = {"loop_seconds": loop_seconds, "per_iteration": [t["times"] for t in telemetry]}
    state = {
        "identity": identity,
        "iteration": stop,
        "updates": updates_done,
        "model": policy.state_dict(),  # tied tensors keep sharing storage: saved once
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "prompt_order": order.state(),
        "generation_rng": generator.get_state(),
        "system_rng": checkpoint.capture_rng(),
        "consumed_rollout_ids": list(consumed),
        "history": history,
        "timings": timings,
    }
    saved = checkpoint.save_state(paths["state"], state)
    weights = None
    if mode == "resume":
        tick = time.perf_counter()
        sha = model_lib.save_policy(policy, paths["weights"], {
            "branch": branch, "source": "GRPO resume", "iterations": stop, "updates": updates_done,
            "warmstart_sha256": identity["warmstart_sha256"]})
        weights = {"path": str(paths["weights"]), "sha256": sha, "model_digest": final_digest,
                   "seconds": time.perf_counter() - tick}
    peak = torch.cuda.max_memory_allocated(device) if device.type == "cuda" else None
    run_times = [t["times"] for t in telemetry]

    def total(key):
        return sum(t[key] for t in run_times)

    responses_run = sum(len(g["rewards"]) for h in telemetry for g in h["groups"])
    record = {
        "branch": branch, "mode": mode, "provenance": provenance(config),
        "identity": identity, "budget": budget,
        "iterations_run": [start, stop], "updates": updates_done,
        "initial_model_digest": initial_digest, "final_model_digest": final_digest,
        "reference_digest_before": reference_digest, "reference_digest_after": reference_after,
        "consumed_rollouts": len(consumed),
        "history": history,
        "telemetry": telemetry,
        "costs": {
            "responses_generated": responses_run,
            "response_tokens_generated": sum(h["response_tokens"] for h in telemetry),
            "kv_cache": bool(config["sampling"].get("use_kv_cache", False)),
            "state_bytes": saved["bytes"], "state_save_seconds": saved["seconds"],
            "state_sha256": saved["sha256"], "state_path": str(paths["state"]),
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
            "total_seconds": time.perf_counter() - command_start,
        },
    }
    save_json(paths["record"], record)
    return record


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
