"""Scoring written answers against the gold labels: each response's verifier verdict
(invalid ones kept, reward 0), the check that every problem has exactly its draws, and
counts and rates per population (ALL, ID50, OOD100). evaluate.score_policies runs them
once every inference file exists.
"""

from __future__ import annotations

POPULATIONS = ("ALL", "ID50", "OOD100")


def score_rows(rows: list[dict], gold: dict[str, dict]) -> list[dict]:
    """Verifier verdict for every response (invalid ones kept, reward 0)."""
    from verifiable_grpo.task.verifier import score_generated_json

    scored = []
    for row in rows:
        label = gold.get(row["document_id"])
        if label is None:
            raise ValueError(f"no gold label for {row['document_id']}")
        verdict = score_generated_json(
            row["text"],
            row["finish_reason"],
            label["problem"],
            tokenization_valid=row["tokenization_valid"],
        )
        if verdict["expected"] != label["final_stock"]:
            raise ValueError(f"{row['document_id']}: the solver and the gold label disagree")
        scored.append(
            {
                key: row[key]
                for key in (
                    "document_id",
                    "population",
                    "problem_index",
                    "draw",
                    "seed",
                    "finish_reason",
                    "response_tokens",
                    "seconds",
                    "text",
                )
            }
            | {key: verdict[key] for key in ("valid", "value", "reason", "reward", "expected")}
        )
    return scored


def check_counts(rows: list[dict], document_ids: list[str], draws: int) -> None:
    """Every evaluated problem has exactly `draws` responses, draws 0..draws-1."""
    expected = {(d, k) for d in document_ids for k in range(draws)}
    seen = [(r["document_id"], r["draw"]) for r in rows]
    if len(seen) != len(set(seen)) or set(seen) != expected:
        missing = sorted(expected - set(seen))[:3]
        raise ValueError(
            f"responses do not cover {len(document_ids)} problems x {draws} draws "
            f"exactly once (got {len(seen)} rows; missing e.g. {missing})"
        )


def population_metrics(scored: list[dict]) -> dict:
    """Counts and rates over every response of ALL, ID50 and OOD100 separately."""
    metrics = {}
    for population in POPULATIONS:
        rows = [r for r in scored if population == "ALL" or r["population"] == population]
        n = len(rows)
        if n == 0:
            raise ValueError(f"population {population} has no responses")
        correct = sum(r["reward"] for r in rows)
        valid = sum(bool(r["valid"]) for r in rows)
        metrics[population] = {
            "responses": n,
            "problems": len({r["document_id"] for r in rows}),
            "correct": correct,
            "success_rate": correct / n,
            "valid_json": valid,
            "json_validity": valid / n,
            "without_eos": sum(r["finish_reason"] != "eos" for r in rows),
            "mean_response_tokens": sum(r["response_tokens"] for r in rows) / n,
            "generation_seconds": sum(r["seconds"] for r in rows),
            "invalid_reasons": _reasons(rows),
        }
    return metrics


def _reasons(rows):
    counts: dict[str, int] = {}
    for r in rows:
        if not r["valid"]:
            counts[r["reason"]] = counts.get(r["reason"], 0) + 1
    return dict(sorted(counts.items()))


def best_of_draws_success(scored: list[dict]) -> float:
    """Fraction of problems with at least one correct draw. NOT per-draw success and not
    pass@1: shown only to contrast with them; never reported as a headline."""
    problems: dict[str, int] = {}
    for r in scored:
        problems[r["document_id"]] = max(problems.get(r["document_id"], 0), r["reward"])
    return sum(problems.values()) / len(problems)
