"""The treatment lock is pinned where an edit of the file cannot follow it: every
pre-registered field of an edited lock is named (lock.json budget.KEY, seeds,
evaluation.KEY), `family lock --check` exits 2 in one line and `family run` refuses before
any compute; the committed lock, whose SHA-256 the recorded study names, still verifies."""

from __future__ import annotations

import copy

import pytest

from verifiable_grpo import cli
from verifiable_grpo.core import files
from verifiable_grpo.core.config import ConfigError, resolve
from verifiable_grpo.part2 import lock as lock_lib

RECORDED = resolve("data/recorded/part2")

# (where, value, what the refusal names) — each an edit the issue found unrefused.
EDITS = [
    (
        ("budget", "learning_rate"),
        1e-4,
        "lock.json budget.learning_rate is 0.0001, pre-registered 3e-05",
    ),
    (("budget", "steps"), 3, "lock.json budget.steps is 3, pre-registered 30"),
    (("budget", "beta"), 0.5, "lock.json budget.beta is 0.5, pre-registered 0.0"),
    (
        ("budget", "checkpoint_every_steps"),
        0,
        "lock.json budget.checkpoint_every_steps is 0, pre-registered 5",
    ),
    (("seeds",), [11, 23, 37, 53, 71, 89, 107, 131, 149], "lock.json seeds is [11, 23"),
    (("evaluation", "problems"), 2, "lock.json evaluation.problems is 2, pre-registered 200"),
]


def _edited(lock: dict, where: tuple, value) -> dict:
    changed = copy.deepcopy(lock)
    target = changed
    for name in where[:-1]:
        target = target[name]
    target[where[-1]] = value
    return changed


def test_the_committed_lock_is_the_one_the_recorded_study_names():
    lock, sha = lock_lib.read_lock()
    assert sha == lock_lib.COMMITTED_LOCK_SHA256
    lock_lib.check_lock(lock)  # verifies against the code and the pin
    manifests = [files.read_json(p) for p in RECORDED.glob("runs/*/*/run_manifest.json")]
    assert len(manifests) == 80
    assert {m["lock_sha256"] for m in manifests} == {lock_lib.COMMITTED_LOCK_SHA256}
    assert files.read_json(RECORDED / "study.json")["lock_sha256"] == sha


@pytest.mark.parametrize("where, value, named", EDITS, ids=[".".join(e[0]) for e in EDITS])
def test_every_edit_of_the_committed_lock_is_refused_by_name(where, value, named):
    lock, _ = lock_lib.read_lock()
    with pytest.raises(ConfigError) as refused:
        lock_lib.check_lock(_edited(lock, where, value))
    assert named in str(refused.value) and "\n" not in str(refused.value)
    assert "tiny.yaml" not in str(refused.value)


def test_the_pinned_digest_itself_is_compared(monkeypatch):
    lock, sha = lock_lib.read_lock()
    monkeypatch.setattr(lock_lib, "COMMITTED_LOCK_SHA256", "0" * 64)
    with pytest.raises(ConfigError, match=f"lock.json hashes to {sha[:12]}..., pinned 000"):
        lock_lib.check_lock(lock)


def _pinned_copy(folder):
    """The committed lock written as a new pre-registration (lock.json + lock.pin.json)."""
    path = folder / "lock.json"
    lock_lib.write_lock(lock_lib.read_lock()[0], path)
    return path


def test_an_edited_lock_fails_the_check_and_the_run_before_compute(tmp_path, capsys):
    path = _pinned_copy(tmp_path)
    assert (tmp_path / "lock.pin.json").is_file()
    assert cli.main(["family", "lock", "--check", "--lock", str(path)]) == 0
    capsys.readouterr()
    edited = _edited(files.read_json(path), ("budget", "learning_rate"), 1e-4)
    files.save_json(path, edited, overwrite=True)
    assert cli.main(["family", "lock", "--check", "--lock", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "lock.json budget.learning_rate is 0.0001" in err
    out = tmp_path / "study"
    assert (
        cli.main(
            [
                "family",
                "run",
                "--lock",
                str(path),
                "--out",
                str(out),
                "--arm",
                "grpo",
                "--seed",
                "11",
                "--regime",
                "on_policy",
            ]
        )
        == 2
    )
    assert "lock.json budget.learning_rate" in capsys.readouterr().err
    assert not out.exists()


def test_a_lock_without_its_pin_is_refused(tmp_path, capsys):
    path = _pinned_copy(tmp_path)
    (tmp_path / "lock.pin.json").unlink()
    assert cli.main(["family", "lock", "--check", "--lock", str(path)]) == 2
    assert "has no pinned digest" in capsys.readouterr().err
    with pytest.raises(FileExistsError, match="never rewritten"):
        lock_lib.write_lock(lock_lib.read_lock()[0], path)


def test_an_arm_on_a_newer_axis_names_that_axis_as_its_treatment():
    # the baseline leaves the surrogate and correction axes at their defaults, so they are
    # absent from its mechanics; an arm that sets one must still name it
    from verifiable_grpo.part2.lock import _treatment_changes

    assert "surrogate" in _treatment_changes("cispo")
    assert _treatment_changes("grpo_tis") == ["correction"]
    assert _treatment_changes("dapo") == ["clip", "sampler"]
