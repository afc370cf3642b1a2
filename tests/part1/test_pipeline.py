"""The one-command pipeline: stage markers, continuing without redoing work, refusing to
write over the remains of an interrupted stage; then `run` end to end on the smoke profile."""

import os
import shutil
import time

import pytest

from verifiable_grpo.core.config import load_config, read_json, repo_root
from verifiable_grpo.part1 import pipeline
from verifiable_grpo.part1 import report as report_module
from verifiable_grpo.part1.pipeline import HalfDoneStageError, Stage


# ------------------------------------------------------------------ stage machinery
class Toy:
    """Three stages writing small files; counts how often each ran."""

    def __init__(self):
        self.calls = {"a": 0, "b": 0, "c": 0}
        self.fail_c = False

    def stages(self, config):
        def a(config, out):
            self.calls["a"] += 1
            (out / "a").mkdir()
            (out / "a" / "one.txt").write_text("a")

        def b(config, out):
            self.calls["b"] += 1
            (out / "b.txt").write_text("b")

        def c(config, out):
            self.calls["c"] += 1
            (out / "c-partial.txt").write_text("half")
            if self.fail_c:
                raise KeyboardInterrupt("interrupted")
            (out / "c-done.txt").write_text("c")

        return [
            Stage("a", "first", a, ["a/*"]),
            Stage("b", "first", b, ["b.txt"]),
            Stage("c", "second", c, ["c-*"]),
        ]


@pytest.fixture
def toy(monkeypatch):
    toy = Toy()
    monkeypatch.setattr(pipeline, "build_stages", toy.stages)
    return toy


@pytest.fixture
def config():
    return load_config("smoke")


def provenance_files_listed(recorded, names) -> bool:
    """Every exported file except provenance.json and state-sizes.json carries a sha256."""
    listed = set(read_json(recorded / "provenance.json")["files"])
    return names - {"provenance.json", "state-sizes.json"} <= listed


def test_stages_run_once_and_rerun_skips_them(toy, config, tmp_path):
    timings = pipeline.run_pipeline(config, tmp_path)
    assert toy.calls == {"a": 1, "b": 1, "c": 1}
    marker = read_json(tmp_path / "stages" / "a.json")
    assert list(marker["outputs"]) == ["a/one.txt"]
    assert len(marker["outputs"]["a/one.txt"]["sha256"]) == 64
    assert set(timings["stages"]) == {"a", "b", "c"}
    assert set(timings["groups"]) == {"first", "second"}
    assert read_json(tmp_path / "timings.json")["finished_stages"] == 3
    again = pipeline.run_pipeline(config, tmp_path)
    assert toy.calls == {"a": 1, "b": 1, "c": 1}
    assert again["stages"] == timings["stages"]


def test_run_continues_from_the_last_finished_stage(toy, config, tmp_path):
    pipeline.run_pipeline(config, tmp_path, stop_after="a")
    assert toy.calls == {"a": 1, "b": 0, "c": 0}
    pipeline.run_pipeline(config, tmp_path)
    assert toy.calls == {"a": 1, "b": 1, "c": 1}
    with pytest.raises(ValueError, match="unknown stage"):
        pipeline.run_pipeline(config, tmp_path, stop_after="z")


def test_a_half_done_stage_is_redone_and_its_remains_kept_aside(toy, config, tmp_path):
    toy.fail_c = True
    with pytest.raises(KeyboardInterrupt):
        pipeline.run_pipeline(config, tmp_path)
    toy.fail_c = False
    pipeline.run_pipeline(config, tmp_path)
    assert toy.calls == {"a": 1, "b": 1, "c": 2}
    [aborted] = (tmp_path / "aborted").iterdir()
    assert aborted.name.startswith("c-")
    assert (aborted / "c-partial.txt").read_text() == "half"  # moved, never deleted
    note = read_json(aborted / "NOTE.json")
    assert note["stage"] == "c" and note["files"] == ["c-partial.txt"]
    assert set(read_json(tmp_path / "stages" / "c.json")["outputs"]) == {
        "c-partial.txt",
        "c-done.txt",
    }


def test_files_no_stage_accounts_for_are_refused(toy, config, tmp_path):
    pipeline.run_pipeline(config, tmp_path, stop_after="a")
    (tmp_path / "stray.txt").write_text("someone else's")
    with pytest.raises(HalfDoneStageError, match="no stage of this pipeline accounts for") as err:
        pipeline.run_pipeline(config, tmp_path)
    assert "stray.txt" in str(err.value) and toy.calls["b"] == 0
    (tmp_path / "stray.txt").unlink()
    (tmp_path / "a" / "extra.txt").write_text("added to a finished stage")
    with pytest.raises(HalfDoneStageError, match="extra.txt"):
        pipeline.run_pipeline(config, tmp_path)


def test_temporary_files_of_a_cut_write_are_removed(toy, config, tmp_path, capsys):
    pipeline.run_pipeline(config, tmp_path, stop_after="a")
    (tmp_path / "a" / ".tmp-b.txt.x1y2").write_text("half a write")
    pipeline.run_pipeline(config, tmp_path)
    assert not (tmp_path / "a" / ".tmp-b.txt.x1y2").exists()
    assert "removed 1 temporary file" in capsys.readouterr().out


def test_complete_outputs_without_a_marker_are_adopted(monkeypatch, config, tmp_path):
    calls = []

    def work(config, out):
        calls.append(1)
        (out / "w.txt").write_text("done")

    stage = Stage("w", "g", work, ["w.txt"], finished=lambda out: (out / "w.txt").is_file())
    monkeypatch.setattr(pipeline, "build_stages", lambda config: [stage])
    (tmp_path / "w.txt").write_text("done")  # as if killed between the file and its marker
    pipeline.run_pipeline(config, tmp_path)
    marker = read_json(tmp_path / "stages" / "w.json")
    assert calls == [] and "adopted" in marker and list(marker["outputs"]) == ["w.txt"]


def test_changed_evidence_of_a_finished_stage_is_refused(toy, config, tmp_path):
    pipeline.run_pipeline(config, tmp_path, stop_after="b")
    path = tmp_path / "b.txt"
    stat = path.stat()
    path.write_text("B")  # same size, mtime put back:
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # only the SHA-256 can tell
    with pytest.raises(HalfDoneStageError, match="changed after stage b finished"):
        pipeline.run_pipeline(config, tmp_path)
    path.unlink()
    with pytest.raises(HalfDoneStageError, match="missing"):
        pipeline.run_pipeline(config, tmp_path)


def test_a_stage_may_not_alter_earlier_evidence(monkeypatch, config, tmp_path):
    def first(config, out):
        (out / "x.txt").write_text("x")

    def second(config, out):
        time.sleep(0.01)
        (out / "x.txt").write_text("overwritten")

    monkeypatch.setattr(
        pipeline, "build_stages", lambda config: [Stage("x", "g", first), Stage("y", "g", second)]
    )
    with pytest.raises(RuntimeError, match="changed or removed earlier evidence"):
        pipeline.run_pipeline(config, tmp_path)


def test_a_run_folder_holds_one_configuration(toy, config, tmp_path):
    pipeline.run_pipeline(config, tmp_path, stop_after="a")
    other = config.replaced(evaluation={"draws": 2})
    with pytest.raises(HalfDoneStageError, match="invalidates the finished stages a"):
        pipeline.run_pipeline(other, tmp_path)


def test_a_change_no_finished_stage_depends_on_continues(monkeypatch, config, tmp_path):
    stages = [
        Stage("d", "g", lambda c, o: (o / "d.txt").write_text("d"), ["d.txt"], ("data",)),
        Stage(
            "e", "g", lambda c, o: (o / "e.txt").write_text("e"), ["e.txt"], ("data", "evaluation")
        ),
    ]
    monkeypatch.setattr(pipeline, "build_stages", lambda config: stages)
    pipeline.run_pipeline(config, tmp_path, stop_after="d")
    other = config.replaced(evaluation={"draws": 2})  # only stage e (unfinished) reads it
    pipeline.run_pipeline(other, tmp_path)
    assert (tmp_path / "e.txt").is_file()
    third = other.replaced(data={"seed": other.data.seed + 1})
    with pytest.raises(HalfDoneStageError, match="invalidates the finished stages d, e"):
        pipeline.run_pipeline(third, tmp_path)


def test_real_stages_depend_on_what_they_read(config):
    stages = {s.name: s for s in pipeline.build_stages(config)}
    assert pipeline.stage_sections(stages["warmstart-continuous"], config) == sorted(
        ["seed", "device", "model", "data", "tokens", "warmstart", "threads"]
    )
    assert "evaluation" not in pipeline.stage_sections(stages["grpo-resume"], config)
    assert "exercise" in pipeline.stage_sections(stages["grpo-g2-resume"], config)
    assert "profile" not in pipeline.stage_sections(stages["report"], config)


def test_one_process_per_run_folder(tmp_path):
    import subprocess
    import sys

    from verifiable_grpo.core import runlock

    with runlock.locked(tmp_path, "test holder"):
        with pytest.raises(runlock.RunFolderBusyError, match=f"PID {os.getpid()}.*test holder"):
            with runlock.locked(tmp_path):
                pass
    # a holder that died (kill -9) leaves its record behind; the next run takes over
    code = (
        "import os, sys; from verifiable_grpo.core import runlock\n"
        "with runlock.locked(sys.argv[1], 'doomed'): os.kill(os.getpid(), 9)"
    )
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=False)
    with runlock.locked(tmp_path) as lock:
        assert lock["took_over"]["command"] == "doomed"


def test_real_stage_list_names_every_branch_and_mode(config):
    names = [s.name for s in pipeline.build_stages(config)]
    assert names[:2] == ["data", "learning-view"]
    for branch in ("warmstart", "sft", "grpo", "grpo-g2", "grpo-g8"):
        assert [f"{branch}-{m}" for m in ("continuous", "interrupt", "resume", "verify")] == [
            n for n in names if n.startswith(branch + "-") and n.count("-") == branch.count("-") + 1
        ]
    assert (
        names.index("evaluate")
        < names.index("exercise-protect")
        < names.index("grpo-g2-continuous")
    )
    assert names[-3:] == ["exercise-evaluate", "exercise-summary", "report"]


# ------------------------------------------------------------------ end to end (smoke)
def _smoke_config():
    """The smoke profile as it is: it needs the trained tiny base in data/tiny-base."""
    if not (repo_root() / "data" / "tiny-base" / "config.json").is_file():
        pytest.skip(
            "the trained tiny base (data/tiny-base/config.json) is not committed yet; "
            "the smoke profile runs on it"
        )
    return load_config("smoke")


def test_run_end_to_end_on_the_smoke_profile(smoke_reference, tmp_path):
    config = _smoke_config()
    out = tmp_path / "run"
    shutil.copytree(smoke_reference, out)
    timings = read_json(out / "timings.json")
    stages = pipeline.build_stages(config)
    assert timings["finished_stages"] == len(stages)
    assert not (out / "crash").exists() or not any((out / "crash").iterdir())
    assert not (out / "aborted").exists()
    results = read_json(out / "results.json")
    draws, problems = config["evaluation"]["draws"], config["evaluation"]["problems"]
    for policy in ("warmstart", "sft", "grpo"):
        entry = results["policies"][policy]
        assert entry["greedy_pass_at_1"]["ALL"]["responses"] == problems
        assert entry["per_draw_success"]["ALL"]["responses"] == problems * draws
    summary = read_json(out / "exercise" / "group-size.json")
    g2, g8 = summary["budgets"]["grpo-g2"], summary["budgets"]["grpo-g8"]
    assert g2["updates"] == g8["updates"] and g2["prompts"] == g8["prompts"]
    assert g8["rollouts"] == 4 * g2["rollouts"]
    for branch in ("warmstart", "sft", "grpo", "grpo-g2", "grpo-g8"):
        assert read_json(out / f"resume-{branch}.json")["equal"] is True
    report = (out / "report.md").read_text()
    assert "greedy ALL" in report and "not measured by this project" in report
    markers = {p.name: p.stat().st_mtime_ns for p in (out / "stages").iterdir()}

    again = pipeline.run_pipeline(config, out)  # continues: nothing to redo
    assert again["stages"] == timings["stages"]
    assert {p.name: p.stat().st_mtime_ns for p in (out / "stages").iterdir()} == markers

    recorded = report_module.export_recorded(out, tmp_path / "recorded", config)
    names = {p.relative_to(recorded).as_posix() for p in recorded.rglob("*") if p.is_file()}
    assert {
        "results.json",
        "provenance.json",
        "state-sizes.json",
        "timings.json",
        "resume-grpo.json",
        "learning/grpo-continuous.json",
        "learning/sft-continuous.json",
        "exercise/group-size.json",
    } <= names
    assert not [n for n in names if n.endswith(".pt.gz")]  # no resume states
    assert {n for n in names if n.endswith(".safetensors")} == {
        "policies/warmstart.safetensors",
        "policies/grpo.safetensors",
    }
    assert {"scores/warmstart-sample.json", "scores/grpo-sample.json"} <= names
    # per-problem greedy answers too, so chapter 8 can pair greedy pass@1 problem by problem
    assert {
        "scores/warmstart-greedy.json",
        "scores/sft-greedy.json",
        "scores/grpo-greedy.json",
    } <= names
    assert provenance_files_listed(recorded, names)
    provenance = read_json(recorded / "provenance.json")
    assert provenance["dataset_sha256"] == results["dataset_sha256"]
    assert provenance["run_provenance"]["packages"]["torch"]
    with pytest.raises(FileExistsError):
        report_module.export_recorded(out, recorded, config)

    (out / "stages" / "report.json").unlink()  # as if killed before the report's marker
    pipeline.run_pipeline(config, out)  # redone; the old report kept aside
    assert [p.name for p in (out / "aborted").glob("report-*/report.md")] == ["report.md"]
