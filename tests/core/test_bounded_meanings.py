"""Every input bounded, every meaning said (issue 44's attacks on bounds and silent
meanings): a negative seed, zero steps, an empty list, a held-out count past the test
file, absurd budgets and damaged inputs are refused in one line before any compute,
naming the key, or the file and the line."""

from __future__ import annotations

import pytest
import yaml

from verifiable_grpo import cli
from verifiable_grpo.core import files
from verifiable_grpo.core.config import ConfigError, load_config, repo_root

LOCK = "configs/part2/lock.json"


def _refused(argv, capsys) -> str:
    try:
        code = cli.main(argv)
    except SystemExit as stopped:
        code = stopped.code
    err = capsys.readouterr().err
    assert code == 2, f"{argv}: exit {code}; {err}"
    assert "Traceback" not in err and err.strip().splitlines()[-1].startswith(("error", "python"))
    return err


@pytest.mark.parametrize(
    "argv, said",
    [
        (["data", "--out", "{tmp}/d", "--seed", "-5"], "--seed"),
        (["family", "run", "--arm", "grpo", "--seed", "11", "--stop-after", "0"], "--stop-after"),
        (["family", "run", "--arm", "grpo", "--seed", "11", "--stop-after", "-3"], "--stop-after"),
        (["family", "study", "--seeds"], "--seeds"),
        (["family", "status", "--arms"], "--arms"),
        (["learn", "objectives", "--objectives"], "--objectives"),
        (["sweep", "--settings"], "--settings"),
        (["family", "study", "--backend", "trl", "--retries", "-1"], "--retries"),
        (["lab", "sft", "--threads", "100000"], "--threads"),
        (["lab", "lora", "--rank", "1000000000"], "--rank"),
        (["lab", "sft", "--steps", "1000000000"], "--steps"),
        (["data", "--out", "{tmp}/" + "x" * 300], "choose a shorter folder"),
        (["family", "status", "--lock", LOCK, "--out", "{tmp}/nowhere"], "no study folder"),
    ],
)
def test_silent_meanings_are_refused(argv, said, tmp_path, capsys):
    assert said in _refused([a.format(tmp=tmp_path) for a in argv], capsys)
    assert list(tmp_path.iterdir()) == []


def _profile(tmp_path, **sections) -> str:
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump({"extends": "tiny", "profile": "p", **sections}))
    return str(path)


@pytest.mark.parametrize(
    "sections, said",
    [
        ({"grpo": {"iterations": 2**62}}, "grpo.iterations: must be <= 100,000"),
        ({"grpo": {"group_size": 10**9}}, "grpo.group_size: must be <= 1,024"),
        ({"grpo": {"prompts_per_iteration": 1000, "group_size": 1000}}, "responses per update"),
        ({"threads": {"stages": 100000}}, "threads.stages"),
        ({"tokens": {"max_response": 10**7}}, "tokens.max_response"),
        ({"evaluation": {"draws": 10**9}}, "evaluation.draws"),
    ],
)
def test_budgets_past_the_machine_are_refused_at_load(sections, said, tmp_path):
    with pytest.raises(ConfigError) as refused:
        load_config(_profile(tmp_path, **sections))
    assert said in "\n".join(refused.value.problems)


def test_plan_refuses_a_budget_of_more_than_a_year(tmp_path, capsys):
    huge = {"grpo": {"iterations": 100_000, "prompts_per_iteration": 64, "group_size": 1024}}
    assert "more than a year" in _refused(["plan", "--config", _profile(tmp_path, **huge)], capsys)


def _trl_config(tmp_path, edit) -> str:
    config = yaml.safe_load((repo_root() / "configs/part2/trl-smoke.yaml").read_text())
    edit(config)
    path = tmp_path / "trl.yaml"
    path.write_text(yaml.safe_dump(config))
    return str(path)


@pytest.mark.parametrize(
    "edit, said",
    [
        (lambda c: c["budget"].update(group_size=10**9), "budget.group_size"),
        (lambda c: c["model"]["lora"].update(r=10**9), "model.lora.r"),
        (lambda c: c["heldout"].update(problems=10**9), "heldout.problems"),
        (lambda c: c["heldout"].update(problems=9), "holds 8"),
    ],
)
def test_trl_budgets_are_bounded_before_a_model_loads(edit, said, tmp_path):
    from verifiable_grpo.part2.trl import run_config

    with pytest.raises(ConfigError) as refused:
        run_config.load_run_config(_trl_config(tmp_path, edit))
    assert said in refused.value.problems[0] and "\n" not in refused.value.problems[0]


@pytest.mark.parametrize(
    "line, said",
    [
        ("[1, 2]", "a GSM8K item is a JSON object, got list"),
        ('{"question": "q", "answer": 72}', "'answer' must be a string"),
        ('{"question": "q", "answer": "no marker"}', "no integer after '####'"),
        ("{not json", "not valid JSON"),
    ],
)
def test_a_bad_data_line_names_its_file_and_line(line, said, tmp_path):
    from verifiable_grpo.part2 import gsm8k

    path = tmp_path / "items.jsonl"
    path.write_text('{"question": "q", "answer": "#### 1"}\n' + line + "\n")
    with pytest.raises(ValueError, match=said) as refused:
        gsm8k.read_items(path)
    assert f"{path}:2:" in str(refused.value)


@pytest.mark.parametrize("text", ["[]", "null", '"started"', "3"])
def test_a_record_that_is_not_an_object_is_refused_in_one_line(text, tmp_path):
    from verifiable_grpo.core import preregistration

    (tmp_path / preregistration.STAMP_FILE).write_text(text)
    with pytest.raises(ConfigError, match="not a start stamp") as refused:
        preregistration.stamp_folder(tmp_path, exploratory=True)
    assert str(tmp_path) in str(refused.value) and "\n" not in str(refused.value)


def test_a_truncated_base_model_is_one_line(tmp_path):
    import shutil

    from verifiable_grpo.part2.trl import backend

    base = tmp_path / "base"
    shutil.copytree(repo_root() / "data/tiny-base", base)
    weights = base / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])
    config = {"model": {"name_or_path": str(base), "revision": None, "dtype": "float32"}}
    # with its BUILD.json the digest check refuses it; without one, the load does
    with pytest.raises(files.DamagedFileError, match="SHA-256 differs") as refused:
        backend._model_and_tokenizer(config)
    assert "\n" not in str(refused.value)
    (base / "BUILD.json").unlink()
    with pytest.raises(files.DamagedFileError, match="cannot be loaded") as refused:
        backend._model_and_tokenizer(config)
    assert "\n" not in str(refused.value)


def test_run_refuses_an_update_that_cannot_fit_before_the_warm_start(tmp_path, monkeypatch, capsys):
    from verifiable_grpo.part1 import run_plan

    monkeypatch.setattr(run_plan, "machine_memory", lambda config: ("this machine", 1 << 20))
    out = tmp_path / "run"
    err = _refused(["run", "--config", "smoke", "--out", str(out)], capsys)
    assert "one GRPO update holds at least" in err
    assert not out.exists()
