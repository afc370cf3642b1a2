"""Every command refuses bad flags and missing inputs in one line and exit 2, never with a
traceback: an unknown flag for each command, then each command with the input it needs
missing (a run folder, a warm start, a policy, a lock, a settings file, the SmolLM2 FP32
folder...). All of them are refused before any compute."""

from __future__ import annotations

import pytest

from shared_helpers import run_cli
from verifiable_grpo import cli
from verifiable_grpo.core import refusals
from verifiable_grpo.part1 import smollm2_candidate


def _refused(argv, capsys) -> str:
    try:
        code = cli.main(argv)
    except SystemExit as stopped:
        code = stopped.code
    err = capsys.readouterr().err
    assert code == 2, f"{argv}: exit {code}; {err}"
    assert "Traceback" not in err and err.strip().splitlines()[-1].count("error") >= 1
    return err


@pytest.mark.parametrize("command", [*cli.COMMANDS, "family run", "lab sft"])
def test_an_unknown_flag_is_refused(command, capsys):
    err = _refused([*command.split(), "--no-such-flag"], capsys)
    assert "--no-such-flag" in err or "required" in err or "invalid choice" in err


def _missing_inputs(tmp_path) -> list[tuple[list[str], str]]:
    """(argv, what the one line says) for each command with a needed input missing."""
    out, nothing = str(tmp_path / "out"), str(tmp_path / "nothing")
    smoke = ["--config", "smoke", "--out", out]
    family = ["--arm", "grpo", "--seed", "11", "--regime", "on_policy", "--out", out]
    return [
        (["warmstart", *smoke, "--mode", "resume"], "nothing to resume"),
        (["sft", *smoke, "--mode", "resume"], "nothing to resume"),
        (["grpo", *smoke, "--mode", "resume"], "run the warm start first"),
        (["verify-resume", *smoke, "--branch", "grpo"], "cannot verify resume"),
        (["evaluate", *smoke, "--policy", "grpo"], "train and resume the grpo branch first"),
        (["exercise", *smoke], "finish the main run"),
        (["report", "--config", "smoke", "--out", nothing], "no run folder"),
        (["plan", "--config", nothing + ".yaml"], "No config"),
        (["config", "--config", nothing + ".yaml"], "No config"),
        (["lab", "suite", "--policy", nothing, "--cache", nothing, "--out", out], "lab sft"),
        (["lab", "reward-model", "--settings", nothing + ".yaml", "--out", out], nothing),
        (["family", "run", "--lock", nothing, *family], "no treatment lock"),
        (["family", "run", "--backend", "trl", *family], "--backend trl needs --config"),
        (["family", "run", "--backend", "trl", "--config", nothing, *family], "no TRL run"),
        (["family", "lock", "--check", "--lock", nothing], "no treatment lock"),
        (["family", "export", "--out", nothing, "--to", out], "study.json"),
        (["sweep", *smoke, "--settings", "nope"], "unknown sweep settings"),
        (["learn", "lift", *smoke, "--candidates", "smollm2-4x4-lr1e-5"], "no SmolLM2 FP32"),
        (["learn", "fixed-prompts-trl", *smoke], "learn fixed-prompts"),
        (["learn", "objectives", *smoke, "--objectives", "nope"], "unknown objective"),
        (["bench", "pipeline", "--run", nothing], "not a finished run folder"),
        (["build-tiny-base", "--out", out, "--minutes", "-1"], "positive number"),
    ]


def test_each_command_with_a_missing_input_is_one_line(tmp_path, capsys, monkeypatch):
    # the SmolLM2 folder may exist on a developer's machine: point the candidate elsewhere
    monkeypatch.setitem(smollm2_candidate.SMOLLM2_MODEL, "path", str(tmp_path / "no-smollm2"))
    for argv, said in _missing_inputs(tmp_path):
        err = _refused(argv, capsys)
        assert said in err, f"{argv}: {err}"
        assert err.count("\n") == 1 or argv[-1] == "-1", f"{argv}: {err}"
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").rglob("*.pt*"))


def test_the_shell_entry_point_prints_one_line(tmp_path):
    done = run_cli(["report", "--config", "smoke", "--out", str(tmp_path / "none")], timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1 and "no run folder" in done.stderr


def test_the_traceback_is_there_when_asked_for(tmp_path, monkeypatch):
    monkeypatch.setenv(refusals.TRACEBACK_ENV, "1")
    with pytest.raises(FileNotFoundError, match="no run folder"):
        cli.main(["report", "--config", "smoke", "--out", str(tmp_path / "none")])
