"""Every arm of the lock for 2 steps through TRL's GRPOTrainer on the tiny base with the
GSM8K-format items (configs/part2/trl-smoke.yaml), read back by the family analysis;
and a run stopped after step 1 and resumed equals the uninterrupted run."""

import hashlib

import pytest
from safetensors.torch import load_file

from verifiable_grpo import cli
from verifiable_grpo.core import files
from verifiable_grpo.part2 import analysis
from verifiable_grpo.part2 import lock as lock_lib
from verifiable_grpo.part2.trl import backend as trl_backend
from verifiable_grpo.part2.trl import trainer as backend_trainer

LOCK = "configs/part2/lock.json"
SMOKE = "configs/part2/trl-smoke.yaml"
SEED = 11
TRACE_KEYS = {"mode", "document_id", "draw", "correct", "completion_sha256"}


def _hash_reward(text, answer):
    """A stand-in reward with mixed values: the tiny base never writes a GSM8K answer,
    and dynamic sampling fails closed on constant rewards. The real reward is tested
    in test_gsm8k.py."""
    return float(hashlib.sha256(text.encode()).hexdigest()[0] in "01234567")


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    out = tmp_path_factory.mktemp("trl-study")
    lock, _ = lock_lib.read_lock(LOCK)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(backend_trainer.gsm8k, "reward", _hash_reward)
        base = trl_backend.base_heldout(LOCK, SMOKE, out)
        manifests = {
            arm: trl_backend.run_arm_trl(
                LOCK, SMOKE, out, lock_lib.LockedRun(arm, SEED, "on_policy")
            )
            for arm in lock["arms"]
        }
        resumed_out = tmp_path_factory.mktemp("trl-resumed")
        stopped = trl_backend.run_arm_trl(
            LOCK, SMOKE, resumed_out, lock_lib.LockedRun("dapo", SEED, "on_policy"), stop_after=1
        )
        resumed = trl_backend.run_arm_trl(
            LOCK, SMOKE, resumed_out, lock_lib.LockedRun("dapo", SEED, "on_policy")
        )
    return {
        "out": out,
        "base": base,
        "manifests": manifests,
        "stopped": stopped,
        "resumed": resumed,
        "resumed_out": resumed_out,
    }


def test_every_arm_writes_the_family_manifest(study):
    lock, sha = lock_lib.read_lock(LOCK)
    for arm, m in study["manifests"].items():
        assert (m["arm"], m["seed"], m["regime"], m["backend"]) == (arm, SEED, "on_policy", "trl")
        assert m["lock_sha256"] == sha
        assert m["config"]["trl_fields"] == lock["arms"][arm]["trl"]["config"]
        assert [t["step"] for t in m["telemetry"]] == [0, 1]
        for t in m["telemetry"]:
            assert t["gu"] == pytest.approx(1 - t["zero_variance_fraction"])
            assert len(t["loss"]) == 1 and t["loss"][0] is not None
        assert {k for row in m["heldout"]["trace"] for k in row} == TRACE_KEYS
        assert len(m["stack_fingerprint"]) == 64
        assert set(m["versions"]) >= {"torch", "transformers", "trl", "peft", "accelerate"}
        folder = study["out"] / "runs" / "on_policy" / f"{arm}-seed-{SEED}"
        assert (folder / "final" / "adapter_model.safetensors").is_file()
        for step in (1, 2):  # every checkpoint holds what an exact resume needs
            saved = folder / "checkpoints" / f"checkpoint-{step}"
            assert {
                "optimizer.pt",
                "scheduler.pt",
                "rng_state.pth",
                "trainer_state.json",
                backend_trainer.TELEMETRY_FILE,
            } <= {p.name for p in saved.iterdir()}
    dapo = study["manifests"]["dapo"]["telemetry"]
    assert all(t["zero_variance_fraction"] == 0.0 for t in dapo)  # only varied groups are trained
    aero = study["manifests"]["aero"]["telemetry"]
    assert all(len(r) <= 4 for t in aero for r in t["rewards"])


def test_family_analyse_reads_the_trl_study(study, capsys):
    lock, sha = lock_lib.read_lock(LOCK)
    runs = analysis.load_manifests(study["out"])
    assert sorted(r["arm"] for r in runs) == sorted(lock["arms"])
    result = analysis.analyse(lock, runs, lock_sha=sha)
    rows = {r["arm"]: r for r in result["regimes"]["on_policy"]["arms"]}
    for arm, m in study["manifests"].items():
        assert rows[arm]["seeds"] == 1
        assert rows[arm]["mean"] == m["summary"]["heldout_greedy_all"]
        assert rows[arm]["rollouts_generated"] == m["summary"]["rollouts_generated"]
    assert not result["regimes"]["on_policy"]["complete"]  # 7 seeds per arm not run
    assert cli.main(["family", "analyse", "--out", str(study["out"])]) == 0
    assert "regime on_policy" in capsys.readouterr().out
    written = files.read_json(study["out"] / "analysis.json")
    assert written["lock_sha256"] == sha
    assert written["warm_start"] == study["base"]["heldout"]["greedy"]["ALL"]  # the base, once
    assert written["warm_start"]["problems"] == 4


def test_resumed_run_equals_the_uninterrupted_run(study):
    assert study["stopped"] is None
    full, resumed = study["manifests"]["dapo"], study["resumed"]
    assert resumed["resumed_from_step"] == 1
    for key in (
        "completion_sha256",
        "rewards",
        "document_ids",
        "loss",
        "grad_norm",
        "learning_rate",
        "rollouts_generated",
    ):
        assert [t[key] for t in resumed["telemetry"]] == [t[key] for t in full["telemetry"]]
    assert resumed["heldout"]["trace"] == full["heldout"]["trace"]
    weights = [
        load_file(out / "runs/on_policy/dapo-seed-11/final/adapter_model.safetensors")
        for out in (study["out"], study["resumed_out"])
    ]
    assert weights[0].keys() == weights[1].keys()
    assert all(weights[0][k].equal(weights[1][k]) for k in weights[0])


def test_finished_run_and_foreign_checkpoint_are_refused(study, tmp_path):
    with pytest.raises(FileExistsError, match="evidence is never overwritten"):
        trl_backend.run_arm_trl(
            LOCK, SMOKE, study["out"], lock_lib.LockedRun("grpo", SEED, "on_policy")
        )
    folder = study["out"] / "runs" / "on_policy" / f"grpo-seed-{SEED}"
    identity = files.read_json(
        folder / "checkpoints" / "checkpoint-2" / backend_trainer.TELEMETRY_FILE
    )["identity"]
    with pytest.raises(ValueError, match="belongs to another run"):
        trl_backend._newest_checkpoint(folder, {**identity, "arm": "gspo"})


KILLED_RUN = """
import hashlib, sys
from verifiable_grpo.part2.lock import LockedRun
from verifiable_grpo.part2.trl import backend as trl_backend
from verifiable_grpo.part2.trl import trainer as backend_trainer
backend_trainer.gsm8k.reward = lambda text, answer: float(
    hashlib.sha256(text.encode()).hexdigest()[0] in "01234567"
)
trl_backend.run_arm_trl(
    sys.argv[1], sys.argv[2], sys.argv[3], LockedRun("grpo", 11, "on_policy")
)
"""


def test_a_run_killed_before_its_seal_continues_to_the_same_adapter(study, tmp_path):
    """kill -9 after TRL wrote checkpoint-2 and its telemetry, before the seal: the rerun
    sets that folder aside, resumes from checkpoint-1 and ends where the uninterrupted run
    ended (every logged value, every completion and every adapter tensor)."""
    import os
    import subprocess
    import sys

    out = tmp_path / "killed"
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_RUN, LOCK, SMOKE, str(out)],
        env={**os.environ, "VERIFIABLE_GRPO_FAULT": "trl-before-seal#2", "TQDM_DISABLE": "1"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert killed.returncode == -9, killed.stderr[-2000:]
    run = out / "runs/on_policy/grpo-seed-11"
    assert not (run / "run_manifest.json").exists()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(backend_trainer.gsm8k, "reward", _hash_reward)
        resumed = trl_backend.run_arm_trl(
            LOCK, SMOKE, out, lock_lib.LockedRun("grpo", SEED, "on_policy")
        )
    assert resumed["resumed_from_step"] == 1
    assert list((run / "aborted").glob("checkpoint-2-*/checkpoints/checkpoint-2/optimizer.pt"))
    full = study["manifests"]["grpo"]
    for key in ("completion_sha256", "rewards", "loss", "grad_norm", "learning_rate"):
        assert [t[key] for t in resumed["telemetry"]] == [t[key] for t in full["telemetry"]]
    assert resumed["heldout"]["trace"] == full["heldout"]["trace"]
    weights = [
        load_file(folder / "runs/on_policy/grpo-seed-11/final/adapter_model.safetensors")
        for folder in (study["out"], out)
    ]
    assert weights[0].keys() == weights[1].keys()
    assert all(weights[0][k].equal(weights[1][k]) for k in weights[0])
