"""Held-out accuracy of a policy in memory: greedy and per-draw on the test problems.

The same selection, draw seeds and verifier as Part I's evaluation (evaluation.evaluate);
labels are read only after every response exists. The per-item trace keeps the problem
id, the draw, the correctness and the SHA-256 of the completion text, never the text.
"""

from __future__ import annotations

import hashlib
import time

import torch

from verifiable_grpo.core.config_schema import Profile
from verifiable_grpo.evaluation import evaluate, policy_scores


def _completion_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@torch.no_grad()
def heldout_accuracy(policy, tokenizer, config: Profile, data_dir) -> dict:
    """{"greedy": metrics, "per_draw": metrics, "trace": [...], "seconds": ...}; metrics
    per population (ALL, ID50, OOD100) as evaluation.population_metrics."""
    if policy.training:
        raise ValueError("held-out evaluation needs the policy in eval mode")
    ev = config.evaluation
    started = time.perf_counter()
    selected, scored_by_mode = policy_scores.score_test_set(policy, tokenizer, config, data_dir)
    result, trace = {}, []
    for mode, name in (("greedy", "greedy"), ("sample", "per_draw")):
        scored = scored_by_mode[mode]
        result[name] = {
            p: {
                k: m[k]
                for k in (
                    "responses",
                    "problems",
                    "correct",
                    "success_rate",
                    "valid_json",
                    "without_eos",
                )
            }
            for p, m in evaluate.population_metrics(scored).items()
        }
        trace += [
            {
                "mode": mode,
                "document_id": r["document_id"],
                "draw": r["draw"],
                "correct": bool(r["reward"]),
                "completion_sha256": _completion_sha256(r["text"]),
            }
            for r in scored
        ]
    result["trace"] = trace
    result["problems"] = len(selected)
    result["draws"] = ev.draws
    result["seconds"] = time.perf_counter() - started
    return result
