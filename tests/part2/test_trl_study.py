"""`family study --backend trl --devices`: runs scheduled over device slots. Unit checks of
the slots and the shard split, the dry run, and one study on two simulated devices (CPU)
in which one worker is killed with SIGKILL after its first checkpoint: the study finishes,
and both manifests equal the same runs made one after another in one process."""

import argparse
import os
import signal
import sys
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from verifiable_grpo import cli
from verifiable_grpo.core import files, interrupts
from verifiable_grpo.core.config import ConfigError
from verifiable_grpo.part2 import gsm8k
from verifiable_grpo.part2 import lock as lock_lib
from verifiable_grpo.part2.trl import backend as trl_backend
from verifiable_grpo.part2.trl import run_config
from verifiable_grpo.part2.trl import study as trl_study

LOCK = "configs/part2/lock.json"
SMOKE = "configs/part2/trl-smoke.yaml"
CARD = "configs/part2/card-qwen3-8b-gsm8k.yaml"
# a study on the smoke configuration; tests run on a working tree, so labelled exploratory
SMOKE_STUDY = ["family", "study", "--exploratory", "--backend", "trl", "--config", SMOKE]
WORKER = Path(__file__).with_name("trl_worker.py")
RUNS = [("on_policy", "grpo", 11), ("on_policy", "drgrpo", 11)]
COMPARED = ("completion_sha256", "rewards", "document_ids", "loss", "grad_norm", "learning_rate")


def test_slots_are_devices_or_declared_groups():
    smoke = run_config.load_run_config(SMOKE)
    slots = trl_study.parse_slots("0,1,2,3", smoke, 1)
    assert [s.devices for s in slots] == [["0"], ["1"], ["2"], ["3"]]
    pairs = trl_study.parse_slots("0+1,2+3", smoke, 2)
    assert [s.name for s in pairs] == ["0+1", "2+3"]
    with pytest.raises(ConfigError, match="group 0\\+1 has 2 device"):
        trl_study.parse_slots("0+1,2", smoke, 1)
    with pytest.raises(ConfigError, match="appears twice"):
        trl_study.parse_slots("0,0", smoke, 1)
    env = trl_study.worker_env(pairs[1], 2, smoke)
    assert env["CUDA_VISIBLE_DEVICES"] == "2,3"
    assert (
        env["VERIFIABLE_GRPO_MAIN_PORT"]
        != trl_study.worker_env(pairs[0], 2, smoke)["VERIFIABLE_GRPO_MAIN_PORT"]
    )


def test_shard_spec_is_checked():
    assert trl_study.parse_shard("1/3") == (1, 3)
    for bad in ("3/3", "a/b", "1"):
        with pytest.raises(ConfigError, match="--shard"):
            trl_study.parse_shard(bad)


def test_dry_run_of_the_card_on_eight_gpus_needs_no_gpu(tmp_path, capsys):
    out = tmp_path / "study"
    argv = ["family", "study", "--backend", "trl", "--config", CARD, "--out", str(out)]
    argv += ["--arms", "grpo", "gspo", "--devices", "0,1,2,3,4,5,6,7", "--dry-run"]
    lines = {}
    for shard in ("0/2", "1/2"):
        assert cli.main([*argv, "--shard", shard]) == 0
        lines[shard] = [x for x in capsys.readouterr().out.splitlines() if "seed" in x]
    both = lines["0/2"] + lines["1/2"]
    assert len(both) == 16 and len({x.split("slot")[0] for x in both}) == 16
    assert not out.exists()  # a dry run writes nothing


SLEEPER = """import signal, sys, time
signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
open(sys.argv[1], "w").close()
time.sleep(60)
"""


def test_a_stop_signal_reaches_each_worker_once_and_requeues_its_run(tmp_path, monkeypatch):
    """Ctrl-C reaches the scheduler only (workers run in their own session); it forwards
    one SIGTERM (a worker saves after its step in flight), waits, and stops like any
    command: the run is queued again for the next `family study`."""
    smoke = run_config.load_run_config(SMOKE)
    lock, _ = lock_lib.read_lock(LOCK)
    ready = tmp_path / "ready"
    monkeypatch.setattr(
        trl_study, "worker_command", lambda a, run: [sys.executable, "-c", SLEEPER, str(ready)]
    )
    args = argparse.Namespace(out=str(tmp_path), lock=LOCK, trl_config=SMOKE, shard=None)
    jobs = [trl_study.Job(RUNS[0])]
    slots = trl_study.parse_slots("0", smoke, 1)
    scheduler = trl_study.Scheduler(args, jobs, slots, smoke, lock, retries=2)
    scheduler.step()
    while not ready.exists():
        time.sleep(0.05)
    with interrupts.graceful_stop():
        os.kill(os.getpid(), signal.SIGINT)
        with pytest.raises(interrupts.StopRequested):
            scheduler.run(poll_seconds=0.05)
    assert jobs[0].state == "queued" and not slots[0].retired
    assert jobs[0].attempts[-1]["exit_code"] == 143 and jobs[0].attempts[-1]["stopped"]


def _reference(tmp_path_factory):
    """The same runs one after another in this process, on one thread as each worker."""
    out = tmp_path_factory.mktemp("sequential")
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(gsm8k, "reward", _worker_module().hash_reward)
            manifests = {
                r: trl_backend.run_arm_trl(LOCK, SMOKE, out, lock_lib.LockedRun(r[1], r[2], r[0]))
                for r in RUNS
            }
    finally:
        torch.set_num_threads(before)
    return out, manifests


def _worker_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("trl_worker", WORKER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    out = tmp_path_factory.mktemp("node")
    marker = out.parent / "killed-once"
    trl_backend.base_heldout(LOCK, SMOKE, out)  # the base job, done here: one child fewer
    real = trl_study.worker_command

    def wrapped(args, run):
        line = real(args, run)
        victim = ["--kill-once", str(marker)] if run == RUNS[0] else []
        return [line[0], str(WORKER), *victim, *line[3:]]

    argv = [*SMOKE_STUDY, "--out", str(out)]
    argv += ["--arms", "grpo", "drgrpo", "--seeds", "11", "--devices", "0,1"]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(trl_study, "worker_command", wrapped)
        code = cli.main(argv)
    reference_out, reference = _reference(tmp_path_factory)
    return {"out": out, "code": code, "marker": marker, "ref_out": reference_out, "ref": reference}


def test_killed_worker_is_restarted_and_resumes(node):
    assert node["code"] == 0 and node["marker"].exists()
    record = files.read_json(node["out"] / trl_study.RECORD)
    jobs = {tuple(j["run"]): j for j in record["jobs"]}
    victim, other = jobs[RUNS[0]], jobs[RUNS[1]]
    assert [a["exit_code"] for a in victim["attempts"]] == [-9, 0]
    assert [a["exit_code"] for a in other["attempts"]] == [0]
    first = [victim["attempts"][0], other["attempts"][0]]  # both ran at once
    assert max(a["started"] for a in first) < min(a["ended"] for a in first)
    assert {a["slot"] for a in first} == {"0", "1"}
    resumed = files.read_json(node["out"] / "runs/on_policy/grpo-seed-11/run_manifest.json")
    assert resumed["resumed_from_step"] == 1


def test_manifests_equal_the_sequential_runs(node):
    for run in RUNS:
        regime, arm, seed = run
        folder = f"runs/{regime}/{arm}-seed-{seed}"
        got = files.read_json(node["out"] / folder / "run_manifest.json")
        want = node["ref"][run]
        for key in COMPARED:
            assert [t[key] for t in got["telemetry"]] == [t[key] for t in want["telemetry"]]
        assert got["heldout"]["trace"] == want["heldout"]["trace"]
        assert got["identity"] == want["identity"]
        weights = [
            load_file(o / folder / "final/adapter_model.safetensors")
            for o in (node["out"], node["ref_out"])
        ]
        assert weights[0].keys() == weights[1].keys()
        assert all(weights[0][k].equal(weights[1][k]) for k in weights[0])


def test_a_finished_study_is_skipped(node, capsys):
    argv = [*SMOKE_STUDY, "--out", str(node["out"])]
    argv += ["--arms", "grpo", "drgrpo", "--seeds", "11", "--devices", "0,1", "--dry-run"]
    assert cli.main(argv) == 0
    assert "dry run: 0 job(s)" in capsys.readouterr().out
