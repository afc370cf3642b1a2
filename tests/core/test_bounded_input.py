"""Input that could hang or flood the process is refused in one line before it is used: a
YAML alias bomb, a 50 MB file, deep nesting and NUL bytes, in a profile, a lab's settings,
a TRL run configuration and a JSON record; a huge value is quoted cut short."""

from __future__ import annotations

import json

import pytest

from verifiable_grpo import cli
from verifiable_grpo.core import files
from verifiable_grpo.core.config import ConfigError, read_yaml


def _alias_bomb() -> str:
    """Nine levels of nine references each: 9**9 (387 million) strings once expanded."""
    lines = ['l0: &l0 ["x","x","x","x","x","x","x","x","x"]']
    for level in range(1, 10):
        refs = ",".join([f"*l{level - 1}"] * 9)
        lines.append(f"l{level}: &l{level} [{refs}]")
    return "\n".join(lines) + "\n"


def _write(kind: str, folder, suffix: str):
    path = folder / f"{kind}{suffix}"
    if kind == "bomb":
        path.write_text(_alias_bomb())
    elif kind == "huge":  # 50 MB of NUL bytes, sparse: written in no time
        with open(path, "wb") as handle:
            handle.truncate(50 << 20)
    elif kind == "deep":
        path.write_text("a: " + "[" * 100_000 + "]" * 100_000 + "\n")
    else:  # NUL bytes in an otherwise sensible file
        path.write_bytes(b"seed: 1\n\x00\x00\x00\ngrpo: {}\n")
    return path


SAID = {
    "bomb": "aliases (*l0) are refused",
    "huge": "52,428,800 bytes, more than",
    "deep": "nested deeper than",
    "nul": "not valid YAML",
}


@pytest.mark.parametrize("kind", list(SAID))
def test_a_hostile_settings_file_is_one_line(kind, tmp_path):
    path = _write(kind, tmp_path, ".yaml")
    with pytest.raises(ConfigError) as refused:
        read_yaml(path)
    assert len(refused.value.problems) == 1 and SAID[kind] in refused.value.problems[0]


def _one_line(argv, capsys) -> str:
    with pytest.raises(SystemExit) as stopped:
        assert cli.main(argv) == 2  # a command that reports and returns 2 also counts
        raise SystemExit(2)
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    return err


@pytest.mark.parametrize("kind", list(SAID))
def test_every_reader_of_settings_refuses_it_in_one_line(kind, tmp_path, capsys):
    path = str(_write(kind, tmp_path, ".yaml"))
    out = str(tmp_path / "out")
    for argv in (
        ["config", "--config", path],
        ["lab", "reward-model", "--settings", path, "--out", out],
        ["family", "run", "--backend", "trl", "--config", path, "--arm", "grpo", "--seed", "11"],
    ):
        assert SAID[kind] in _one_line(
            [*argv, "--out", out] if argv[0] == "family" else argv, capsys
        )
    assert not (tmp_path / "out").exists()


JSON_SAID = {"huge": "more than the 33,554,432", "deep": "nested deeper than", "nul": "damaged"}


@pytest.mark.parametrize("kind", list(JSON_SAID))
def test_a_hostile_json_record_is_one_line(kind, tmp_path):
    path = tmp_path / f"{kind}.json"
    if kind == "deep":
        path.write_text("[" * 100_000 + "]" * 100_000)
    elif kind == "huge":
        with open(path, "wb") as handle:
            handle.truncate(50 << 20)
    else:
        path.write_bytes(b'{"sha256": "ab\x00\x00"}')
    with pytest.raises(files.DamagedFileError) as refused:
        files.read_json(path)
    assert "\n" not in str(refused.value) and JSON_SAID[kind] in str(refused.value)


def test_nesting_within_the_bound_still_reads(tmp_path):
    path = tmp_path / "nested.json"
    value = 1
    for _ in range(files.MAX_DEPTH - 1):
        value = [value]
    path.write_text(json.dumps(value))
    assert files.read_json(path) == value


def test_a_huge_value_is_quoted_cut_short(tmp_path, capsys):
    profile = tmp_path / "long.yaml"
    profile.write_text(f"extends: smoke\nseed: {'x' * 200_000}\n")
    err = _one_line(["config", "--config", str(profile)], capsys)
    assert "seed: must be an integer" in err and "characters)" in err and len(err) < 1000
