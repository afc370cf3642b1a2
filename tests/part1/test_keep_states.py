"""storage.keep_states digest: the smoke run ends with the same results and resume verdicts
as the reference run that keeps every state, while its folder never holds more than one
branch's three states (and one crash checkpoint), and ends holding none; the evidence that
replaces them is checked like the states it replaces."""

from __future__ import annotations

import pytest

from shared_helpers import tiny_base_has_weights
from verifiable_grpo.core import checkpoint, crash, state_digests
from verifiable_grpo.core.config import load_config
from verifiable_grpo.core.files import read_json, save_json
from verifiable_grpo.core.runfolder import MODES, RunFolder
from verifiable_grpo.part1 import pipeline

BRANCHES = ("warmstart", "sft", "grpo", "grpo-g2", "grpo-g8")


def _digest_config():
    if not tiny_base_has_weights():
        pytest.skip("the smoke profile runs on the trained tiny base (data/tiny-base)")
    return load_config("smoke").replaced(storage={"keep_states": "digest"})


def _states_on_disk(out):
    kept = sorted(p.name for p in (out / "checkpoints").glob("*.pt.gz"))
    crashing = sorted(p.name for p in (out / crash.CRASH_DIR).rglob("state-*.pt"))
    return kept, crashing


def _without_times(value):
    """A results entry without what differs between runs of the same bits: wall times and
    the generation record (whose files hold their times)."""
    if isinstance(value, dict):
        return {
            k: _without_times(v)
            for k, v in value.items()
            if "seconds" not in k and k != "generation"
        }
    return value


@pytest.fixture(scope="module")
def digest_run(tmp_path_factory):
    """The smoke run under keep_states digest, watching the folder after every final state
    and every crash checkpoint is written (a crash save removes the older pair last)."""
    config = _digest_config()
    out = tmp_path_factory.mktemp("digest") / "run"
    seen = []
    real_save, real_crash = checkpoint.save_state, crash.save

    def watching(path, state, compress=True):
        saved = real_save(path, state, compress)
        if compress:  # a final state, not a crash file
            seen.append(_states_on_disk(out))
        return saved

    def watching_crash(*args, **kwargs):
        saved = real_crash(*args, **kwargs)
        seen.append(_states_on_disk(out))
        return saved

    patch = pytest.MonkeyPatch()
    patch.setattr(checkpoint, "save_state", watching)  # every final state (and crash.save's)
    patch.setattr(crash, "save", watching_crash)
    try:
        pipeline.run_pipeline(config, out)
    finally:
        patch.undo()
    return config, out, seen


def test_digest_mode_ends_as_the_run_that_keeps_every_state(digest_run, smoke_reference):
    config, out, _ = digest_run
    mine, reference = read_json(out / "results.json"), read_json(smoke_reference / "results.json")
    assert mine["policies"].keys() == reference["policies"].keys()
    for policy, scores in mine["policies"].items():  # every count, rate and model digest
        assert _without_times(scores) == _without_times(reference["policies"][policy]), policy
    for branch in BRANCHES:
        verdict = read_json(out / f"resume-{branch}.json")
        assert verdict["equal"] is True
        # the same weights as the reference run's (a state's file also holds wall times)
        kept = read_json(smoke_reference / f"resume-{branch}.json")
        for mode in ("continuous", "resume"):
            assert verdict[mode]["model_digest"] == kept[mode]["model_digest"]
            record = read_json(out / "digests" / f"{branch}-{mode}.json")
            assert (record["sha256"], record["bytes"]) == (
                verdict[mode]["sha256"],
                verdict[mode]["bytes"],
            )
        record = read_json(out / "digests" / f"{branch}-interrupt.json")
        assert record["sha256"] == RunFolder(out).recorded_state_sha256(branch, "interrupt")
    assert _without_times(
        read_json(out / "exercise" / "group-size.json")["budgets"]
    ) == _without_times(read_json(smoke_reference / "exercise" / "group-size.json")["budgets"])


def test_the_folder_holds_at_most_one_branch_of_states(digest_run):
    _, out, seen = digest_run
    assert seen, "no state was written"
    assert max(len(kept) for kept, _ in seen) <= 3
    assert len({name.rsplit("-", 1)[0] for kept, _ in seen for name in kept[:1]}) > 1
    for kept, _ in seen:  # the states present at once belong to one branch
        assert len({name.rsplit("-", 1)[0] for name in kept}) <= 1
    assert max(len(crashing) for _, crashing in seen) <= 1
    assert _states_on_disk(out) == ([], [])
    assert sorted(p.name for p in (out / "checkpoints").glob("*.safetensors")) == sorted(
        f"{b}-resume.safetensors" for b in BRANCHES
    )


def test_a_rerun_checks_the_records_and_redoes_nothing(digest_run, tmp_path):
    import shutil

    config, out, _ = digest_run
    copy = tmp_path / "run"
    shutil.copytree(out, copy)
    before = read_json(copy / "timings.json")["stages"]
    assert pipeline.run_pipeline(config, copy)["stages"] == before
    record_path = copy / "digests" / "grpo-interrupt.json"
    record = read_json(record_path)
    record_path.unlink()
    save_json(record_path, dict(record, sha256="0" * 64))  # a record that no longer vouches
    with pytest.raises(pipeline.HalfDoneStageError, match="grpo-interrupt.pt.gz"):
        pipeline.run_pipeline(config, copy)


def test_a_verify_stopped_before_its_marker_is_finished_by_the_rerun(digest_run, tmp_path):
    """Killed after the comparison and the reduction, before the marker: the rerun keeps the
    report and the records (the states are gone and cannot be compared again)."""
    import shutil

    config, out, _ = digest_run
    copy = tmp_path / "run"
    shutil.copytree(out, copy)
    (copy / "stages" / "grpo-g8-verify.json").unlink()
    report = read_json(copy / "resume-grpo-g8.json")
    pipeline.run_pipeline(config, copy)
    assert read_json(copy / "resume-grpo-g8.json") == report
    marker = read_json(copy / "stages" / "grpo-g8-verify.json")
    assert set(marker["outputs"]) == {"resume-grpo-g8.json"} | {
        f"digests/grpo-g8-{mode}.json" for mode in MODES
    }
    assert not (copy / "aborted").exists()


def _fake_branch(out, branch="grpo"):
    """Three small 'states' and the learning records that list their SHA-256."""
    folder = RunFolder(out)
    for index, mode in enumerate(MODES):
        path = folder.state(branch, mode)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(bytes([index]) * (100 + index))
        save_json(folder.record(branch, mode), {"state": {"sha256": checkpoint.sha256_file(path)}})
    return folder


def test_a_reduction_cut_short_finishes_and_a_changed_state_is_refused(tmp_path):
    folder = _fake_branch(tmp_path)
    state = folder.state("grpo", "continuous")
    rel = state.relative_to(tmp_path).as_posix()
    entry = {"sha256": checkpoint.sha256_file(state), "bytes": state.stat().st_size}
    assert not state_digests.vouched_for(tmp_path, rel, entry)  # still there
    first = state_digests.reduce_branch_states(tmp_path, "grpo")
    assert not list((tmp_path / "checkpoints").glob("*.pt.gz"))
    assert state_digests.vouched_for(tmp_path, rel, entry)
    assert not state_digests.vouched_for(tmp_path, rel, dict(entry, bytes=1))
    # cut short: one state back (as if the removal had not happened), records all kept
    state.write_bytes(bytes([0]) * 100)
    assert state_digests.reduce_branch_states(tmp_path, "grpo") == first
    assert not state.exists()
    changed = _fake_branch(tmp_path / "other")
    changed.state("grpo", "resume").write_bytes(b"changed after it was recorded")
    with pytest.raises(ValueError, match="grpo-resume.pt.gz: its SHA-256 differs"):
        state_digests.reduce_branch_states(tmp_path / "other", "grpo")


def test_all_is_the_default_and_digest_is_checked():
    config = load_config("smoke")
    assert not state_digests.keeps_digests_only(config)
    with pytest.raises(Exception, match="storage.keep_states"):
        config.replaced(storage={"keep_states": "some"})


def test_the_one_sequence_no_cache_path_end_to_end(tmp_path):
    """The path the qwen profile takes (sampling.batched false, no KV cache), at smoke size,
    through GRPO's resume check: every comparison bit for bit equal; under keep_states digest
    the states are gone and their records stay."""
    config = _digest_config().replaced(
        sampling={"batched": False, "use_kv_cache": False}, grpo={"share_prompts": False}
    )
    out = tmp_path / "run"
    pipeline.run_pipeline(config, out, stop_after="grpo-verify")
    for branch in ("warmstart", "sft", "grpo"):
        assert read_json(out / f"resume-{branch}.json")["equal"] is True
    for mode in MODES:
        costs = read_json(out / "learning" / f"grpo-{mode}.json")["costs"]
        assert costs["batched"] is False and costs["kv_cache"] is False
        assert costs["responses_generated"] > 0
    assert not list((out / "checkpoints").glob("*.pt.gz"))
    assert len(list((out / "digests").glob("*.json"))) == 9
