"""Kill the smoke `run` at the worst moments, rerun the same command, and end where an
uninterrupted run ends: the same final states bit for bit, the same results.

One chain of processes (each killed at the next fault point, then the same command again)
covers: mid-SFT, inside a state write, between a crash state and its note, between a
record and the crash clean-up, between a record and its marker, mid-GRPO after an
iteration's evidence, after the final state, mid-inference, and SIGINT / SIGTERM.
"""

from __future__ import annotations

import signal

import pytest

from shared_helpers import run_cli
from verifiable_grpo.core import checkpoint
from verifiable_grpo.core.config import read_json

# (fault point[#nth][:signal], what the run must have left behind when it died)
CHAIN = [
    ("sft-after-update#3", "killed in the warm start, mid-epoch"),
    ("inside-state-write#2", "killed inside a state write"),
    ("crash-between-state-and-note#1", "killed between a crash state and its note"),
    ("after-record#1", "killed between a record and the crash clean-up"),
    ("before-marker#1", "killed between a stage's outputs and its marker"),
    ("sft-after-update#1:TERM", "SIGTERM during an SFT branch"),
    ("grpo-after-iteration#2", "killed after an iteration's evidence, before its checkpoint"),
    ("grpo-after-iteration#1:INT", "SIGINT during GRPO"),
    ("grpo-after-final-state#1", "killed after a final state, before its record"),
    ("inference-after-problem#70", "killed while the second policy's inference runs"),
]


def _signal_code(spec: str) -> int:
    name = spec.partition(":")[2]
    return 128 + int(getattr(signal, f"SIG{name}")) if name else -int(signal.SIGKILL)


def _temporaries(out):
    return [p for p in out.rglob(".tmp-*")]


def _comparable(results: dict) -> dict:
    """results.json without wall times, dates and provenance (they differ run to run)."""

    def strip(value):
        if isinstance(value, dict):
            return {
                k: strip(v)
                for k, v in value.items()
                if "seconds" not in k
                and k not in ("provenance", "finished_at", "labels_read_at", "generation")
            }
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return strip(results)


@pytest.fixture(scope="module")
def chained(smoke_reference, tmp_path_factory):
    out = tmp_path_factory.mktemp("smoke-crashed") / "run"
    # One process: a fault point counts its arrivals per process (test_side_by_side kills
    # a worker of a --workers 2 run). The reference ran with the default workers, so the
    # comparisons below also prove that both ways give the same bits.
    command = ["run", "--config", "smoke", "--out", str(out), "--workers", "1"]
    log = []
    for spec, what in CHAIN:
        result = run_cli(command, {"VERIFIABLE_GRPO_FAULT": spec})
        log.append(
            {
                "spec": spec,
                "what": what,
                "returncode": result.returncode,
                "stderr": result.stderr,
                "temporaries": _temporaries(out),
                "aborted": sorted(p.name for p in (out / "aborted").glob("*"))
                if (out / "aborted").is_dir()
                else [],
            }
        )
    final = run_cli(command)
    return {"out": out, "log": log, "final": final, "reference": smoke_reference}


def test_every_fault_stopped_the_run_where_intended(chained):
    for step in chained["log"]:
        assert step["returncode"] == _signal_code(step["spec"]), (
            step["spec"],
            step["stderr"][-2000:],
        )


def test_a_signal_stops_cleanly_with_one_line_saying_how_to_continue(chained):
    for step in chained["log"]:
        if ":" not in step["spec"]:
            continue
        lines = [line for line in step["stderr"].splitlines() if line.strip()]
        assert len(lines) == 1, step["stderr"]
        assert "stopped after" in lines[0] and "(saved)" in lines[0]
        assert "continue with: python -m verifiable_grpo run --config smoke" in lines[0]
        assert "Traceback" not in step["stderr"]
        assert step["temporaries"] == []  # nothing half-written under OUT


def test_a_kill_inside_a_write_leaves_only_a_temporary_file(chained):
    [step] = [s for s in chained["log"] if s["spec"].startswith("inside-state-write")]
    assert step["temporaries"], "the kill should have caught a write in flight"
    assert all(p.name.startswith(".tmp-") for p in step["temporaries"])
    assert _temporaries(chained["out"]) == []  # the rerun removed them


def test_the_rerun_finishes_every_stage(chained):
    final = chained["final"]
    assert final.returncode == 0, final.stderr[-3000:]
    assert "32/32 stages finished" in final.stdout


def test_final_states_equal_the_uninterrupted_run_bit_for_bit(chained):
    out, reference = chained["out"], chained["reference"]
    names = sorted(p.name for p in (reference / "checkpoints").glob("*.pt.gz"))
    assert names == sorted(p.name for p in (out / "checkpoints").glob("*.pt.gz"))
    assert len(names) == 15
    for name in names:
        a = checkpoint.load_state(reference / "checkpoints" / name)
        b = checkpoint.load_state(out / "checkpoints" / name)
        assert checkpoint.compare_states(a, b) == [], name
    for name in ("warmstart", "sft", "grpo", "grpo-g2", "grpo-g8"):
        assert read_json(out / f"resume-{name}.json")["equal"] is True


def test_results_equal_the_uninterrupted_run(chained):
    out, reference = chained["out"], chained["reference"]
    for name in ("results.json", "exercise/results.json"):
        assert _comparable(read_json(out / name)) == _comparable(read_json(reference / name))


def test_rollout_evidence_is_the_uninterrupted_runs_and_none_is_consumed_twice(chained):
    out, reference = chained["out"], chained["reference"]
    for path in sorted((reference / "rollouts").rglob("iteration-*.json")):
        mine = read_json(out / path.relative_to(reference))
        theirs = read_json(path)
        assert _comparable(mine) == _comparable(theirs), path.name
    state = checkpoint.load_state(out / "checkpoints" / "grpo-continuous.pt.gz")
    ids = state["consumed_rollout_ids"]
    assert len(ids) == len(set(ids))


def test_half_done_evidence_is_kept_aside_with_a_note(chained):
    aborted = chained["out"] / "aborted"
    notes = [read_json(p) for p in aborted.glob("*/NOTE.json")]
    assert notes, "the kills must have left evidence to move aside"
    moved = {f for n in notes for f in n["files"]}
    # the GRPO iteration whose checkpoint never came, and the final state without record
    assert any(f.startswith("rollouts/grpo-continuous/iteration-") for f in moved)
    assert any(f.endswith(".pt.gz") for f in moved)
    for note in notes:
        assert note["reason"] and note["files"]


def test_complete_inference_was_reused_not_redone(chained):
    out = chained["out"]
    marker = read_json(out / "stages" / "infer-warmstart.json")
    assert "inference/warmstart/audit.json" in marker["outputs"]
    moved = {f for p in (out / "aborted").glob("infer-*/NOTE.json") for f in read_json(p)["files"]}
    assert moved == {"inference/sft/greedy.json"}  # the half-written policy only
