"""SmallSums-v1 and the band study's plumbing: disjoint splits, the 2-shot prompt, Part I's
dataset layout, the screen's rule, the curve and the refusal without a passing screen."""

from __future__ import annotations

import pytest

from verifiable_grpo.core.config import ConfigError
from verifiable_grpo.part1 import band_data, band_scoring, band_study
from verifiable_grpo.task import data, prompts, small_sums, verifier


def test_the_splits_are_disjoint_and_never_a_worked_example():
    splits = small_sums.splits()
    assert {k: len(v) for k, v in splits.items()} == small_sums.SPLIT_SIZES
    keys = [(e["statement"]) for rows in splits.values() for e in rows]
    assert len(keys) == len(set(keys))
    shots = {small_sums.statement_of(*shot) for shot in small_sums.SHOTS}
    assert not shots & set(keys)
    assert small_sums.splits() == splits  # drawn once, from a fixed seed


@pytest.mark.parametrize("op, a, b, value", [("+", 20, 20, 40), ("-", 13, 13, 0), ("-", 9, 2, 7)])
def test_a_small_problem_is_a_stock_problem_the_strict_verifier_scores(op, a, b, value):
    problem = small_sums.problem_of(op, a, b)
    assert verifier.compute_final_stock(problem) == value
    good = verifier.score_generated_json(f'{{"final_stock": {value}}}', "eos", problem)
    assert good["reward"] == 1.0
    assert verifier.score_generated_json(f"{value}", "eos", problem)["reward"] == 0.0


def test_the_prompt_holds_two_worked_turns_then_the_problem(smoke_config, tokenizer):
    config = smoke_config
    assert prompts.messages_for("What is 3 + 4?", config)[-1]["content"].startswith("What is 3")
    assert len(prompts.messages_for("What is 3 + 4?", config)) == 1  # absent: one turn
    config = smoke_config.replaced(
        data={"prompt": "small-sums-2shot"}, tokens={"max_prompt": 400, "max_total": 500}
    )
    turns = prompts.messages_for("What is 3 + 4?", config)
    assert [t["role"] for t in turns] == ["user", "assistant"] * 2 + ["user"]
    assert turns[1]["content"] == '{"final_stock": 12}' and "16 - 9" in turns[2]["content"]
    one_turn = prompts.prompt_ids(tokenizer, "What is 3 + 4?", smoke_config)
    assert len(prompts.prompt_ids(tokenizer, "What is 3 + 4?", config)) > len(one_turn)


def test_the_schema_names_an_unknown_prompt_style(smoke_config):
    with pytest.raises(ConfigError, match="data.prompt"):
        smoke_config.replaced(data={"prompt": "three-shot"})


def test_the_dataset_reads_back_through_part_ones_readers(tmp_path):
    band_data.write_dataset(tmp_path / "data")
    splits = small_sums.splits()
    train = data.read_examples(tmp_path / "data", "train")
    assert [e["statement"] for e in train] == [e["statement"] for e in splits["train"]]
    assert data.read_examples(tmp_path / "data", "warmstart") == []
    assert len(data.read_test_inputs(tmp_path / "data")) == len(splits["test"])
    view = data.write_learning_view(tmp_path / "data", tmp_path / "learning")
    data.assert_learning_only(view)


def _rows(outcomes):
    """Compact rows [document_id, draw, seed, reward, valid, text] from {id: [rewards]}."""
    return [
        [doc, k, k, r, 1 if r else int(k % 2 == 0), "x"]
        for doc, rewards in outcomes.items()
        for k, r in enumerate(rewards)
    ]


def test_the_screen_rule_and_the_signal_share():
    half = {
        "sample": _rows({"a": [1, 0, 0, 0], "b": [0, 0, 0, 0]}),
        "greedy": _rows({"a": [1], "b": [0]}),
    }
    verdict = band_study.screen_verdict(half)
    assert verdict["per_draw"] == 0.125 and verdict["greedy"] == 0.5 and verdict["passed"]
    # b never varies; a with p = 1/4 has signal 1 - (3/4)^8 - (1/4)^8
    assert verdict["signal_share_g8"] == pytest.approx((1 - 0.75**8 - 0.25**8) / 2)
    flat = {"sample": half["sample"], "greedy": _rows({"a": [0], "b": [0]})}
    assert not band_study.screen_verdict(flat)["passed"]  # no greedy gap
    solved = {"sample": _rows({"a": [1] * 4}), "greedy": _rows({"a": [1]})}
    assert not band_study.screen_verdict(solved)["passed"]  # p above the band


def test_failures_split_format_from_arithmetic():
    rows = [
        ["a", 0, 0, 1, 1, ""],
        ["a", 1, 1, 0, 0, ""],
        ["a", 2, 2, 0, 1, ""],
        ["a", 3, 3, 0, 1, ""],
    ]
    assert band_data.failures(rows) == {"right": 1, "format": 1, "arithmetic": 2}


def test_the_paired_comparison_counts_problems_not_draws():
    before = {"sample": _rows({"a": [0, 0], "b": [0, 1]}), "greedy": _rows({"a": [0], "b": [1]})}
    after = {"sample": _rows({"a": [1, 1], "b": [0, 1]}), "greedy": _rows({"a": [1], "b": [1]})}
    result = band_scoring.compare(before, after, band_study.ANALYSIS_SEED)
    assert result["sample"]["problems"] == 2 and result["sample"]["difference"] == 0.5
    assert result["greedy"]["only_second"] == 1 and result["greedy"]["only_first"] == 0


def test_the_band_refuses_to_run_without_a_passing_screen(monkeypatch, tmp_path):
    monkeypatch.setattr(band_study, "RECORDED", str(tmp_path / "none"))
    with pytest.raises(ConfigError, match="band-screen"):
        band_study.run_band(tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_the_curve_scores_only_its_iterations_and_only_once(monkeypatch, tmp_path):
    calls = []

    def fake_score(policy, tokenizer, config, examples, draws, seed_base):
        calls.append(policy)
        return {"sample": _rows({"a": [1, 0]}), "greedy": _rows({"a": [1]}), "seconds": 0.0}

    monkeypatch.setattr(band_scoring, "score", fake_score)
    curve = band_data.Curve(tmp_path, [], None, {}, at=(0, 2))

    class Run:
        policy = "policy"

    for iteration in (0, 1, 2, 2, 3):
        Run.iteration = iteration
        curve.after_iteration(Run)
    assert len(calls) == 2
    assert [p["iteration"] for p in curve.points()] == [0, 2]


def test_the_band_bench_hands_its_shape_to_the_arms():
    """bench's arms read the shape of the run they are given; bench's own stays as it is."""
    from verifiable_grpo.part1 import band_bench, bench

    before = dict(bench.BENCH_SHAPE)
    run = band_bench.band_run(sets=2, warmup=1)
    assert run.shape["group_size"] == band_study.SETTING["group_size"] == 8
    assert run.shape["group_size"] != bench.BENCH_SHAPE["group_size"]
    chunks = run.chunks()
    assert len(chunks) == 3 and {len(c) for c in chunks} == {band_bench.SHAPE["prompts"]}
    assert bench.BENCH_SHAPE == before
    # the recorded one-at-a-time SmolLM2 candidate: 60 iterations x 4 prompts x G 4
    assert 2.0 < band_bench.recorded_sequential_seconds() < 5.0


def test_the_band_bench_formats_its_result():
    from verifiable_grpo.part1 import band_bench

    arms = [
        {"arm": name, "median_seconds": {"total": total}}
        for name, total in (("ours, batched", 20.0), ("TRL", 100.0))
    ]
    result = {
        "shape": band_bench.SHAPE,
        "sets": 3,
        "arms": arms,
        "seconds_per_response": {a["arm"]: band_bench.per_response(a) for a in arms},
        "ratio_ours_to_trl": 0.2,
        "recorded_sequential_seconds_per_response": 3.1,
        "speedup_over_recorded": 3.1 / band_bench.per_response(arms[0]),
    }
    text = band_bench.format_band_bench(result)
    assert "0.625 s per response" in text and "ours / TRL per rollout set: 0.20" in text
