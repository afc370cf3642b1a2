"""The lift study's SmolLM2 candidate: its config, its refusals, its own-warm-start pairing
and its record (no SmolLM2 weights needed: CI has none)."""

from __future__ import annotations

import pytest

from verifiable_grpo.core import files
from verifiable_grpo.core.config import load_config
from verifiable_grpo.models import smollm2 as lab1_model
from verifiable_grpo.part1 import lift_study, smollm2_candidate

SMOLLM2 = next(c for c in lift_study.CANDIDATES if c.model == smollm2_candidate.MODEL)


def test_smollm2_config_is_the_tiny_profile_with_the_declared_model_and_recipe():
    base = load_config("tiny")
    config = lift_study.candidate_config(base, SMOLLM2)
    model, grpo = config["model"], config["grpo"]
    assert (model["source"], model["architecture"]) == ("local", "LlamaForCausalLM")
    assert model["path"] == lab1_model.CACHE
    assert model["expected_unique_parameters"] == lab1_model.PARAMETERS
    assert model["eos_token_id"] == lab1_model.SPECIAL_TOKENS["<|im_end|>"]
    assert (grpo["prompts_per_iteration"], grpo["group_size"], grpo["iterations"]) == (4, 4, 60)
    assert (grpo["learning_rate"], grpo["kl_coefficient"], grpo["updates_per_rollout"]) == (
        1e-5,
        0.02,
        2,
    )
    assert grpo["interrupt_at"] < grpo["iterations"]
    assert {
        k: config["warmstart"][k] for k in smollm2_candidate.WARM_START
    } == smollm2_candidate.WARM_START
    # what pairs it with the tiny candidates stays the tiny profile's
    for section in ("data", "tokens", "evaluation", "sampling", "seed"):
        assert config[section] == base[section]
    assert base["model"]["source"] == "local" and base["model"]["path"] == "data/tiny-base"


def test_smollm2_config_refuses_other_models_and_working_stays_refused():
    tiny = lift_study.CANDIDATES[0]
    with pytest.raises(ValueError, match="is not 'smollm2-135m-instruct'"):
        smollm2_candidate.smollm2_config(load_config("tiny"), tiny)
    working = next(c for c in lift_study.CANDIDATES if c.model == "tiny-with-working")
    with pytest.raises(ValueError, match="not runnable"):
        lift_study.candidate_config(load_config("tiny"), working)


def test_missing_weights_are_named_before_any_work(tmp_path):
    config = lift_study.candidate_config(load_config("tiny"), SMOLLM2)
    config = config.replaced(model={"path": str(tmp_path / "no-such-folder")})
    with pytest.raises(FileNotFoundError, match="smollm2.load"):
        smollm2_candidate.prepare_folder(tmp_path / "run", config)
    assert not (tmp_path / "run").exists()


def _rows(rewards, seed_base=0):
    return [
        [f"p{i}", k, seed_base + 10 * i + k, r]
        for i, draws in enumerate(rewards)
        for k, r in enumerate(draws)
    ]


def _scored(validation, test):
    return {
        "validation_sample": _rows(validation, 1000),
        "test_sample": _rows(test),
        "test_greedy": _rows([[t[0]] for t in test]),
    }


def _smollm2_result(warm, validation, test):
    return {
        "candidate": lift_study.asdict(SMOLLM2),
        "warm_start": warm,
        "train_seconds": 1.0,
        "history": [{"mean_reward": 0.25}, {"mean_reward": 0.75}],
        **_scored(validation, test),
    }


def test_own_warm_start_pairing_and_record(tmp_path):
    # its own warm start solves half of the validation draws: the candidate at 1.0 gains
    # +0.5 against it, whatever the tiny warm start did
    warm = _scored([[1, 0]] * 40, [[0, 0]] * 40)
    result = _smollm2_result(warm, [[1, 1]] * 40, [[0, 1]] * 40)
    row = lift_study.summarise_own_warm_start(result)["candidates"][0]
    assert row["paired"]["validation_sample"]["difference"] == pytest.approx(0.5)
    assert row["learns"] is True and row["test_per_draw"] == 0.5
    assert (row["training_reward_first_fifth"], row["training_reward_last_fifth"]) == (0.25, 0.75)
    flat = lift_study.summarise_own_warm_start(_smollm2_result(warm, [[1, 0]] * 40, [[0, 0]] * 40))
    assert flat["candidates"][0]["learns"] is False
    runs, dest = tmp_path / "lift", tmp_path / "recorded"
    files.save_json(runs / SMOLLM2.name / "result.json", result)
    path = lift_study.export_own_warm_start(runs, dest=dest)
    assert path == dest / "smollm2.json"
    assert files.read_json(path)["summaries"][0]["candidates"][0]["name"] == SMOLLM2.name
    with pytest.raises(ValueError, match="no finished"):
        lift_study.export_own_warm_start(tmp_path / "empty", dest=dest)


def _micro_llama_folder(folder, tokenizer):
    """A saved micro Llama on the tiny tokenizer, shaped like lab1_model's FP32 folder."""
    from verifiable_grpo.core import model_sources

    config = load_config("smoke").replaced(
        model={"source": "random", "architecture": "LlamaForCausalLM"}
    )
    model = model_sources.build_random_model(config, tokenizer)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    files.save_json(folder / "source.json", {"gguf_file": "stand-in"})
    return sum(p.numel() for p in model.parameters())


def test_warm_start_then_grpo_then_scores_on_a_micro_llama(
    tmp_path, monkeypatch, tokenizer, dataset_dir, learning_view_dir, one_thread
):
    """The whole candidate path (warm start interrupt + resume, scoring, GRPO, scoring) on
    a micro Llama stand-in with a few problems: each stage hands the next what it needs."""
    import shutil
    from dataclasses import replace

    from verifiable_grpo.part1 import sweep

    folder = tmp_path / "weights"
    count = _micro_llama_folder(folder, tokenizer)
    monkeypatch.setattr(
        smollm2_candidate,
        "SMOLLM2_MODEL",
        {
            **smollm2_candidate.SMOLLM2_MODEL,
            "path": str(folder),
            "attn_implementation": "eager",
            "expected_unique_parameters": count,
            "eos_token_id": None,
        },
    )
    monkeypatch.setattr(
        smollm2_candidate,
        "WARM_START",
        {**smollm2_candidate.WARM_START, "examples": 8, "batch_size": 4, "validation_examples": 4},
    )
    monkeypatch.setattr(
        sweep,
        "_validation_pages",
        lambda learning: list(
            enumerate(smollm2_candidate.data.read_examples(learning, "validation"))
        )[:3],
    )
    base = load_config("tiny").replaced(
        evaluation={"problems": 3, "draws": 2},
        tokens={"max_response": 12, "max_total": 268},  # short answers: a quick test
    )
    candidate = replace(SMOLLM2, iterations=2)
    run = tmp_path / "lift" / SMOLLM2.name  # the session's dataset, not a new one
    shutil.copytree(dataset_dir, run / "data")
    shutil.copytree(learning_view_dir, run / "learning-data")
    result = lift_study.run_candidate(base, candidate, tmp_path / "lift")
    warm = result["warm_start"]
    assert len(warm["validation_sample"]) == len(result["validation_sample"]) == 3 * 2
    assert len(result["test_greedy"]) == 3 and len(result["test_sample"]) == 3 * 2
    assert [h["iteration"] for h in result["history"]] == [0, 1]
    assert result["final_model_digest"] != warm["model_digest"]  # GRPO changed the policy
    assert result["config_grpo"]["group_size"] == 4
    # a run still going is read from its evidence with the trainer's own formulas
    so_far = smollm2_candidate.history_so_far(run)
    assert len(so_far) == len(result["history"])
    for mine, trainer in zip(so_far, result["history"]):
        assert mine == pytest.approx({k: trainer[k] for k in mine}, rel=1e-12)
    partial = smollm2_candidate.partial_record(run, candidate)
    assert partial["finished"] is False and partial["warm_start_training"]["updates"] == 4
    again = lift_study.run_candidate(base, candidate, tmp_path / "lift")  # finished: reused
    assert again == files.read_json(tmp_path / "lift" / SMOLLM2.name / "result.json")


def test_curves_of_two_candidates_share_panels_and_keep_their_lengths():
    from verifiable_grpo.book import learning_plots

    def result(name, rewards):
        return {
            "candidate": {"name": name},
            "history": [
                {"mean_reward": r, "mean_exact_kl": r / 10, "mean_entropy": 1 - r} for r in rewards
            ],
        }

    figure = learning_plots.plot_lift_curves(
        [result("tiny", [0.1, 0.2, 0.3]), result("smollm2", [0.0, 0.5])], window=2
    )
    axes = figure.axes
    assert len(axes) == len(learning_plots.CURVES)
    # per candidate: the raw line and its moving average, each as long as its history
    assert [len(line.get_xdata()) for line in axes[0].get_lines()] == [3, 3, 2, 2]
    assert list(axes[0].get_lines()[3].get_ydata()) == [0.0, 0.25]
    assert [t.get_text() for t in axes[0].get_legend().get_texts()] == ["tiny", "smollm2"]
