"""What a GRPO iteration leaves in the learning record's history: means over the rollout
set's groups, responses and updates, and each group without its times or token lists."""

from __future__ import annotations

from verifiable_grpo.training import hack_detectors


def group_record(group: dict) -> dict:
    """The part of a group that enters the history (no times, no token lists); a control
    reward's group also keeps the verifier's rewards."""
    kept = {
        "group_id": group["group_id"],
        "document_id": group["document_id"],
        "rewards": group["rewards"],
        "advantages": group["advantages"],
        "reward_std": group["reward_std"],
        "zero_variance": group["zero_variance"],
        "finish_reasons": [r["finish_reason"] for r in group["responses"]],
        "response_tokens": [r["response_tokens"] for r in group["responses"]],
        "tokenization_valid": [r["tokenization_valid"] for r in group["responses"]],
    }
    if "verifier_rewards" in group:
        kept.update(reward_kind=group["reward_kind"], verifier_rewards=group["verifier_rewards"])
    return kept


def _answer_silent_signal(groups: list) -> float:
    """Share of groups whose answers all scored alike but whose rewards differ: their
    whole signal comes from the other terms (e.g. the format), at full advantage size
    under group-std scaling, whatever those terms' weights."""
    found = [
        len({r["reward_terms"]["answer"] for r in g["responses"]}) == 1 and not g["zero_variance"]
        for g in groups
    ]
    return mean(found)


def mean(values) -> float:
    values = list(values)
    return sum(values) / len(values)


def history_entry(
    iteration: int,
    groups: list,
    behaviour_digest: str,
    verification: dict,
    updates: list,
    questions: dict[str, str] | None = None,
) -> dict:
    """An iteration's entry in the learning record's history (means over its groups,
    responses and updates; the updates without their per-response audits), with the
    signals of training/hack_detectors.py (`questions`: document_id -> statement, for
    the copied-block detector) and, when responses carry separate reward terms, each
    term's mean apart."""
    rows = [r for g in groups for r in g["responses"]]
    summaries = [{k: v for k, v in u.items() if k != "responses"} for u in updates]
    entry = {
        "iteration": iteration,
        "document_ids": [g["document_id"] for g in groups],
        "policy_digest": behaviour_digest,
        "mean_reward": mean(r for g in groups for r in g["rewards"]),
        "zero_variance_fraction": mean(g["zero_variance"] for g in groups),
        "mean_exact_kl": mean(u["mean_exact_kl"] for u in summaries),
        "mean_entropy": mean(u["mean_entropy"] for u in summaries),
        "mean_response_tokens": mean(r["response_tokens"] for r in rows),
        "clip_low_fraction": mean(u["clip_low_fraction"] for u in summaries),
        "clip_high_fraction": mean(u["clip_high_fraction"] for u in summaries),
        "grad_norm": mean(u["grad_norm"] for u in summaries),
        "learning_rate": summaries[0]["learning_rate"],
        "loss": mean(u["loss"] for u in summaries),
        "responses_without_eos": sum(r["finish_reason"] != "eos" for r in rows),
        "response_tokens": sum(r["response_tokens"] for r in rows),
        "verify_max_abs_difference": verification["max_abs_difference"],
        "updates": summaries,
        "groups": [group_record(g) for g in groups],
        "signals": hack_detectors.signals(groups, questions),
    }
    if any("verifier_rewards" in g for g in groups):  # a control: how often it was right
        entry["mean_verifier_reward"] = mean(r for g in groups for r in g["verifier_rewards"])
    terms = [r["reward_terms"] for r in rows if "reward_terms" in r]
    if terms:  # the answer and format rewards, each apart
        entry["mean_reward_terms"] = {name: mean(t[name] for t in terms) for name in terms[0]}
        entry["signals"]["answer_silent_signal_share"] = _answer_silent_signal(groups)
    return entry
