"""`python -m verifiable_grpo family ...`: the committed lock verifies, status counts the
80 pre-registered runs, and refusals exit 2 with one line naming the fix."""

from __future__ import annotations

from verifiable_grpo import cli


def test_the_committed_lock_matches_the_code(capsys):
    assert cli.main(["family", "lock", "--check"]) == 0
    assert "matches the code, the profile and the warm start" in capsys.readouterr().out


def test_status_lists_every_preregistered_run(tmp_path, capsys):
    assert cli.main(["family", "status", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.strip().endswith("0 finished, 0 in flight, 80 not started")
    assert "two_updates  aero    seed 131: not started" in out


def test_refusals_exit_2_naming_the_fix(tmp_path, capsys):
    assert cli.main(["family", "lock"]) == 2
    assert "never rewritten" in capsys.readouterr().err
    assert (
        cli.main(
            [
                "family",
                "run",
                "--arm",
                "grop",
                "--seed",
                "11",
                "--regime",
                "on_policy",
                "--out",
                str(tmp_path),
            ]
        )
        == 2
    )
    assert "did you mean 'grpo'" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()
