"""`python -m verifiable_grpo family ...`: the committed lock verifies, status counts the
80 pre-registered runs, refusals exit 2 with one line naming the fix, and `family run`
skips a run finished under its lock."""

from __future__ import annotations

import pytest

from verifiable_grpo import cli
from verifiable_grpo.core import files
from verifiable_grpo.part2 import lock as lock_lib
from verifiable_grpo.part2 import study

LOCK = "configs/part2/lock.json"
TRL_SMOKE = "configs/part2/trl-smoke.yaml"


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


def _finished(out, lock_sha, arm="grpo", seed=11, regime="on_policy"):
    """A finished run's manifest (the fields the reports print), without training."""
    path = study.manifest_path(out, regime, arm, seed)
    path.parent.mkdir(parents=True)
    summary = {
        "heldout_greedy_all": 0.25,
        "heldout_greedy_id50": 0.3,
        "heldout_greedy_ood100": 0.2,
        "heldout_per_draw_all": 0.15,
        "mean_zero_variance_fraction": 0.5,
        "rollouts_generated": 480,
        "rollouts_discarded": 0,
        "seconds_per_step": 0.4,
    }
    manifest = {"arm": arm, "seed": seed, "regime": regime, "lock_sha256": lock_sha}
    files.save_json(path, {**manifest, "summary": summary})
    return path


RUN = ["family", "run", "--arm", "grpo", "--seed", "11", "--regime", "on_policy"]


@pytest.mark.parametrize("backend", [[], ["--backend", "trl", "--config", TRL_SMOKE]])
def test_family_run_skips_a_finished_run_and_keeps_it(tmp_path, capsys, backend):
    path = _finished(tmp_path, lock_lib.read_lock(LOCK)[1])
    before = path.read_bytes()
    assert cli.main([*RUN, *backend, "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "finished already" in out and "held-out greedy 0.250" in out
    assert path.read_bytes() == before


@pytest.mark.parametrize("backend", [[], ["--backend", "trl", "--config", TRL_SMOKE]])
def test_a_finished_run_of_another_lock_is_refused_in_one_line(tmp_path, capsys, backend):
    path = _finished(tmp_path, "0" * 64)
    before = path.read_bytes()
    assert cli.main([*RUN, *backend, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "another lock" in err and "new --out" in err
    assert path.read_bytes() == before


def test_a_study_on_a_dirty_tree_is_refused_before_its_folder_exists(tmp_path, capsys, monkeypatch):
    from verifiable_grpo.core import preregistration

    monkeypatch.setattr(preregistration, "tree_changes", lambda root=None: ["M src/x.py"])
    out = tmp_path / "new-study"
    assert cli.main(["family", "study", "--workers", "1", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--exploratory" in err and "src/x.py" in err
    assert not out.exists()
