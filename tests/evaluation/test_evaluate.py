"""Evaluation: counts, fixed seeds, invalid outputs kept, populations apart, labels only after
inference, per-draw success is not best-of-k."""

import json

import pytest

from verifiable_grpo.core import model as model_lib
from verifiable_grpo.core.config import load_config, read_json, sha256_file
from verifiable_grpo.evaluation import evaluate
from verifiable_grpo.task import data
from verifiable_grpo.task.statements import canonical_response

PROBLEMS, DRAWS = 4, 2


@pytest.fixture(scope="module")
def config():
    return load_config("smoke").replaced(
        model={"source": "random"},  # a micro Qwen2: no trained base needed
        evaluation={"problems": PROBLEMS, "draws": DRAWS},
        tokens={"max_response": 6},
    )


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, config):
    """A run folder with the dataset and two policies holding the same weights."""
    out = tmp_path_factory.mktemp("run")
    data.write_dataset(out / "data", config["data"]["seed"])
    policy, _ = model_lib.load_base(config)
    for name in ("warmstart", "sft"):
        model_lib.save_policy(
            policy, out / "checkpoints" / f"{name}-resume.safetensors", {"branch": name}
        )
    for name in ("warmstart", "sft"):
        evaluate.generate_policy(config, out, name)
    return out


def test_balanced_subset_keeps_file_order_and_populations():
    pages = [
        {"document_id": f"d{i}", "population": pop}
        for i, pop in enumerate(["ID50", "ID50", "ID50", "OOD100", "ID50", "OOD100"])
    ]
    chosen = evaluate.select_test_pages(pages, 4)
    assert [i for i, _ in chosen] == [0, 1, 3, 5]
    assert evaluate.select_test_pages(pages, 6) == list(enumerate(pages))
    with pytest.raises(ValueError, match="balanced"):
        evaluate.select_test_pages(pages, 5)  # 2 ID50 + 3 OOD100 needed, only 2 OOD100
    with pytest.raises(ValueError, match="exceeds"):
        evaluate.select_test_pages(pages, 7)


def test_full_profile_evaluates_all_200_inputs_in_file_order(tmp_path):
    data.write_dataset(tmp_path, load_config("tiny")["data"]["seed"])
    pages = data.read_test_inputs(tmp_path)
    chosen = evaluate.select_test_pages(pages, load_config("tiny")["evaluation"]["problems"])
    assert [i for i, _ in chosen] == list(range(200))
    assert sum(p["population"] == "OOD100" for _, p in chosen) == 100


def test_inference_counts_seeds_and_audit(run_dir, config):
    folder = run_dir / "inference" / "warmstart"
    greedy, sample = read_json(folder / "greedy.json"), read_json(folder / "sample.json")
    audit = read_json(folder / "audit.json")
    assert len(greedy["rows"]) == PROBLEMS and len(sample["rows"]) == PROBLEMS * DRAWS
    assert greedy["document_ids"] == sample["document_ids"]
    assert [r["population"] for r in greedy["rows"]].count("OOD100") == PROBLEMS // 2
    for row in sample["rows"]:
        assert row["seed"] == 480000 + row["problem_index"] * DRAWS + row["draw"]
    assert all(r["seed"] is None for r in greedy["rows"])
    assert "final_stock" not in json.dumps(greedy["rows"])  # no answer in inference files
    assert audit["labels_read"] is False
    assert audit["files"]["sample"]["sha256"] == sha256_file(folder / "sample.json")
    assert (
        audit["model_digest"]
        == model_lib.read_policy_metadata(run_dir / "checkpoints" / "warmstart-resume.safetensors")[
            "model_digest"
        ]
    )


def test_same_weights_and_seeds_give_the_same_draws_for_every_policy(run_dir):
    texts = {
        p: [r["response_ids"] for r in read_json(run_dir / "inference" / p / "sample.json")["rows"]]
        for p in ("warmstart", "sft")
    }
    assert texts["warmstart"] == texts["sft"]


def test_batched_inference_gives_each_draw_its_own_seed_and_greedy_the_sequential_answer(
    run_dir, config
):
    """smoke decodes in batches (sampling.batched): greedy rows are those of one-at-a-time
    decoding, and each sampled row is what its own seed gives alone."""
    import torch

    from verifiable_grpo.task import prompts
    from verifiable_grpo.training import batched_rollout, rollout

    assert config["sampling"]["batched"] is True
    folder = run_dir / "inference" / "warmstart"
    model, tokenizer = model_lib.load_base(config)
    pages = {p["document_id"]: p for p in data.read_test_inputs(run_dir / "data")}
    for row in read_json(folder / "greedy.json")["rows"]:
        ids = prompts.prompt_ids(tokenizer, pages[row["document_id"]]["statement"], config)
        alone = rollout.generate(rollout.Sampler(model, tokenizer, config), ids, greedy=True)
        assert row["response_ids"] == alone["response_ids"]
    sampled = read_json(folder / "sample.json")["rows"]
    for row in sampled[:3]:
        ids = prompts.prompt_ids(tokenizer, pages[row["document_id"]]["statement"], config)
        generators = [torch.Generator().manual_seed(row["seed"])]
        sampler = batched_rollout.Sampler(model, tokenizer, config, generators)
        alone = batched_rollout.generate_batch(sampler, [ids])
        assert row["response_ids"] == alone[0]["response_ids"]
    assert len({tuple(r["response_ids"]) for r in sampled}) > 1


def test_inference_refuses_to_overwrite(run_dir, config):
    with pytest.raises(FileExistsError, match="never overwritten"):
        evaluate.generate_policy(config, run_dir, "warmstart")


def test_inference_refuses_when_labels_sit_in_the_inference_folder(run_dir, config, tmp_path):
    out = tmp_path / "run"
    (out / "inference").mkdir(parents=True)
    (out / "inference" / "gold.json").write_text("[]")
    with pytest.raises(ValueError, match="label material"):
        evaluate.generate_policy(config, out, "grpo")


def test_labels_cannot_be_opened_during_inference(run_dir, config, tmp_path, monkeypatch):
    """Even code that tries to read the gold labels mid-inference is stopped."""
    out = tmp_path / "run"
    (out / "checkpoints").mkdir(parents=True)
    (out / "data").symlink_to(run_dir / "data")
    (out / "checkpoints" / "grpo-resume.safetensors").symlink_to(
        run_dir / "checkpoints" / "sft-resume.safetensors"
    )
    honest = data.read_test_inputs

    def peeking(data_dir):
        data.read_gold(data_dir)
        return honest(data_dir)

    monkeypatch.setattr(data, "read_test_inputs", peeking)
    with pytest.raises(PermissionError, match="labels are out of reach"):
        evaluate.generate_policy(config, out, "grpo")
    # outside inference the labels open normally
    assert len(data.read_gold(run_dir / "data")) == 200


def test_scoring_needs_complete_inference(run_dir, config, tmp_path):
    with pytest.raises(FileNotFoundError, match="generate before scoring"):
        evaluate.score_policies(config, run_dir, ["warmstart", "grpo"], tmp_path / "r.json")
    half = tmp_path / "half"
    (half / "inference" / "sft").mkdir(parents=True)
    (half / "inference" / "sft" / "greedy.json").write_text("{}")
    with pytest.raises(ValueError, match="half-written"):
        evaluate.check_inference(half, "sft")


def test_results_keep_invalid_outputs_and_split_populations(run_dir, config):
    results = evaluate.score_policies(
        config, run_dir, ["warmstart", "sft"], run_dir / "results.json"
    )
    entry = results["policies"]["warmstart"]
    greedy, sample = entry["greedy_pass_at_1"], entry["per_draw_success"]
    assert [greedy[p]["responses"] for p in ("ALL", "ID50", "OOD100")] == [4, 2, 2]
    assert [sample[p]["responses"] for p in ("ALL", "ID50", "OOD100")] == [8, 4, 4]
    assert [sample[p]["problems"] for p in ("ALL", "ID50", "OOD100")] == [4, 2, 2]
    # an untrained micro model writes no valid JSON: every output is still counted
    assert sample["ALL"]["valid_json"] + sum(sample["ALL"]["invalid_reasons"].values()) == 8
    assert sample["ALL"]["correct"] == 0 and sample["ALL"]["success_rate"] == 0.0
    assert results["populations"] == {"ALL": 4, "ID50": 2, "OOD100": 2}
    assert entry["best_of_draws_reported"] is False
    scored = read_json(run_dir / "scores" / "warmstart-sample.json")
    assert (
        scored["labels_read_at"]
        > read_json(run_dir / "inference" / "warmstart" / "audit.json")["finished_at"]
    )
    with pytest.raises(FileExistsError):
        evaluate.score_policies(config, run_dir, ["warmstart"], run_dir / "results.json")


def _gold(document_id, problem):
    from verifiable_grpo.task.verifier import compute_final_stock

    stock = compute_final_stock(problem)
    return {
        "document_id": document_id,
        "problem": problem,
        "final_stock": stock,
        "response": canonical_response(stock),
    }


def _row(document_id, population, draw, text, finish="eos"):
    return {
        "document_id": document_id,
        "population": population,
        "problem_index": 0,
        "draw": draw,
        "seed": draw,
        "text": text,
        "finish_reason": finish,
        "tokenization_valid": True,
        "response_tokens": 5,
        "seconds": 0.5,
    }


def test_score_rows_keeps_every_verdict():
    problem = {"initial": 10, "deliveries": [5, 7], "withdrawals": [3, 4]}  # 15
    gold = {"a": _gold("a", problem)}
    rows = [
        _row("a", "ID50", 0, '{"final_stock": 15}'),
        _row("a", "ID50", 1, '{"final_stock": 14}'),
        _row("a", "ID50", 2, '{"final_stock": 15} {"final_stock": 15}'),
        _row("a", "ID50", 3, '{"final_stock": 15}', finish="length"),
    ]
    scored = evaluate.score_rows(rows, gold)
    assert [r["reward"] for r in scored] == [1, 0, 0, 0]
    assert [r["valid"] for r in scored] == [True, True, False, False]
    assert scored[3]["reason"] == "completion_without_eos"
    with pytest.raises(ValueError, match="no gold label"):
        evaluate.score_rows([_row("b", "ID50", 0, "{}")], gold)


def test_per_draw_success_differs_from_best_of_k():
    """Problem a: 1 correct draw of 4; problem b: none. Per-draw 1/8, best-of-4 1/2."""
    problems = {
        "a": {"initial": 10, "deliveries": [5, 7], "withdrawals": [3, 4]},
        "b": {"initial": 60, "deliveries": [1, 2], "withdrawals": [3, 4]},
    }
    gold = {k: _gold(k, p) for k, p in problems.items()}
    rows = [_row("a", "ID50", 0, '{"final_stock": 15}')]
    rows += [_row("a", "ID50", d, '{"final_stock": 1}') for d in (1, 2, 3)]
    rows += [_row("b", "OOD100", d, "not json") for d in range(4)]
    scored = evaluate.score_rows(rows, gold)
    evaluate.check_counts(rows, ["a", "b"], 4)
    metrics = evaluate.population_metrics(scored)
    assert metrics["ALL"]["success_rate"] == 1 / 8
    assert evaluate.best_of_draws_success(scored) == 1 / 2
    assert metrics["ID50"]["success_rate"] == 1 / 4 and metrics["OOD100"]["success_rate"] == 0
    assert metrics["ALL"]["valid_json"] == 4 and metrics["ALL"]["json_validity"] == 0.5
    assert metrics["OOD100"]["invalid_reasons"] == {"invalid_json_schema": 4}
    assert metrics["ALL"]["generation_seconds"] == 4.0


def test_check_counts_refuses_missing_or_duplicated_draws():
    rows = [_row("a", "ID50", 0, ""), _row("a", "ID50", 0, "")]
    with pytest.raises(ValueError, match="exactly once"):
        evaluate.check_counts(rows, ["a"], 2)
    with pytest.raises(ValueError, match="exactly once"):
        evaluate.check_counts(rows[:1], ["a"], 2)
