"""The recorded family study (data/recorded/part2): complete, bound to the committed lock,
internally consistent, and its analysis reproducible exactly from its manifests."""

from __future__ import annotations

import pytest

from verifiable_grpo.core import files
from verifiable_grpo.core.config import resolve
from verifiable_grpo.part2 import analysis, record, results
from verifiable_grpo.part2 import lock as lock_lib

DEST = resolve(record.RECORDED)
pytestmark = pytest.mark.skipif(not (DEST / "analysis.json").is_file(), reason="no recorded study")


@pytest.fixture(scope="module")
def recorded():
    return results.load(DEST)


def test_every_preregistered_run_is_recorded_under_the_committed_lock(recorded):
    lock, sha = lock_lib.read_lock()
    expected = {(r, a, s) for r in lock["regimes"] for a in lock["arms"] for s in lock["seeds"]}
    assert set(recorded["runs"]) == expected
    assert {m["lock_sha256"] for m in recorded["runs"].values()} == {sha}
    assert files.read_json(DEST / "study.json")["lock_sha256"] == sha
    # One code version for the whole study, and every run moved its policy.
    assert len({m["identity"]["code_sha256"] for m in recorded["runs"].values()}) == 1
    assert all(
        m["final_model_digest"] != m["initial_model_digest"] for m in recorded["runs"].values()
    )


def test_the_analysis_is_recomputed_exactly_from_the_manifests(recorded):
    lock, sha = lock_lib.read_lock()
    again = analysis.analyse(lock, analysis.load_manifests(DEST), lock_sha=sha)
    saved = dict(recorded["analysis"])
    assert saved.pop("lock_sha256") == sha
    assert saved.pop("warm_start") == recorded["warm_start"]["heldout"]["greedy"]["ALL"]
    assert saved == again
    assert all(part["complete"] for part in again["regimes"].values())


def test_summaries_agree_with_the_correctness_strings(recorded):
    for key, m in recorded["runs"].items():
        correct = m["heldout"]["correct"]
        assert len(correct["greedy"]) == 200 and len(correct["sample"]) == 800, key
        assert m["summary"]["heldout_greedy_all"] == correct["greedy"].count("1") / 200, key
        assert m["summary"]["heldout_per_draw_all"] == correct["sample"].count("1") / 800, key
        assert m["heldout"]["greedy"]["ALL"]["correct"] == correct["greedy"].count("1"), key
        assert len(m["heldout"]["trace_sha256"]) == 64 and len(m["telemetry"]) == 30, key


def test_the_mechanics_view_reads_the_regimes_as_locked(recorded):
    for regime, updates in (("on_policy", 1), ("two_updates", 2)):
        rows = results.mechanics(recorded, regime)
        assert [r["arm"] for r in rows] == list(lock_lib.read_lock()[0]["arms"])
        assert all(len(r["clipped_per_update"]) == updates for r in rows)
    on_policy = {r["arm"]: r for r in results.mechanics(recorded, "on_policy")}
    # One update per rollout set: the ratio is 1 within the 2e-4 rescoring check, so
    # nothing is clipped, and only dapo discards rollouts among the plain-group arms.
    assert all(r["clipped_per_update"] == [0.0] for r in on_policy.values())
    assert all(1 - 2e-4 < r["ratio_min"] <= r["ratio_max"] < 1 + 2e-4 for r in on_policy.values())
    assert (
        on_policy["grpo"]["discarded_per_step"] == 0 and on_policy["dapo"]["discarded_per_step"] > 0
    )
