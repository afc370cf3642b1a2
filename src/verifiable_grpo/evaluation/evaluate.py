"""Honest evaluation: inference first (labels out of reach), scoring afterwards.

For each policy the saved `{policy}-resume.safetensors` is reloaded strictly and answers
the same test inputs twice over: one greedy response (greedy pass@1) and `draws` sampled
responses per problem with fixed seeds shared by every policy (per-draw success, never the
best of the draws). Every output is kept, valid or not.

Order of work, enforced rather than promised:
1. `generate_policy` writes OUT/inference/{policy}/{greedy,sample}.json and audit.json while
   an audit hook refuses any `open` of the dataset's labels folder;
2. `score_policies` reads the gold labels afterwards and scores with the verifier
   (verdicts.py).
The label guard is label_guard.py.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import torch

from verifiable_grpo.core import interrupts
from verifiable_grpo.core.config import load_config, provenance, read_json, save_json, sha256_file
from verifiable_grpo.core.config_schema import Profile
from verifiable_grpo.core.faults import fault_point
from verifiable_grpo.core.files import inside
from verifiable_grpo.core.progress import tqdm
from verifiable_grpo.core.runfolder import (
    INFERENCE_MODES,
    MAIN_BRANCHES,
    RunFolder,
    exercise_group_size,
)
from verifiable_grpo.evaluation.label_guard import assert_no_labels, labels_out_of_reach
from verifiable_grpo.evaluation.responses import (
    EVALUATION_BATCH_ROWS,
    Decoding,
    generate_answers,
    response_jobs,
)
from verifiable_grpo.evaluation.verdicts import (  # noqa: F401 (re-exported)
    POPULATIONS,
    best_of_draws_success,
    check_counts,
    population_metrics,
    score_rows,
)

MAIN_POLICIES = MAIN_BRANCHES


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


# --------------------------------------------------------------------------- selection
def select_test_pages(pages: list[dict], problems: int) -> list[tuple[int, dict]]:
    """The evaluated problems as (index in the input file, page).

    All of them when `problems` equals the file's length (200 in full profiles), else a
    balanced subset: the first problems//2 ID50 pages and the first problems - problems//2
    OOD100 pages, kept in file order. Deterministic; no label is involved.
    """
    if type(problems) is not int or problems < 2:
        raise ValueError(f"evaluation.problems must be an integer >= 2, got {problems!r}")
    if problems > len(pages):
        raise ValueError(f"evaluation.problems={problems} exceeds the {len(pages)} test inputs")
    indexed = list(enumerate(pages))
    if problems == len(pages):
        return indexed
    want = {"ID50": problems // 2, "OOD100": problems - problems // 2}
    chosen = []
    for index, page in indexed:
        population = page["population"]
        if population not in want:
            raise ValueError(f"{page['document_id']}: unknown population {population!r}")
        if want[population] > 0:
            want[population] -= 1
            chosen.append((index, page))
    if any(want.values()):
        raise ValueError(
            f"not enough test inputs for a balanced subset of {problems}: missing {want}"
        )
    return chosen


# --------------------------------------------------------------------------- inference
def inference_dir(out_dir, policy: str) -> Path:
    if policy not in MAIN_BRANCHES and exercise_group_size(policy) is None:
        raise ValueError(
            f"unknown policy {policy!r}; expected one of {list(MAIN_BRANCHES)} or "
            "an exercise branch grpo-gN"
        )
    return RunFolder(out_dir).inference(policy)


def checkpoint_path(out_dir, policy: str) -> Path:
    return RunFolder(out_dir).policy(policy)


def _generation_settings(config: Profile) -> dict:
    ev, sampling, tokens = config.evaluation, config.sampling, config.tokens
    return {
        "problems": ev.problems,
        "draws": ev.draws,
        "seed_base": ev.seed_base,
        "seed_rule": "seed_base + problem_index * draws + draw (problem_index: position in "
        "input/pages.json); one torch.Generator per draw",
        "temperature": sampling.temperature,
        "top_k": sampling.top_k,
        "top_p": sampling.top_p,
        "use_kv_cache": sampling.use_kv_cache,
        "batched": sampling.batched,
        "draw": (
            "inverse CDF of one float64 uniform per step from the draw's generator, "
            f"{EVALUATION_BATCH_ROWS} responses decoded together"
            if sampling.batched
            else "torch.multinomial, one response at a time"
        ),
        "max_response_tokens": tokens.max_response,
        "max_prompt_tokens": tokens.max_prompt,
        "constrained_decoding": False,
        "greedy": "argmax of the full-vocabulary logits at every step",
    }


@dataclass(frozen=True)
class LoadedPolicy:
    """A policy reloaded for inference: model (eval mode), tokenizer, profile, the policy's
    name and the digest of its weights."""

    model: Any
    tokenizer: Any
    config: dict
    name: str
    digest: str


def _mode_rows(loaded: LoadedPolicy, jobs, mode, device, bar) -> list[dict]:
    """Every response of one mode, as rows of the inference file."""
    model, tokenizer, config, policy = loaded.model, loaded.tokenizer, loaded.config, loaded.name
    last_draw = max(job.draw for job in jobs)

    def after_each(job, answer):
        bar.update()
        if job.draw == last_draw:
            fault_point("inference-after-problem")
            interrupts.check(
                f"during inference of {policy} (unfinished inference is redone on the next run)"
            )

    decoding = Decoding(mode == "greedy", device)
    answers = generate_answers(model, tokenizer, config, jobs, decoding, after_each)
    return [job.row(answer) for job, answer in zip(jobs, answers)]


def _inference_target(out_dir: Path, policy: str) -> tuple[Path, Path]:
    """(the policy's inference folder, its weights); refuses a folder already written, label
    material in the inference folders and missing weights."""
    folder = inference_dir(out_dir, policy)
    if folder.exists() and any(folder.iterdir()):
        raise FileExistsError(
            f"{folder} exists; inference files are never overwritten "
            "(remove the folder or use a new --out)"
        )
    assert_no_labels(out_dir / "inference")
    weights = checkpoint_path(out_dir, policy)
    if not weights.is_file():
        raise FileNotFoundError(f"{weights} is missing: train and resume the {policy} branch first")
    return folder, weights


def _load_policy(config: Profile, out_dir: Path, policy: str, weights: Path) -> tuple:
    """(model in eval mode, tokenizer, weights digest): a strict reload whose digest must
    be the one recorded with the weights."""
    from verifiable_grpo.core import model as model_lib

    policy_model, metadata = model_lib.reload_policy(
        weights, config, RunFolder(out_dir).recorded_policy_sha256(policy)
    )
    policy_model.eval()
    tokenizer = model_lib.load_tokenizer(config)
    digest_before = model_lib.model_digest(policy_model)
    if metadata.get("model_digest") not in (None, digest_before):
        raise ValueError(
            f"{weights}: reloaded weights digest {digest_before[:12]}... differs "
            f"from the recorded {metadata['model_digest'][:12]}..."
        )
    return policy_model, tokenizer, digest_before


def _write_mode(
    loaded: LoadedPolicy, mode: str, selected, prompt_ids, folder: Path
) -> tuple[dict, float]:
    """Answer every selected problem in one mode and write OUT/inference/{policy}/{mode}.json;
    returns (its entry in the audit, the seconds it took)."""
    policy_model, config, policy, digest = loaded.model, loaded.config, loaded.name, loaded.digest
    ev = config.evaluation
    draws, seed_base = ev.draws, ev.seed_base
    device = next(policy_model.parameters()).device
    started = time.perf_counter()
    bar = tqdm(
        total=len(selected) * (1 if mode == "greedy" else draws),
        desc=f"{policy} {mode}",
        leave=False,
    )
    rows = _mode_rows(
        loaded, response_jobs(selected, prompt_ids, mode, draws, seed_base), mode, device, bar
    )
    bar.close()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    seconds = time.perf_counter() - started
    path = save_json(
        folder / f"{mode}.json",
        {
            "policy": policy,
            "mode": mode,
            "model_digest": digest,
            "problems": len(selected),
            "draws_per_problem": 1 if mode == "greedy" else draws,
            "document_ids": [page["document_id"] for _, page in selected],
            "labels_read": False,
            "rows": rows,
        },
    )
    return {"file": path.name, "sha256": sha256_file(path), "responses": len(rows)}, seconds


def generate_policy(config: Profile, out_dir, policy: str) -> dict:
    """Write OUT/inference/{policy}/{greedy,sample}.json, then audit.json; returns the audit.

    Refuses if the policy's inference folder exists (evidence is never overwritten).
    """
    from verifiable_grpo.core import model as model_lib
    from verifiable_grpo.task import data, prompts

    out_dir = Path(out_dir)
    folder, weights = _inference_target(out_dir, policy)
    ev = config.evaluation  # checked when read: draws >= 1, problems in 2..200

    labels_folder = out_dir / "data" / "labels"
    with labels_out_of_reach(labels_folder), torch.no_grad():
        selected = select_test_pages(data.read_test_inputs(out_dir / "data"), ev.problems)
        policy_model, tokenizer, digest_before = _load_policy(config, out_dir, policy, weights)
        device = next(policy_model.parameters()).device
        cuda = device.type == "cuda"
        if cuda:
            torch.cuda.synchronize(device)
            torch.cuda.reset_peak_memory_stats(device)
        prompt_ids = [
            prompts.prompt_ids(tokenizer, page["statement"], config) for _, page in selected
        ]
        files, seconds = {}, {}
        loaded = LoadedPolicy(policy_model, tokenizer, config, policy, digest_before)
        for mode in INFERENCE_MODES:
            files[mode], seconds[mode] = _write_mode(loaded, mode, selected, prompt_ids, folder)
        digest_after = model_lib.model_digest(policy_model)
        if digest_after != digest_before:
            raise ValueError(f"{policy}: generation changed the policy's weights")
        audit = {
            "policy": policy,
            "model_digest": digest_before,
            "checkpoint": str(weights.relative_to(out_dir)),
            "checkpoint_sha256": sha256_file(weights),
            "seconds": {**seconds, "total": seconds["greedy"] + seconds["sample"]},
            "peak_cuda_memory_bytes": torch.cuda.max_memory_allocated(device) if cuda else None,
            "device": str(device),
            "settings": _generation_settings(config),
            "files": files,
            "labels_read": False,
            "finished_at": utc_now(),
            "provenance": provenance(config),
        }
        save_json(folder / "audit.json", audit)
    return audit


def check_inference(out_dir, policy: str) -> dict | None:
    """The audit of a complete inference folder (files match it), None if there is none.
    ValueError on a half-written or altered folder."""
    folder = inference_dir(out_dir, policy)
    if not folder.exists() or not any(folder.iterdir()):
        return None  # never started (an empty folder is what a kill before any file leaves)
    audit_path = folder / "audit.json"
    if not audit_path.is_file():
        raise ValueError(
            f"{folder} is half-written (no audit.json): remove it or use a new "
            "--out; inference files are never overwritten"
        )
    audit = read_json(audit_path)
    for entry in audit["files"].values():
        path = inside(folder, entry["file"], f"{audit_path}: file")
        if not path.is_file() or sha256_file(path) != entry["sha256"]:
            raise ValueError(f"{path} is missing or differs from its audit")
    return audit


# --------------------------------------------------------------------------- scoring
def _score_policy(
    out_dir: Path, policy: str, audit: dict, gold: dict, draws: int, labels_read_at: str
) -> dict:
    """Score one policy's greedy and sampled answers (writing their score files); returns
    its entry in the results."""
    folder = inference_dir(out_dir, policy)
    entry = {}
    for mode in INFERENCE_MODES:
        inference = read_json(folder / f"{mode}.json")
        check_counts(inference["rows"], inference["document_ids"], 1 if mode == "greedy" else draws)
        scored = score_rows(inference["rows"], gold)
        save_json(
            RunFolder(out_dir).scores(policy, mode),
            {"policy": policy, "mode": mode, "labels_read_at": labels_read_at, "rows": scored},
        )
        entry[mode] = population_metrics(scored)
        for metrics in entry[mode].values():  # measured once per policy run, not per population
            metrics["peak_cuda_memory_bytes"] = audit["peak_cuda_memory_bytes"]
    return {
        "greedy_pass_at_1": entry["greedy"],
        "per_draw_success": entry["sample"],
        "draws_per_problem": draws,
        "best_of_draws_reported": False,
        "model_digest": audit["model_digest"],
        "generation": {
            "seconds": audit["seconds"],
            "peak_cuda_memory_bytes": audit["peak_cuda_memory_bytes"],
            "device": audit["device"],
            "finished_at": audit["finished_at"],
            "files": audit["files"],
        },
    }


def _same_problems(out_dir: Path, policies) -> list[str]:
    """The evaluated problems' ids; ValueError if two policies answered different ones."""
    first = read_json(inference_dir(out_dir, policies[0]) / "greedy.json")["document_ids"]
    for policy in policies[1:]:
        if read_json(inference_dir(out_dir, policy) / "greedy.json")["document_ids"] != first:
            raise ValueError(f"{policy} answered other test problems than {policies[0]}")
    return first


def score_policies(config: Profile, out_dir, policies, results_path) -> dict:
    """Read the gold labels (after every inference audit exists) and write the results."""
    from verifiable_grpo.task import data

    out_dir, results_path = Path(out_dir), Path(results_path)
    if results_path.exists():
        raise FileExistsError(f"{results_path} exists; results are never overwritten")
    audits = {}
    for policy in policies:
        audit = check_inference(out_dir, policy)
        if audit is None:
            raise FileNotFoundError(f"no inference for {policy}: generate before scoring")
        audits[policy] = audit
    labels_read_at = utc_now()
    late = [p for p, a in audits.items() if a["finished_at"] >= labels_read_at]
    if late:
        raise ValueError(f"inference of {late} finished after scoring began")
    gold = data.read_gold(out_dir / "data")
    draws = config.evaluation.draws
    policies_out = {
        policy: _score_policy(out_dir, policy, audits[policy], gold, draws, labels_read_at)
        for policy in policies
    }
    first = _same_problems(out_dir, policies)
    results = {
        "policies": policies_out,
        "problems": len(first),
        "draws": draws,
        "populations": {
            p: policies_out[policies[0]]["greedy_pass_at_1"][p]["problems"] for p in POPULATIONS
        },
        "settings": _generation_settings(config),
        "labels_read_at": labels_read_at,
        "inference_finished_before_labels": True,
        "dataset_sha256": data.dataset_sha256(out_dir / "data"),
        "notes": [
            "per-draw success counts every sampled response; it is not best-of-k",
            "invalid outputs are kept and score 0",
            "a deterministic solver computes every answer exactly; this is a teaching "
            "task, not evidence about real inventories",
        ],
        "provenance": provenance(config),
    }
    save_json(results_path, results)
    return results


def evaluate_policies(config: Profile, out_dir, policies, results_path) -> dict:
    """Generate whatever inference is missing (a complete folder is reused, never redone),
    then score every policy together."""
    for policy in policies:
        if check_inference(out_dir, policy) is None:
            generate_policy(config, out_dir, policy)
    return score_policies(config, out_dir, list(policies), results_path)


def command_evaluate(args) -> int:
    """`evaluate [--policy P]`: with --policy, inference for that policy only (no labels
    read); without, inference for the main policies then scoring into OUT/results.json."""
    config = load_config(args.config)
    out_dir = Path(args.out)
    if getattr(args, "policy", None):
        audit = generate_policy(config, out_dir, args.policy)
        print(
            f"{args.policy}: inference written in {audit['seconds']['total']:.1f} s; "
            "labels not read (run `evaluate` without --policy to score)"
        )
        return 0
    results = evaluate_policies(config, out_dir, MAIN_POLICIES, RunFolder(out_dir).results)
    for policy, entry in results["policies"].items():
        greedy = entry["greedy_pass_at_1"]["ALL"]
        sample = entry["per_draw_success"]["ALL"]
        print(
            f"{policy:10s} greedy pass@1 {greedy['success_rate']:.3f}  per-draw success "
            f"{sample['success_rate']:.3f}  (valid JSON {sample['json_validity']:.3f})"
        )
    return 0
