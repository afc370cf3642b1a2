"""The evaluation's response jobs: fixed per-draw seeds shared by every policy, the order of
the jobs and the rows their answers become."""

import pytest

from verifiable_grpo.evaluation import responses


def test_draw_seeds_are_fixed_and_distinct():
    assert responses.draw_seed(480000, 0, 4, 0) == 480000
    assert responses.draw_seed(480000, 3, 4, 2) == 480014
    seeds = {responses.draw_seed(480000, i, 4, d) for i in range(200) for d in range(4)}
    assert len(seeds) == 800
    with pytest.raises(ValueError):
        responses.draw_seed(480000, 0, 4, 4)


def test_response_jobs_go_problem_by_problem_and_draw_by_draw():
    selected = [
        (4, {"document_id": "d4", "population": "ID50"}),
        (9, {"document_id": "d9", "population": "OOD100"}),
    ]
    prompt_rows = [[1, 2], [3]]
    sampled = responses.response_jobs(selected, prompt_rows, "sample", 3, 480000)
    assert [(j.problem_index, j.draw) for j in sampled] == [
        (4, 0),
        (4, 1),
        (4, 2),
        (9, 0),
        (9, 1),
        (9, 2),
    ]
    assert [j.seed for j in sampled] == [
        responses.draw_seed(480000, j.problem_index, 3, j.draw) for j in sampled
    ]
    assert sampled[3].prompt_ids == [3] and sampled[3].page["document_id"] == "d9"
    greedy = responses.response_jobs(selected, prompt_rows, "greedy", 3, 480000)
    assert [(j.problem_index, j.draw, j.seed) for j in greedy] == [(4, 0, None), (9, 0, None)]
    # a row starts with the job's identity, in the inference files' key order
    row = sampled[4].row({"text": "7", "seconds": 0.5})
    assert list(row) == [
        "document_id",
        "population",
        "problem_index",
        "draw",
        "seed",
        "text",
        "seconds",
    ]
    assert (row["document_id"], row["draw"], row["seed"]) == ("d9", 1, sampled[4].seed)
