"""A family run folder is trusted only as written and held by one process: a checkpoint
with one byte flipped inside a tensor is refused in one line, a second `family run` on a
held folder is refused at once, and a study whose parent is killed (kill -9) leaves no
worker running; the same command then finishes the study."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import zipfile

import psutil
import pytest

from verifiable_grpo import cli
from verifiable_grpo.core import runlock
from verifiable_grpo.part2 import lock as lock_lib
from verifiable_grpo.part2 import study

pytestmark = pytest.mark.usefixtures("one_thread")
SEEDS = [131, 23]


@pytest.fixture(scope="module")
def smoke_lock(tmp_path_factory):
    folder = tmp_path_factory.mktemp("family-lock")
    lock = lock_lib.build_lock(
        lock_lib.LockChoices(
            "smoke",
            budget={"steps": 2, "prompts_per_step": 2, "checkpoint_every_steps": 1},
            evaluation={"problems": 2, "draws": 1},
            seeds=SEEDS,
        )
    )
    return lock_lib.write_lock(lock, folder / "lock.json")


def _flip_a_tensor_byte(path) -> None:
    """Flip one byte in the middle of the largest tensor record (the zip stays readable)."""
    with zipfile.ZipFile(path) as archive:
        entry = max(
            (i for i in archive.infolist() if "/data/" in i.filename), key=lambda i: i.file_size
        )
    with open(path, "r+b") as handle:
        handle.seek(entry.header_offset + 26)
        name_length, extra_length = (int.from_bytes(handle.read(2), "little") for _ in "ne")
        middle = entry.header_offset + 30 + name_length + extra_length + entry.file_size // 2
        handle.seek(middle)
        byte = handle.read(1)[0]
        handle.seek(middle)
        handle.write(bytes([byte ^ 0x01]))


def test_a_flipped_byte_in_a_checkpoint_is_refused(smoke_lock, tmp_path, capsys):
    args = [
        "family",
        "run",
        "--lock",
        str(smoke_lock),
        "--out",
        str(tmp_path),
        "--arm",
        "grpo",
        "--seed",
        "131",
        "--regime",
        "on_policy",
    ]
    assert cli.main([*args, "--stop-after", "1"]) == 0
    saved = study.run_dir(tmp_path, "on_policy", "grpo", 131) / "checkpoints"
    checkpoint = saved / "checkpoint-0001.pt"
    _flip_a_tensor_byte(checkpoint)
    with zipfile.ZipFile(checkpoint) as archive:  # still a well-formed zip
        assert any("/data/" in name for name in archive.namelist())
    capsys.readouterr()
    assert cli.main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "checkpoint-0001.pt: SHA-256" in err and "differs" in err
    assert not (saved.parent / "run_manifest.json").exists()


def test_a_second_run_on_a_held_folder_is_refused_at_once(smoke_lock, tmp_path, capsys):
    folder = study.run_dir(tmp_path, "on_policy", "grpo", 131)
    with runlock.locked(folder, "the first family run"):
        assert (
            cli.main(
                [
                    "family",
                    "run",
                    "--lock",
                    str(smoke_lock),
                    "--out",
                    str(tmp_path),
                    "--arm",
                    "grpo",
                    "--seed",
                    "131",
                    "--regime",
                    "on_policy",
                ]
            )
            == 2
        )
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "in use by another process" in err
    assert "the first family run" in err
    assert not (folder / "checkpoints").exists()


def _children(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children()
    except psutil.NoSuchProcess:
        return []


def _alive(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _wait_for(condition, what: str, limit: float = 120.0):
    """Poll until condition() is truthy; a generous bound only so a broken build fails."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f"gave up waiting for {what}")


def test_killing_the_study_parent_leaves_no_worker(tmp_path):
    """A budget far longer than the test: a worker still running after its parent's death
    would hold its run folder until the bound of _wait_for."""
    lock = lock_lib.write_lock(
        lock_lib.build_lock(
            lock_lib.LockChoices(
                "smoke",
                budget={"steps": 100_000, "prompts_per_step": 2},
                evaluation={"problems": 2, "draws": 1},
                seeds=SEEDS,
            )
        ),
        tmp_path / "lock.json",
    )
    out = tmp_path / "study"
    command = [
        sys.executable,
        "-m",
        "verifiable_grpo",
        "family",
        "study",
        "--exploratory",
        "--lock",
        str(lock),
        "--out",
        str(out),
        "--arms",
        "grpo",
        "--regimes",
        "on_policy",
        "--workers",
        "2",
    ]
    folders = [study.run_dir(out, "on_policy", "grpo", seed) for seed in SEEDS]
    parent = subprocess.Popen(
        command,
        env={**os.environ, "TQDM_DISABLE": "1"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    workers: list[psutil.Process] = []
    try:  # both workers hold their run folder: they are training
        _wait_for(
            lambda: all(
                (f / runlock.LOCK_NAME).is_file() and (f / runlock.LOCK_NAME).read_text()
                for f in folders
            ),
            "both run folders to be held",
        )
        workers = _children(parent.pid)
        assert len(workers) == 2
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        _wait_for(lambda: not any(map(_alive, workers)), "the workers to exit")
    finally:  # never leave a process behind, whatever failed above
        if parent.poll() is None:
            parent.kill()
        for worker in filter(_alive, workers):
            worker.kill()
    pids = {w.pid for w in workers}
    for folder in folders:  # free again: the rerun can take each one over
        with runlock.locked(folder, "the rerun") as held:
            assert held["took_over"]["pid"] in pids
    with runlock.locked(out, "the rerun") as held:
        assert held["took_over"]["pid"] == parent.pid
