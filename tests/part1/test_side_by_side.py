"""Stages side by side (`run --workers N`): the order ready stages start in, a stage asking
for more threads than one running alone, errors and dead workers reported, and a killed
worker's run continued to the uninterrupted run's bits."""

from __future__ import annotations

import pytest

from shared_helpers import run_cli
from verifiable_grpo.core.config import load_config, read_json
from verifiable_grpo.part1 import pipeline
from verifiable_grpo.part1.side_by_side import (
    StageGraph,
    StageHooks,
    remaining_work,
    run_side_by_side,
)

DIAMOND = {"a": set(), "b": {"a"}, "c": {"a"}, "d": {"b", "c"}}


def test_remaining_work_is_the_costliest_chain_below_each_stage():
    rank = remaining_work(list(DIAMOND), DIAMOND, {"a": 1.0, "b": 5.0, "c": 2.0, "d": 1.0})
    assert rank == {"d": 1.0, "c": 3.0, "b": 6.0, "a": 7.0}


class Journal:
    """start/end callbacks that log what ran when; each task returns its 'seconds'."""

    def __init__(self, results=None):
        self.events, self.results = [], results or {}

    def start(self, name):
        self.events.append(("start", name))
        return name

    def end(self, name, token, seconds):
        assert token == name
        self.events.append(("end", name, seconds))

    def task(self, name):  # a builtin runs in the spawned worker: float("2.5") -> 2.5
        return float, (self.results.get(name, "1.5"),)


def _run(journal, needs, workers, threads=None, cost=None, finished=()):
    order = list(needs)
    graph = StageGraph(
        order, needs, threads or {n: 1 for n in order}, cost or {n: 1.0 for n in order}
    )
    hooks = StageHooks(journal.start, journal.end, journal.task)
    run_side_by_side(graph, set(finished), workers, hooks)


def test_stages_start_when_their_needs_are_done_costliest_chain_first():
    journal = Journal({"b": "4.0"})
    _run(journal, DIAMOND, workers=1, cost={"a": 1.0, "b": 1.0, "c": 3.0, "d": 1.0})
    starts = [e[1] for e in journal.events if e[0] == "start"]
    assert starts == ["a", "c", "b", "d"]  # c heads the costlier chain
    assert ("end", "b", 4.0) in journal.events  # the worker's seconds reach the marker


def test_finished_stages_are_skipped_and_a_wide_stage_runs_alone():
    journal = Journal()
    needs = {"a": set(), "wide": set(), "b": set(), "c": {"wide"}}
    _run(
        journal,
        needs,
        workers=2,
        threads={"a": 1, "wide": 2, "b": 1, "c": 1},
        cost={"a": 1.0, "wide": 5.0, "b": 1.0, "c": 1.0},
        finished={"a"},
    )
    assert ("start", "a") not in journal.events
    running = set()
    for event in journal.events:
        if event[0] == "start":
            assert "wide" not in running and (event[1] != "wide" or not running)
            running.add(event[1])
        else:
            running.discard(event[1])
    assert journal.events[0] == ("start", "wide")  # the costliest chain, alone


def test_a_failing_stage_ends_the_run_after_the_stages_in_flight():
    journal = Journal({"b": "not a number"})
    with pytest.raises(ValueError, match="could not convert"):
        _run(journal, {"a": set(), "b": set(), "c": {"b"}}, workers=2)
    assert ("end", "a", 1.5) in journal.events  # in flight beside b: finished, kept
    assert ("start", "c") not in journal.events  # never started after the failure


def test_unknown_needs_and_bad_worker_counts_are_refused(tmp_path):
    with pytest.raises(ValueError, match="do not exist"):
        _run(Journal(), {"a": {"ghost"}}, workers=2)
    with pytest.raises(ValueError, match="workers must be a positive integer"):
        pipeline.run_pipeline(load_config("smoke"), tmp_path, workers=0)
    result = run_cli(["run", "--config", "smoke", "--out", str(tmp_path), "--workers", "0"])
    assert result.returncode == 2 and "must be a positive integer" in result.stderr


def test_real_stages_need_what_they_read():
    config = load_config("smoke")
    stages = pipeline.build_stages(config)
    needs = pipeline.stage_needs(stages)
    assert needs["grpo-continuous"] == needs["sft-interrupt"] == {"warmstart-resume"}
    assert needs["grpo-resume"] == {"grpo-interrupt"}
    assert needs["infer-sft"] == {"sft-resume"}  # inference as soon as weights exist
    assert needs["evaluate"] == {"infer-warmstart", "infer-sft", "infer-grpo"}
    assert needs["infer-grpo-g8"] == {"exercise-protect", "grpo-g8-resume"}
    before = [s.name for s in stages][: [s.name for s in stages].index("exercise-protect")]
    assert needs["exercise-protect"] == set(before)  # the exercise starts after Part I
    assert needs["grpo-g8-interrupt"] == {"exercise-protect"}
    # the warm start and its evaluation keep the recorded threads (the lock and the sweep
    # build on those exact weights and scores)
    assert [s.name for s in stages if s.threads == "warmstart"] == [
        f"warmstart-{m}" for m in ("continuous", "interrupt", "resume", "verify")
    ] + ["infer-warmstart"]


def test_stages_write_only_under_their_claims(smoke_reference):
    """Side by side, a new file is credited to the stage whose claims cover it: every file of
    an uninterrupted run's markers must lie under its own stage's claims."""
    config = load_config("smoke")
    stages = {s.name: s for s in pipeline.build_stages(config)}
    for path in sorted((smoke_reference / "stages").glob("*.json")):
        marker = read_json(path)
        stray = [
            rel
            for rel in marker["outputs"]
            if pipeline._owner(rel, [stages[marker["stage"]]]) is None
        ]
        assert stray == [], marker["stage"]


def test_a_killed_worker_is_reported_and_the_rerun_ends_as_the_uninterrupted_run(
    smoke_reference, tmp_path
):
    out = tmp_path / "run"
    command = ["run", "--config", "smoke", "--out", str(out), "--workers", "2"]
    killed = run_cli(command, {"VERIFIABLE_GRPO_FAULT": "grpo-after-iteration#2"})
    assert killed.returncode == 2, killed.stderr[-2000:]
    assert "a worker process died" in killed.stderr
    assert "stages grpo-" in killed.stderr or ", grpo-" in killed.stderr
    assert "Run the same command again" in killed.stderr
    final = run_cli(command)
    assert final.returncode == 0, final.stderr[-2000:]
    for branch in ("warmstart", "sft", "grpo", "grpo-g2", "grpo-g8"):
        assert read_json(out / f"resume-{branch}.json")["equal"] is True
        for mode in ("continuous", "resume"):
            ours = read_json(out / "learning" / f"{branch}-{mode}.json")["final_model_digest"]
            theirs = read_json(smoke_reference / "learning" / f"{branch}-{mode}.json")
            assert ours == theirs["final_model_digest"], (branch, mode)
    ours, theirs = read_json(out / "results.json"), read_json(smoke_reference / "results.json")

    def counts(results, policy):
        return {
            (measure, split): (v["correct"], v["responses"])
            for measure in ("greedy_pass_at_1", "per_draw_success")
            for split, v in results["policies"][policy][measure].items()
        }

    for policy in ("warmstart", "sft", "grpo"):
        assert counts(ours, policy) == counts(theirs, policy)
