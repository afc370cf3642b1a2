"""The fresh held-out split: new problems only, both populations, scored and compared."""

from __future__ import annotations

import torch

from verifiable_grpo.part1 import fresh_test
from verifiable_grpo.task import data
from verifiable_grpo.task.verifier import compute_final_stock, normalized_problem


def test_fresh_problems_are_new_distinct_and_labelled():
    examples = fresh_test.fresh_examples(20261130)
    assert len(examples) == sum(fresh_test.COUNTS.values()) == 1000
    keys = [normalized_problem(e["problem"]) for e in examples]
    assert len(set(keys)) == len(keys)
    old = {
        normalized_problem(p)
        for rows in data.generate_problem_set(20261130).values()
        for p, _ in rows
    }
    assert not old & set(keys)
    assert {e["population"] for e in examples} == {"ID50", "OOD100"}
    assert all(e["final_stock"] == compute_final_stock(e["problem"]) for e in examples)
    # Both populations appear early: any prefix is a mixture, as in the test split.
    assert {e["population"] for e in examples[:20]} == {"ID50", "OOD100"}


def test_the_same_seeds_give_the_same_split_and_another_fresh_seed_another(monkeypatch):
    first, again = fresh_test.fresh_examples(20261130), fresh_test.fresh_examples(20261130)
    assert first == again
    monkeypatch.setattr(fresh_test, "FRESH_SEED", fresh_test.FRESH_SEED + 1)
    assert fresh_test.fresh_examples(20261130) != first


def test_scores_and_the_paired_comparison_of_two_policies(micro_model, random_config, monkeypatch):
    torch.manual_seed(0)
    policy, tokenizer = micro_model
    monkeypatch.setattr(fresh_test, "DRAWS", 2)
    examples = fresh_test.fresh_examples(20261130, {"ID50": 3, "OOD100": 2})
    scored = fresh_test.score(policy, tokenizer, random_config, examples)
    assert len(scored["greedy"]) == 5 and len(scored["sample"]) == 10
    assert {row[0] for row in scored["sample"]} == {e["document_id"] for e in examples}
    better = {m: [[*r[:3], 1] for r in rows] for m, rows in scored.items()}
    result = fresh_test.compare(scored, better)
    assert result["sample"]["second_rate"] == 1.0
    assert result["sample"]["difference"] == 1.0 - result["sample"]["first_rate"]


def test_the_record_proves_its_declaration_came_first():
    """The recorded run stamped a clean tree at a commit that already held the declaration
    (the same rule and split), and its numbers recompute from its per-problem rows."""
    import subprocess

    from verifiable_grpo.core.config import repo_root

    record = fresh_test.recorded()
    stamp = record["started"]
    assert stamp["clean_tree"] and not stamp["exploratory"]
    declared = subprocess.run(
        ["git", "show", f"{stamp['git_commit']}:src/verifiable_grpo/part1/fresh_test.py"],
        cwd=repo_root(),
        capture_output=True,
        text=True,
    )
    if declared.returncode != 0:  # a shallow clone without that commit cannot check it
        import pytest

        pytest.skip("the run's commit is not in this clone's history")
    for line in (f"FRESH_SEED = {fresh_test.FRESH_SEED}", f"DRAWS = {fresh_test.DRAWS}"):
        assert line in declared.stdout
    assert record["rule"] == fresh_test.RULE
    again = fresh_test.compare(record["warm_start"], record["trained"])
    for mode in ("sample", "greedy"):
        assert again[mode] == record["paired"][mode]
    assert again["sample"]["problems"] == 1000 and again["sample"]["draws"] == 8
