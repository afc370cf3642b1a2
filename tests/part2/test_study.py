"""The family study on a smoke budget: interrupt + resume equals a continuous run bit for
bit for every arm (dapo's refill loop and aero's rescue included), the lock binds the
study folder, and bad input gets a clear error."""

from __future__ import annotations

import json
import shutil

import pytest

from verifiable_grpo.core import files
from verifiable_grpo.core.config import ConfigError
from verifiable_grpo.part2 import lock as lock_lib
from verifiable_grpo.part2 import study
from verifiable_grpo.training.objectives import STUDY_ARMS

pytestmark = pytest.mark.usefixtures("one_thread")

ARMS = list(STUDY_ARMS)
# On the smoke profile (batched sampling, one thread) this seed makes dapo refill and
# aero rescue at step 0, so the resume test covers both loops' randomness.
SEED = 131


def smoke_lock(folder, **budget):
    lock = lock_lib.build_lock(
        lock_lib.LockChoices(
            "smoke",
            budget={"steps": 2, "prompts_per_step": 2, "checkpoint_every_steps": 1, **budget},
            evaluation={"problems": 2, "draws": 1},
            seeds=[SEED, 23],
        )
    )
    path = folder / "lock.json"
    lock_lib.write_lock(lock, path)
    return path


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """One lock and one continuous study folder for the whole module."""
    root = tmp_path_factory.mktemp("family")
    return {"root": root, "lock": smoke_lock(root), "continuous": root / "continuous"}


def _without_times(manifest):
    keep = {
        k: v
        for k, v in manifest.items()
        if k not in ("times", "wall_seconds", "provenance", "resumed_from_step")
    }
    keep["summary"] = {k: v for k, v in manifest["summary"].items() if k != "seconds_per_step"}
    keep["heldout"] = {k: v for k, v in manifest["heldout"].items() if k != "seconds"}
    return json.loads(json.dumps(keep))


@pytest.mark.parametrize("arm", ARMS)
def test_interrupt_and_resume_equal_a_continuous_run(shared, arm):
    lock = shared["lock"]
    continuous = study.run_arm(
        lock, shared["continuous"], lock_lib.LockedRun(arm, SEED, "two_updates")
    )
    out = shared["root"] / f"interrupted-{arm}"
    assert (
        study.run_arm(lock, out, lock_lib.LockedRun(arm, SEED, "two_updates"), stop_after=1) is None
    )
    assert sorted(
        p.name for p in (study.run_dir(out, "two_updates", arm, SEED) / "checkpoints").iterdir()
    ) == ["anchors.json", "checkpoint-0001.json", "checkpoint-0001.pt"]  # core.anchors
    resumed = study.run_arm(lock, out, lock_lib.LockedRun(arm, SEED, "two_updates"))
    assert resumed["resumed_from_step"] == 1 and continuous["resumed_from_step"] is None
    assert resumed["final_model_digest"] == continuous["final_model_digest"]
    assert _without_times(resumed) == _without_times(continuous)
    assert resumed["final_model_digest"] != resumed["initial_model_digest"]
    shared_fields = study.StudyRun.shared_identity(continuous["config"])
    assert {k: continuous["identity"][k] for k in shared_fields} == shared_fields
    telemetry = continuous["telemetry"]
    assert [len(t["loss"]) for t in telemetry] == [2, 2]  # two updates per rollout set
    for t in telemetry:  # the first update sees the sampling policy (ratio 1 within the
        low, high = t["ratio_range"][0]  # captured-vs-rescored check), the second not
        assert 1 - 2e-4 < low <= high < 1 + 2e-4 and t["clip_low_fraction"][0] == 0.0
        assert t["clip_high_fraction"][0] == 0.0 and t["ratio_range"][1] != [low, high]
    assert all(t["rollouts_generated"] >= (6 if arm == "aero" else 8) for t in telemetry)
    if arm == "dapo":  # seed 131 needs a refill at step 0 and discards what it cannot use
        assert (
            telemetry[0]["generation_batches"] >= 2
            and telemetry[0]["zero_variance_fraction"] == 0.0
        )
        assert telemetry[0]["rollouts_discarded"] > 0
    if arm == "aero":  # seed 131 rescues an all-wrong prompt at step 0
        assert "rescued" in telemetry[0]["strategies"]
        assert telemetry[0]["rollouts_generated"] > 6
    trace = continuous["heldout"]["trace"]
    assert len(trace) == 2 * (1 + 1) and all(len(t["completion_sha256"]) == 64 for t in trace)
    assert continuous["lock_sha256"] == lock_lib.read_lock(lock)[1]


def test_a_finished_run_is_never_overwritten(shared):
    study.run_arm(shared["lock"], shared["continuous"], lock_lib.LockedRun("grpo", 23, "on_policy"))
    with pytest.raises(FileExistsError, match="evidence is never overwritten"):
        study.run_arm(
            shared["lock"], shared["continuous"], lock_lib.LockedRun("grpo", 23, "on_policy")
        )


def test_the_warm_start_is_evaluated_once(shared):
    lock, sha = lock_lib.read_lock(shared["lock"])
    first = study.warmstart_heldout(lock, shared["continuous"], sha)
    again = study.warmstart_heldout(lock, shared["continuous"], sha)
    assert first == again and first["heldout"]["greedy"]["ALL"]["problems"] == 2


def test_a_changed_lock_is_refused(shared, tmp_path):
    lock_path = smoke_lock(tmp_path)
    out = tmp_path / "study"
    study.bind_study_folder(out, lock_lib.read_lock(lock_path)[1], str(lock_path))
    edited = files.read_json(lock_path)
    edited["seeds"] = [SEED, 23, 99]
    lock_path.unlink()
    files.save_json(lock_path, edited)
    # the pin beside the lock refuses the edit before the folder's binding is read ...
    with pytest.raises(
        ConfigError,
        match=r"lock.json seeds is \[131, 23, 99\], "
        r"pre-registered \[131, 23\]",
    ):
        study.run_arm(lock_path, out, lock_lib.LockedRun("grpo", SEED, "on_policy"))
    # ... and a folder bound to another lock refuses it too
    with pytest.raises(ConfigError, match="the treatment lock changed"):
        study.bind_study_folder(out, "0" * 64, str(lock_path))
    # A lock whose arm no longer matches the registry is refused before any run.
    drifted = files.read_json(shared["lock"])
    drifted["arms"]["gspo"]["objective_sha256"] = "0" * 64
    with pytest.raises(ConfigError, match=r"arms\.gspo \(its registry entry"):
        lock_lib.check_lock(drifted, path=shared["lock"])
    with pytest.raises(FileExistsError, match="never rewritten"):
        lock_lib.write_lock(drifted, lock_path)


def test_bad_requests_name_the_fix(shared, tmp_path):
    lock = shared["lock"]
    with pytest.raises(ValueError, match="unknown objective 'grop'.*did you mean 'grpo'"):
        study.run_arm(lock, tmp_path, lock_lib.LockedRun("grop", SEED, "on_policy"))
    with pytest.raises(ConfigError, match="'bnpo' is not in the treatment lock"):
        study.run_arm(lock, tmp_path, lock_lib.LockedRun("bnpo", SEED, "on_policy"))
    with pytest.raises(ConfigError, match="seed 12 is not pre-registered"):
        study.run_arm(lock, tmp_path, lock_lib.LockedRun("grpo", 12, "on_policy"))
    with pytest.raises(ConfigError, match="unknown regime 'three'"):
        study.run_arm(lock, tmp_path, lock_lib.LockedRun("grpo", SEED, "three"))
    with pytest.raises(FileNotFoundError, match="write it first"):
        study.run_arm(
            tmp_path / "none.json", tmp_path, lock_lib.LockedRun("grpo", SEED, "on_policy")
        )


def test_resume_from_another_arms_checkpoint_is_refused(shared, tmp_path):
    lock = shared["lock"]
    study.run_arm(lock, tmp_path, lock_lib.LockedRun("grpo", SEED, "on_policy"), stop_after=1)
    source = study.run_dir(tmp_path, "on_policy", "grpo", SEED) / "checkpoints"
    target = study.run_dir(tmp_path, "on_policy", "gspo", SEED) / "checkpoints"
    target.parent.mkdir(parents=True)
    shutil.copytree(source, target)
    with pytest.raises(
        ValueError,
        match=f"checkpoint of arm grpo seed {SEED} regime on_policy, not of this run \\(arm gspo",
    ):
        study.run_arm(lock, tmp_path, lock_lib.LockedRun("gspo", SEED, "on_policy"))


def test_study_status_and_analyse_from_the_command_line(shared, capsys):
    """After the runs above: `family study` skips finished runs, `status` counts them and
    `analyse` fails closed (no verdicts) while pre-registered seeds are missing."""
    from verifiable_grpo import cli
    from verifiable_grpo.core import files as files_lib

    common = ["--lock", str(shared["lock"]), "--out", str(shared["continuous"])]
    assert (
        cli.main(
            [
                "family",
                "study",
                "--exploratory",
                *common,
                "--arms",
                "grpo",
                "--seeds",
                str(SEED),
                "--workers",
                "1",
                "--regimes",
                "two_updates",
            ]
        )
        == 0
    )
    assert "warm start: held-out greedy" in capsys.readouterr().out
    assert cli.main(["family", "status", *common]) == 0
    assert capsys.readouterr().out.strip().endswith("6 finished, 0 in flight, 14 not started")
    assert cli.main(["family", "analyse", *common]) == 0
    out = capsys.readouterr().out
    assert "no verdicts: 5 pre-registered runs missing" in out
    saved = files_lib.read_json(shared["continuous"] / "analysis.json")
    two = saved["regimes"]["two_updates"]
    assert not two["complete"] and two["comparisons"] == []
    assert [r["seeds"] for r in two["arms"]] == [1, 1, 1, 1, 1]
    assert saved["lock_sha256"] == lock_lib.read_lock(shared["lock"])[1]


def test_the_study_splits_its_seeds_over_worker_processes(shared, capsys):
    """Two one-thread workers, one seed each: both runs finish, and a second call finds
    nothing left to do."""
    from verifiable_grpo import cli

    common = [
        "--lock",
        str(shared["lock"]),
        "--out",
        str(shared["continuous"]),
        "--arms",
        "drgrpo",
        "--regimes",
        "on_policy",
    ]
    assert cli.main(["family", "study", "--exploratory", *common, "--workers", "2"]) == 0
    stamp = files.read_json(shared["continuous"] / "started.json")  # taken at the start
    assert stamp["exploratory"] is True and stamp["started_at"]
    for seed in (SEED, 23):
        assert study.manifest_path(shared["continuous"], "on_policy", "drgrpo", seed).is_file()
    capsys.readouterr()
    assert cli.main(["family", "status", *common]) == 0
    assert capsys.readouterr().out.strip().endswith("2 finished, 0 in flight, 0 not started")


def test_a_lora_study_trains_only_the_adapters_and_resumes_bit_for_bit(tmp_path):
    """trainable 'lora': the base stays frozen, the adapters' init is seeded (two processes
    build the same A), and interrupt + resume equals the continuous run."""
    lock = smoke_lock(tmp_path, trainable="lora", lora={"rank": 2, "alpha": 4, "dropout": 0.0})
    continuous = study.run_arm(
        lock, tmp_path / "a", lock_lib.LockedRun("grpo", SEED, "two_updates")
    )
    assert (
        study.run_arm(
            lock, tmp_path / "b", lock_lib.LockedRun("grpo", SEED, "two_updates"), stop_after=1
        )
        is None
    )
    resumed = study.run_arm(lock, tmp_path / "b", lock_lib.LockedRun("grpo", SEED, "two_updates"))
    assert _without_times(resumed) == _without_times(continuous)
    trainable = continuous["trainable"]
    assert trainable["mode"] == "lora" and trainable["adapters"] > 0
    assert 0 < trainable["trainable"] < trainable["total"]
    assert continuous["final_model_digest"] != continuous["initial_model_digest"]


def test_a_budget_names_its_trainable_parameters():
    with pytest.raises(ValueError, match="trainable must be 'full' or 'lora'"):
        lock_lib.build_lock(lock_lib.LockChoices("smoke", budget={"trainable": "adapters"}))
    with pytest.raises(ValueError, match="budget lora is only read with trainable 'lora'"):
        lock_lib.build_lock(lock_lib.LockChoices("smoke", budget={"lora": {"rank": 2}}))
    with pytest.raises(ValueError, match="budget lora needs exactly"):
        lock_lib.build_lock(
            lock_lib.LockChoices("smoke", budget={"trainable": "lora", "lora": {"r": 2}})
        )


def test_a_killed_study_worker_is_continued_to_the_same_run(shared, capsys, monkeypatch):
    """kill -9 of the study's single worker (one seed, --workers 2) right after its first
    checkpoint: the parent survives and says so in one line, and the same command then
    ends in the manifest of an uninterrupted run, bit for bit."""
    from verifiable_grpo import cli
    from verifiable_grpo.core import faults

    reference = study.manifest_path(shared["continuous"], "two_updates", "grpo", SEED)
    if not reference.is_file():
        study.run_arm(
            shared["lock"], shared["continuous"], lock_lib.LockedRun("grpo", SEED, "two_updates")
        )
    out = shared["root"] / "killed-worker"
    common = ["--lock", str(shared["lock"]), "--out", str(out), "--arms", "grpo"]
    common += ["--regimes", "two_updates", "--seeds", str(SEED)]
    monkeypatch.setenv(faults.ENV, "family-after-checkpoint#1")  # the worker inherits it
    assert cli.main(["family", "study", "--exploratory", *common, "--workers", "2"]) == 2
    assert "1 of 1 workers failed" in capsys.readouterr().err
    monkeypatch.delenv(faults.ENV)
    folder = study.run_dir(out, "two_updates", "grpo", SEED)
    assert (folder / "checkpoints" / "checkpoint-0001.pt").is_file()
    assert not (folder / "run_manifest.json").exists()
    assert cli.main(["family", "study", "--exploratory", *common, "--workers", "1"]) == 0
    resumed = files.read_json(folder / "run_manifest.json")
    assert resumed["resumed_from_step"] == 1
    assert _without_times(resumed) == _without_times(files.read_json(reference))
