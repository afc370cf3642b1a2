"""Every synthetic lab's settings are checked against a typed schema before any compute:
each bad value the issue found (negative counts, a string for a number, an unreadable
file, seeds outside numpy's range, an unknown key) exits 2 with one line naming the file
and the key, and leaves no run folder; OUT itself is checked and held before compute."""

from __future__ import annotations

import dataclasses

import pytest

from verifiable_grpo import cli
from verifiable_grpo.core import files, runlock
from verifiable_grpo.core.config import ConfigError, canonical_json, repo_root, sha256_bytes
from verifiable_grpo.core.settings_schema import from_yaml
from verifiable_grpo.part3 import labs

# (lab, YAML text, what the one line says)
BAD = [
    ("dpo", "steps: -5\n", "steps: must be >= 1, got -5"),
    ("expert-iteration", "iterations: -1\n", "iterations: must be >= 1, got -1"),
    ("expert-iteration", "expert_rounds: -2\n", "expert_rounds: must be >= 1, got -2"),
    ("expert-iteration", "group_size: eight\n", "group_size: must be an integer, got 'eight'"),
    ("judge", "length_weight: heavy\n", "length_weight: must be a number, got 'heavy'"),
    ("judge", "pairs: [400\n", "not valid YAML at line 2"),
    ("judge", "seed: -1\n", "seed: must be in 0..4294967295"),
    ("judge", "seed: 4294967296\n", "seed: must be in 0..4294967295"),
    ("judge", "seed: 99999999999999999999999999999\n", "seed: must be a 64-bit integer"),
    ("judge", "seeds: 3\n", "seeds: unknown key; did you mean seed?"),
    ("reward-model", "temperatures: hot\n", "temperatures: must be a list of numbers"),
    ("reward-model", "trials: -1\n", "trials: must be >= 1, got -1"),
    ("reward-model", "softmax_n: -3\n", "softmax_n: must be one of 1, 4, 16"),
    ("fault-tree", "pairs: 3\n", "pairs: unknown key"),
]


@pytest.mark.parametrize("name, text, said", BAD, ids=[f"{b[0]}-{b[1].strip()}" for b in BAD])
def test_a_bad_setting_is_refused_in_one_line_before_compute(name, text, said, tmp_path, capsys):
    settings = tmp_path / "settings.yaml"
    settings.write_text(text)
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as stopped:
        cli.main(["lab", name, "--settings", str(settings), "--out", str(out)])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and said in err and "settings.yaml" in err
    assert not out.exists()


def test_a_binary_settings_file_is_refused_in_one_line(tmp_path, capsys):
    settings = tmp_path / "settings.yaml"
    settings.write_bytes(bytes(range(256)))
    with pytest.raises(SystemExit):
        cli.main(["lab", "judge", "--settings", str(settings), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a UTF-8 text file" in err


@pytest.mark.parametrize("name", list(labs.SETTINGS_LABS))
def test_the_committed_settings_pass_unchanged_and_keep_their_recorded_hash(name):
    settings, path = labs.load_settings(name)
    assert settings == (files.read_json(repo_root() / labs.RECORDED / f"{name}.json")["settings"])
    recorded = labs.recorded(name)["provenance"]["config_sha256"]
    assert sha256_bytes(canonical_json(settings)) == recorded
    # the file's keys are fields of the lab's one settings class, and the object run_lab
    # gets holds the file's values
    _, built, _ = labs.checked_settings(name)
    fields = {f.name for f in dataclasses.fields(labs.LABS[name].settings)}
    assert set(settings) <= fields
    for key, value in settings.items():
        assert getattr(built, key) == (tuple(value) if isinstance(value, list) else value), key


def test_a_lab_checks_its_folder_before_compute(tmp_path, capsys):
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    for out, said in (
        (a_file, "is a file, not a folder"),
        ("/proc/x", "cannot be written"),
        ("/sys/x", "cannot be written"),
    ):
        assert cli.main(["lab", "judge", "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and said in err
    with pytest.raises(SystemExit) as stopped:
        cli.main(["lab", "judge", "--threads", "-3"])
    assert stopped.value.code == 2
    assert "--threads: must be a positive integer, got '-3'" in capsys.readouterr().err


def test_a_second_lab_on_a_held_folder_is_refused_at_once(tmp_path, capsys):
    with runlock.locked(tmp_path, "the first lab dpo"):
        assert cli.main(["lab", "dpo", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "in use by another process" in err
    assert not (tmp_path / "metrics.json").exists()


def check(name, raw, source):
    return from_yaml(labs.LABS[name].settings, raw, source)


def test_check_returns_the_settings_as_given_and_the_object_with_every_default():
    given, settings = check("judge", {"pairs": 50, "length_weight": 1}, "x")
    assert given == {"pairs": 50, "length_weight": 1}
    assert settings == labs.LABS["judge"].settings(pairs=50, length_weight=1.0)
    assert check("fault-tree", None, "x")[0] == {}
    with pytest.raises(ConfigError, match="x: betas: must be non-empty"):
        check("dpo", {"betas": []}, "x")
