"""The second lock (the same arms as LoRA adapters at a LoRA rate) is written and hashed,
not run: its SHA-256 is pinned, the code re-derives it, it differs from the committed lock
only where it should, an edit is refused by name, and a study folder of the committed lock
refuses a run under it before any compute. The committed lock's hash does not move."""

from __future__ import annotations

import shutil

import pytest

from verifiable_grpo import cli
from verifiable_grpo.core import files
from verifiable_grpo.core.config import ConfigError, resolve
from verifiable_grpo.part2 import lock as lock_lib
from verifiable_grpo.part2 import lora_rate_lock, study


def test_the_second_lock_is_pinned_and_re_derived_from_the_code(capsys):
    lock, sha = lock_lib.read_lock(lora_rate_lock.PATH)
    assert sha == lora_rate_lock.PINNED_SHA256
    assert lock_lib.read_pin(lora_rate_lock.PATH)["lock_sha256"] == sha
    assert lock == lora_rate_lock.build()
    lock_lib.check_lock(lock, path=lora_rate_lock.PATH)
    assert lock_lib.read_lock()[1] == lock_lib.COMMITTED_LOCK_SHA256
    assert cli.main(["family", "lock", "--check", "--lock", lora_rate_lock.PATH]) == 0
    assert "matches the code" in capsys.readouterr().out


def test_it_differs_from_the_committed_lock_only_in_the_trainable_and_the_rate():
    new, _ = lock_lib.read_lock(lora_rate_lock.PATH)
    committed, _ = lock_lib.read_lock()
    assert {k for k in committed if committed[k] != new[k]} == {"budget", "locked_at", "notes"}
    changed = {k for k in new["budget"] if new["budget"][k] != committed["budget"].get(k)}
    assert changed == {"trainable", "lora", "learning_rate"}
    assert new["budget"]["learning_rate"] == pytest.approx(
        lora_rate_lock.FULL_TO_LORA_RATE * committed["budget"]["learning_rate"]
    )
    assert new["budget"]["lora"] == {"rank": 16, "alpha": 32, "dropout": 0.0}


def test_an_edit_back_to_the_cards_rate_is_refused_by_name(tmp_path):
    path = tmp_path / "lock-lora-rate.json"
    shutil.copy(resolve(lora_rate_lock.PATH), path)
    shutil.copy(lock_lib.pin_path(lora_rate_lock.PATH), lock_lib.pin_path(path))
    edited = files.read_json(path)
    edited["budget"]["learning_rate"] = 1e-6
    with pytest.raises(ConfigError, match="budget.learning_rate is 1e-06, pre-registered 0.0003"):
        lock_lib.check_lock(edited, path=path)


def test_the_tiny_studys_folder_refuses_a_run_under_it(tmp_path, capsys):
    out = tmp_path / "study"
    study.bind_study_folder(out, lock_lib.COMMITTED_LOCK_SHA256, lock_lib.LOCK_PATH)
    assert (
        cli.main(
            [
                "family",
                "run",
                "--lock",
                lora_rate_lock.PATH,
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
    err = capsys.readouterr().err
    assert "the treatment lock changed" in err and err.count("\n") == 1
    assert sorted(p.name for p in out.iterdir()) == ["study.json"]
