"""Command-line edges refused in one line, exit 2, before any compute: an unreadable or
out-of-range profile, an --out that cannot be a run folder, a worker count below one, and
a study seed the lock does not hold (before the warm start's evaluation)."""

from __future__ import annotations

import pytest

from verifiable_grpo import cli
from verifiable_grpo.core.config import profile_settings
from verifiable_grpo.core.config_schema import validate


def _smoke(**changes) -> dict:
    raw = profile_settings("smoke")
    for path, value in changes.items():
        section, _, name = path.rpartition("__")
        (raw[section] if section else raw)[name] = value
    return raw


@pytest.mark.parametrize(
    "path, value, said",
    [
        ("grpo__iterations", 10**20, "grpo.iterations: must be a 64-bit integer"),
        ("seed", -1, "seed: must be in 0..4294967295"),
        ("seed", 2**32, "seed: must be in 0..4294967295"),
        ("data__seed", 10**29, "data.seed: must be a 64-bit integer"),
    ],
)
def test_out_of_range_integers_are_refused_by_the_profile_schema(path, value, said):
    assert validate(_smoke(), "smoke.yaml") == []
    problems = validate(_smoke(**{path: value}), "smoke.yaml")
    assert len(problems) == 1 and said in problems[0]


def _refused(argv, capsys) -> str:
    with pytest.raises(SystemExit) as stopped:
        cli.main(argv)
    assert stopped.value.code == 2
    return capsys.readouterr().err


def test_an_unreadable_profile_is_one_line(tmp_path, capsys):
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(bytes(range(256)))
    err = _refused(["run", "--config", str(binary), "--out", str(tmp_path / "o")], capsys)
    assert err.count("\n") == 1 and "not a UTF-8 text file" in err
    broken = tmp_path / "broken.yaml"
    broken.write_text("grpo: [1,\n")
    err = _refused(["run", "--config", str(broken), "--out", str(tmp_path / "o")], capsys)
    assert err.count("\n") == 1 and "not valid YAML" in err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    "command",
    [
        ["run", "--config", "smoke"],
        ["family", "run", "--arm", "grpo", "--seed", "11", "--regime", "on_policy"],
    ],
)
def test_an_out_that_cannot_be_a_folder_is_refused(command, tmp_path, capsys):
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    for out, said in ((a_file, "is a file, not a folder"), ("/proc/x", "cannot be written")):
        assert cli.main([*command, "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and said in err


@pytest.mark.parametrize("workers", ["0", "-1"])
def test_a_study_needs_a_worker(workers, capsys):
    err = _refused(["family", "study", "--workers", workers], capsys)
    assert f"--workers: must be a positive integer, got '{workers}'" in err


def test_an_unlocked_study_seed_is_refused_before_the_warm_start(tmp_path, capsys):
    out = tmp_path / "study"
    assert cli.main(["family", "study", "--seeds", "12", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "seed 12 is not pre-registered" in err
    assert not out.exists()  # no warm-start evaluation, not even the folder
