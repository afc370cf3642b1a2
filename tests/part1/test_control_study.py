"""The declared control study: the declaration is checked whole before any compute, the
plan estimates each half from the recorded band run, the analysis reads the declared
contrasts, and (slow) both halves run end to end at smoke scale on the tiny model,
continuing from their folders."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from verifiable_grpo.core.config import ConfigError, resolve
from verifiable_grpo.part1 import band_study, control_declaration, control_study


def _declared() -> dict:
    return yaml.safe_load(resolve(control_declaration.DECLARATION).read_text())


def _write(tmp_path, mapping) -> str:
    path = tmp_path / "controls.yaml"
    path.write_text(yaml.safe_dump(mapping))
    return str(path)


def test_the_committed_declaration_is_the_band_setting_but_its_departures():
    declaration = control_declaration.load()
    assert declaration["budget"]["iterations"] == 34
    for key, value in declaration["setting"].items():
        assert band_study.SETTING[key] == value or key in declaration["departures"]
    names = [name for name, _, _ in control_declaration.runs(declaration)]
    assert sum(n.startswith("verifier-") for n in names) == 3 and len(names) == 7
    halves = [control_declaration.half_runs(declaration, h) for h in control_declaration.HALVES]
    assert sorted(n for half in halves for n, _, _ in half) == sorted(names)
    assert {arm for _, arm, _ in halves[0]} == set(declaration["arms"])  # one seed of each
    assert "verifier - random" in declaration["analysis"]["rule"]
    assert set(declaration["pass_at_k"]["policies"]) <= {"instruct", *names}


@pytest.mark.parametrize(
    "edit, named",
    [
        (lambda d: d["arms"].update(length="the answer's length"), "arms.length"),
        (lambda d: d["seeds"].update(random=[1, 1]), "seeds.random"),
        (lambda d: d["setting"].update(clip_epsilon=0.3), "setting.clip_epsilon"),
        (lambda d: d["departures"].update(group_size="why"), "departures.group_size"),
        (lambda d: d["halves"]["second"].remove("format-1235"), "format-1235 in neither"),
        (lambda d: d["halves"]["second"].append("verifier-1234"), "verifier-1234 listed twice"),
        (lambda d: d["halves"].update(third=["x"]), "halves: exactly first and second"),
        (lambda d: d.update(random_rate=2.0), "random_rate"),
        (lambda d: d["pass_at_k"].update(k_max=65), "pass_at_k.k_max"),
        (lambda d: d["pass_at_k"].update(policies=["format-99"]), "pass_at_k.policies"),
        (lambda d: d["scoring"].update(problems=201), "scoring.problems"),
        (lambda d: d.pop("analysis"), "analysis: missing"),
    ],
)
def test_a_bad_declaration_is_refused_naming_file_and_key(tmp_path, edit, named):
    mapping = _declared()
    edit(mapping)
    path = _write(tmp_path, mapping)
    with pytest.raises(ConfigError, match=named) as refused:
        control_declaration.load(path)
    assert path in str(refused.value)


def test_the_plan_estimates_each_half_from_the_recorded_run():
    declaration = control_declaration.load()
    plan = control_declaration.plan(declaration)
    rates = control_declaration.recorded_rates()
    assert [len(plan[p]) for p in control_declaration.PARTS] == [1 + 3, 4, 3]
    assert plan["controls-second"][0]["seconds"] == pytest.approx(
        34 * rates["iteration"] + 1800 * rates["trained_answer"]
    )
    text = control_declaration.plan_text(declaration)
    assert "learn controls-first: 4 steps" in text and "learn controls-pass-at-k: 3 steps" in text


def test_dry_run_prints_the_plan_and_writes_nothing(tmp_path, capsys):
    from verifiable_grpo.cli import main

    assert main(["learn", "controls", "--dry-run", "--out", str(tmp_path / "out")]) == 0
    assert "verifier-1236: 34 GRPO iterations" in capsys.readouterr().out
    assert not (tmp_path / "out").exists()


def _rows(success: dict[str, list[int]]) -> list[list]:
    return [[d, k, 100 + k, r, 1, "x"] for d, rs in success.items() for k, r in enumerate(rs)]


def test_the_analysis_averages_seeds_per_problem_and_reads_the_rule():
    declaration = control_declaration.load()
    declaration["analysis"] = {**declaration["analysis"], "resamples": 200}
    problems = [f"p{i}" for i in range(6)]
    instruct = _rows({p: [0, 0] for p in problems})
    verifier = _rows({p: [1, 1] for p in problems})
    half = _rows({p: [1, 0] for p in problems})
    run_rows = {
        n: (verifier if a == "verifier" else half)
        for n, a, _ in control_declaration.runs(declaration)
    }
    result = control_study.analyse(declaration, instruct, run_rows)
    contrasts = {c["contrast"]: c for c in result["contrasts"]}
    assert contrasts["verifier - instruct"]["difference"] == 1.0
    assert contrasts["verifier - random"]["difference"] == 0.5
    assert contrasts["verifier - format"]["above_zero"] and result["verifier_taught_it"]
    run_rows["format-1234"] = verifier  # a control as good as the verifier on one seed
    run_rows["format-1235"] = verifier
    again = control_study.analyse(declaration, instruct, run_rows)
    assert not again["verifier_taught_it"]
    format_arm = next(a for a in again["arms"] if a["arm"] == "format")
    assert (format_arm["min"], format_arm["max"]) == (1.0, 1.0)
    unpaired = dict(run_rows, **{"random-1234": _rows({p: [1] for p in problems})})
    with pytest.raises(ValueError, match="random-1234"):
        control_study.analyse(declaration, instruct, unpaired)


def test_the_chapter_table_says_not_run_until_the_study_ran():
    declaration = control_declaration.load()
    rows = control_study.controls_table(declaration, None)
    assert [r[0] for r in rows] == ["verifier", "random", "format"]
    assert all(r[-1] == control_study.NOT_RUN for r in rows)


SMOKE = {
    "arms": {"verifier": "v", "random": "r", "format": "f"},
    "seeds": {"verifier": [1], "random": [1], "format": [1]},
    "budget": {"iterations": 2, "checkpoint_every_iterations": 1},
    "halves": {"first": ["verifier-1"], "second": ["random-1", "format-1"]},
    "scoring": {"problems": 4, "draws": 2, "seed_base": 940000},
    "pass_at_k": {
        "problems": 3,
        "draws": 4,
        "seed_base": 960000,
        "k_max": 4,
        "policies": ["instruct", "verifier-1", "random-1"],
    },
}


def test_both_halves_run_at_smoke_scale_and_continue(tmp_path, smoke_config):
    mapping = _declared() | SMOKE
    mapping["analysis"] = {**mapping["analysis"], "resamples": 200}
    declaration = control_declaration.load(_write(tmp_path, mapping))
    out = tmp_path / "controls"
    result = control_study.run_controls(out, declaration, smoke_config, progress=False)
    assert set(result["runs"]) == {"verifier-1", "random-1", "format-1"}
    random_history = result["runs"]["random-1"]["history"]
    assert len(random_history) == 2 and random_history[0]["mean_verifier_reward"] is not None
    assert result["runs"]["verifier-1"]["history"][0]["mean_verifier_reward"] is None
    assert len(result["analysis"]["contrasts"]) == 3 + 2
    assert control_study.run_controls(out, declaration, smoke_config, progress=False) == result
    later = control_study.run_pass_at_k(tmp_path / "pk", [out], declaration, base=smoke_config)
    assert [r["k"] for r in later["curves"]["instruct"]] == [1, 2, 3, 4]
    assert set(later["gains"]) == {"verifier-1", "random-1"}
    values = [r["value"] for r in later["curves"]["random-1"]]
    assert values == sorted(values) and np.all(np.isfinite(values))


def test_two_halves_combine_into_the_declared_analysis(tmp_path, smoke_config):
    mapping = _declared() | SMOKE
    mapping["analysis"] = {**mapping["analysis"], "resamples": 200}
    declaration = control_declaration.load(_write(tmp_path, mapping))
    halves = {
        half: control_study.run_controls(
            tmp_path / f"controls-{half}", declaration, smoke_config, False, half
        )
        for half in control_declaration.HALVES
    }
    assert halves["second"]["instruct"] is None and "analysis" not in halves["first"]
    assert list(halves["first"]["runs"]) == ["verifier-1"]
    with pytest.raises(ValueError, match="second half has not run"):
        control_study.combine({"first": halves["first"]}, declaration)
    combined = control_study.combined_record(halves, declaration)
    assert sorted(combined["per_draw"]) == ["format-1", "random-1", "verifier-1"]
    assert len(combined["analysis"]["contrasts"]) == 3 + 2
    fifteen = combined["fifteen_minute_run"]
    assert fifteen["run"] == "verifier-1"
    run = halves["first"]["runs"]["verifier-1"]
    assert fifteen["wall_seconds"] >= run["score_seconds"] > 0
    verifier_gain = next(
        c for c in combined["analysis"]["contrasts"] if c["contrast"] == "verifier - instruct"
    )
    assert fifteen["gain"]["difference"] == pytest.approx(verifier_gain["difference"])
    folders = [tmp_path / f"controls-{h}" for h in control_declaration.HALVES]
    later = control_study.run_pass_at_k(tmp_path / "pk", folders, declaration, smoke_config)
    assert set(later["gains"]) == {"verifier-1", "random-1"}


def test_learn_controls_refuses_a_dirty_tree_before_any_compute(tmp_path, monkeypatch, capsys):
    from verifiable_grpo.cli import main
    from verifiable_grpo.core import preregistration
    from verifiable_grpo.part1 import smollm2_candidate

    monkeypatch.setattr(smollm2_candidate, "check_weights", lambda config: None)
    monkeypatch.setattr(preregistration, "tree_changes", lambda root=None: ["configs/x.yaml"])
    out = tmp_path / "out"
    with pytest.raises(SystemExit, match="2"):
        main(["learn", "controls", "--out", str(out)])
    assert "--exploratory" in capsys.readouterr().err
    assert not (out / "controls" / "started.json").exists()


def test_a_bad_declaration_on_the_command_line_exits_2(tmp_path, capsys):
    from verifiable_grpo.cli import main

    mapping = _declared()
    mapping["seeds"]["format"] = []
    path = _write(tmp_path, mapping)
    with pytest.raises(SystemExit, match="2"):
        main(["learn", "controls", "--dry-run", "--declaration", path])
    assert "seeds.format" in capsys.readouterr().err


def test_the_second_half_needs_the_first(tmp_path, monkeypatch, capsys):
    from verifiable_grpo.cli import main
    from verifiable_grpo.part1 import smollm2_candidate

    monkeypatch.setattr(smollm2_candidate, "check_weights", lambda config: None)
    out = tmp_path / "out"
    with pytest.raises(SystemExit, match="2"):
        main(["learn", "controls-pass-at-k", "--out", str(out)])
    assert "learn controls-first` and `controls-second` first" in capsys.readouterr().err
    assert not (out / "controls-pass-at-k").exists()


def test_the_chapter_can_draw_the_study_once_it_ran():
    from verifiable_grpo.book import taught_plots

    declaration = control_declaration.load()
    declaration["analysis"] = {**declaration["analysis"], "resamples": 200}
    problems = [f"p{i}" for i in range(6)]
    instruct = _rows({p: [0, 1] for p in problems})
    run_rows = {
        n: _rows({p: [1, seed % 2] for p in problems})
        for n, _, seed in control_declaration.runs(declaration)
    }
    analysis = control_study.analyse(declaration, instruct, run_rows)
    figure = taught_plots.plot_controls(analysis)
    points = [line for line in figure.axes[0].lines if line.get_marker() == "o"]
    assert sum(len(line.get_xdata()) for line in points) == len(run_rows)  # every seed a point
    curves = {"instruct": [{"k": k, "value": 0.1 * k, "low": 0.0, "high": 0.5} for k in (1, 2, 4)]}
    assert len(taught_plots.plot_pass_at_k_curves(curves).axes[0].lines) == 1
    table = control_study.controls_table(declaration, {"analysis": analysis})
    assert control_study.NOT_RUN not in table[0]
