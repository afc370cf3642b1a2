"""The objectives' runs on the fixed prompts: declared names, configs, the paired
comparison by hand, the export, and refusals on the command line."""

from __future__ import annotations

import pytest

from verifiable_grpo.cli import main
from verifiable_grpo.core import files
from verifiable_grpo.core.config import load_config
from verifiable_grpo.part1 import fixed_prompt_objectives as fpo
from verifiable_grpo.training import objectives


def test_every_declared_run_is_a_registry_entry_that_part1_can_train():
    assert fpo.check_names(fpo.OBJECTIVES_RUN) == list(fpo.OBJECTIVES_RUN)
    assert set(fpo.OBJECTIVES_RUN) <= set(objectives.OBJECTIVES)
    assert fpo.SETTING.iterations == 60 and fpo.SETTING.validation_problems == 0
    base = load_config("tiny")
    config = fpo.mismatch_config(base, "grpo_mis")
    cfg = config
    assert (cfg.grpo.objective, cfg.sampling.precision) == ("grpo_mis", "bfloat16")
    assert "objective" not in base["grpo"] and "precision" not in base["sampling"]
    assert "precision" not in fpo.fixed_prompts.probe_config(config)["sampling"]


def _result(after, ids=("a", "b"), draws=4):
    return {
        "setting": {"draws": draws},
        "prompts": [{"document_id": i, "before": 1, "after": a} for i, a in zip(ids, after)],
        "history": [{"mean_reward": 0.5, "mean_exact_kl": 0.01, "mean_entropy": 0.2}] * 5,
    }


def test_comparison_pairs_prompts_with_the_grpo_run():
    grpo = _result([2, 2])
    rows = fpo.comparison({"x": _result([4, 2]), "y": _result([2, 0])}, grpo, resamples=200)
    assert [r["objective"] for r in rows] == ["grpo (part1)", "x", "y"]
    assert rows[0]["difference"] == 0.0 and rows[0]["difference_interval"] == (0.0, 0.0)
    assert rows[1]["after"] == 6 / 8 and rows[1]["difference"] == 0.25
    low, high = rows[1]["difference_interval"]
    assert 0.0 <= low <= 0.25 <= high <= 0.5  # prompt differences are 0.5 and 0
    assert rows[2]["difference"] == -0.25 and rows[2]["prompts_improved"] == 1
    assert rows[1]["after_interval"][0] < 6 / 8 < rows[1]["after_interval"][1]
    with pytest.raises(ValueError, match="other prompts"):
        fpo.comparison({"z": _result([1, 1], ids=("a", "c"))}, grpo)


def test_export_keeps_finished_runs_with_their_first_update_clip(tmp_path, monkeypatch):
    runs = tmp_path / "runs"
    history = [
        {
            "updates": [
                {"clip_low_fraction": 0.25, "clip_high_fraction": 0.5},
                {"clip_low_fraction": 1.0, "clip_high_fraction": 1.0},
            ]
        }
    ]
    files.save_json(
        runs / "cispo" / "train" / "learning" / "grpo-continuous.json", {"history": history}
    )
    files.save_json(runs / "cispo" / "result.json", _result([1, 1]))
    monkeypatch.setattr(fpo, "RECORDED", str(tmp_path / "objectives.json"))
    written = fpo.export(runs)
    saved = files.read_json(written)
    assert list(saved["runs"]) == ["cispo"]
    assert saved["runs"]["cispo"]["first_update_clip_fraction"] == [0.75]
    with pytest.raises(FileNotFoundError):
        fpo.export(tmp_path / "empty")


@pytest.mark.parametrize("name, message", [("dapo", "sampler"), ("cispoo", "did you mean")])
def test_the_command_refuses_an_objective_before_any_folder(tmp_path, capsys, name, message):
    out = tmp_path / "never"
    with pytest.raises(SystemExit) as stop:
        main(["learn", "objectives", "--objectives", name, "--out", str(out)])
    assert stop.value.code == 2
    error = capsys.readouterr().err
    assert "--objectives" in error and message in error and not out.exists()


def test_the_record_holds_every_declared_run_on_the_recorded_prompts():
    record = fpo.recorded()
    grpo = fpo.fixed_prompts.recorded()["ours"]
    mismatch = [fpo.run_name(n, True) for n in fpo.MISMATCH_RUNS]
    assert list(record["runs"]) == list(fpo.OBJECTIVES_RUN) + mismatch
    ids = [p["document_id"] for p in grpo["prompts"]]
    for name, result in record["runs"].items():
        assert result["setting"] == record["setting"]
        assert [p["document_id"] for p in result["prompts"]] == ids
        assert [p["before"] for p in result["prompts"]] == [p["before"] for p in grpo["prompts"]]
        assert result["config_grpo"]["objective"] == name.removeprefix("bfloat16-sampler-")
        assert len(result["history"]) == len(result["first_update_clip_fraction"]) == 60
    assert len(record["grpo_first_update_clip_fraction"]) == 60
    corrected = [h for n in mismatch[1:] for h in record["runs"][n]["history"]]
    assert corrected and all("behaviour_weight_max" in h for h in corrected)
