"""The study record: the trace becomes a digest plus correctness strings, and only a
complete study run under the same lock is recorded."""

from __future__ import annotations

import hashlib
import json

import pytest

from verifiable_grpo.part2 import lock as lock_lib
from verifiable_grpo.part2 import record, study


def _trace():
    return [
        {
            "mode": "greedy",
            "document_id": "a",
            "draw": 0,
            "correct": True,
            "completion_sha256": "1" * 64,
        },
        {
            "mode": "greedy",
            "document_id": "b",
            "draw": 0,
            "correct": False,
            "completion_sha256": "2" * 64,
        },
        {
            "mode": "sample",
            "document_id": "a",
            "draw": 0,
            "correct": False,
            "completion_sha256": "3" * 64,
        },
        {
            "mode": "sample",
            "document_id": "a",
            "draw": 1,
            "correct": True,
            "completion_sha256": "4" * 64,
        },
    ]


def test_the_trace_becomes_a_digest_and_correctness_strings():
    heldout = {"greedy": {"ALL": {"correct": 1}}, "trace": _trace(), "seconds": 1.5}
    trimmed = record.trim_heldout(heldout)
    assert "trace" not in trimmed and trimmed["greedy"] == heldout["greedy"]
    assert trimmed["correct"] == {"greedy": "10", "sample": "01"}
    canonical = json.dumps(_trace(), sort_keys=True, separators=(",", ":")).encode()
    assert trimmed["trace_sha256"] == hashlib.sha256(canonical).hexdigest()
    changed = _trace()
    changed[3]["completion_sha256"] = "5" * 64  # one completion differs
    assert record.trim_heldout({"trace": changed})["trace_sha256"] != trimmed["trace_sha256"]
    manifest = record.trim_manifest({"schema": "x", "arm": "grpo", "heldout": heldout})
    assert manifest["schema"] == record.TRIMMED_SCHEMA and manifest["arm"] == "grpo"


def test_only_a_complete_study_under_its_own_lock_is_recorded(tmp_path):
    lock = lock_lib.build_lock(
        lock_lib.LockChoices(
            "smoke",
            budget={"steps": 2, "prompts_per_step": 2},
            evaluation={"problems": 2, "draws": 1},
            seeds=[11, 23],
        )
    )
    path = tmp_path / "lock.json"
    lock_lib.write_lock(lock, path)
    out = tmp_path / "study"
    study.bind_study_folder(out, lock_lib.read_lock(path)[1], str(path))
    with pytest.raises(ValueError, match="20 pre-registered runs are not finished"):
        record.export_study(out, tmp_path / "record", path)
    other = tmp_path / "other"
    study.bind_study_folder(other, "0" * 64, "elsewhere.json")
    with pytest.raises(ValueError, match="was run under lock 000000000000"):
        record.export_study(other, tmp_path / "record", path)
    assert not (tmp_path / "record").exists()


def test_a_record_replaces_only_a_previous_record(tmp_path, monkeypatch):
    lock = lock_lib.build_lock(
        lock_lib.LockChoices(
            "smoke",
            budget={"steps": 2, "prompts_per_step": 2},
            evaluation={"problems": 2, "draws": 1},
            seeds=[11],
        )
    )
    path = tmp_path / "lock.json"
    lock_lib.write_lock(lock, path)
    out = tmp_path / "study"
    study.bind_study_folder(out, lock_lib.read_lock(path)[1], str(path))
    for regime in lock["regimes"]:
        for arm in lock["arms"]:
            study.manifest_path(out, regime, arm, 11).parent.mkdir(parents=True)
            study.manifest_path(out, regime, arm, 11).write_text("{}")

    def written(study_folder, dest, paths, locked):  # the plumbing, not the trimming
        (dest / "study.json").write_text(str(len(paths)))
        return {"runs": len(paths)}

    monkeypatch.setattr(record, "_write_record", written)
    dest = tmp_path / "record"
    dest.mkdir()
    (dest / "study.json").write_text("the previous record")
    (dest / "analysis.json").write_text("{}")
    assert record.export_study(out, dest, path) == {"runs": 10}
    assert sorted(p.name for p in dest.iterdir()) == ["study.json"]
    (dest / "notes.txt").write_text("mine")  # no longer a record of a study
    with pytest.raises(ValueError, match="not a family study record"):
        record.export_study(out, dest, path)
    assert (dest / "notes.txt").read_text() == "mine"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith((".tmp-", ".old-"))]
