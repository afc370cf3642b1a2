"""The `lab` command: its table, clear errors before any model loads, records and export."""

import json

import pytest

from verifiable_grpo import cli
from verifiable_grpo.core import files
from verifiable_grpo.part3 import lab_command, labs
from verifiable_grpo.part3.smollm2 import records


def test_every_lab_has_the_one_entry_point():
    import inspect

    assert set(labs.SETTINGS_LABS) | set(labs.MODEL_LABS) == set(labs.LABS)
    for name, lab in labs.LABS.items():
        module = labs.lab_module(name)
        parameters = inspect.signature(module.run_lab).parameters
        # run_lab takes its settings object (a model lab also its run folder and model cache),
        # whose class is the row's and sits beside it, in the lab's folder
        expected = ["out", "settings", "cache"] if lab.command_line else ["settings"]
        assert list(parameters) == expected, name
        assert parameters["settings"].annotation in (lab.settings, lab.settings.__name__), name
        assert lab.settings.__module__.rsplit(".", 1)[0] == module.__name__.rsplit(".", 1)[0]
        if lab.command_line:
            assert callable(module.summary), name


def test_the_command_line_offers_every_lab_of_the_table():
    parser = cli.build_parser()
    for name in labs.LABS:
        assert parser.parse_args(["lab", name]).name == name
    with pytest.raises(SystemExit):
        parser.parse_args(["lab", "sft-lab"])
    assert labs.MODEL_LABS == (
        "sft",
        "sft-past-turn",
        "lora",
        "suite",
        "suite-sampled",
        "suite-families",
        "dpo-smollm2",
    )


def test_a_model_labs_summary_line_from_its_record():
    from verifiable_grpo.part3.suite_lab import greedy

    p = records.load_recorded("suite")["paired"]
    line = greedy.summary(records.load_recorded("suite"))
    assert line.startswith("paired difference (after SFT - before) ")
    assert f"discordant {p['only_second']}/{p['only_first']}" in line


def test_the_suite_without_a_fine_tuned_policy_says_what_to_run(tmp_path, capsys):
    code = cli.main(
        ["lab", "suite", "--out", str(tmp_path / "s"), "--policy", str(tmp_path / "none")]
    )
    assert code == 2
    assert "lab sft" in capsys.readouterr().err


def test_options_of_the_other_kind_of_lab_are_refused(tmp_path, capsys):
    assert cli.main(["lab", "fault-tree", "--full", "--out", str(tmp_path / "f")]) == 2
    assert "--full" in capsys.readouterr().err and not (tmp_path / "f").exists()
    # a settings lab with a key of the same name (dpo's steps) still reads it from its YAML
    assert cli.main(["lab", "dpo", "--steps", "5", "--out", str(tmp_path / "d")]) == 2
    assert "--steps belong(s) to the model labs" in capsys.readouterr().err
    assert cli.main(["lab", "lora", "--settings", "x.yaml", "--out", str(tmp_path / "l")]) == 2
    assert "command line" in capsys.readouterr().err


def test_a_record_carries_provenance_and_exports_once(tmp_path):
    cache = tmp_path / "cache"
    files.save_json(
        cache / "source.json", {"gguf_file": "x.gguf", "wheel": "w", "gguf_sha256": "0" * 64}
    )
    out = tmp_path / "run"
    records.write(out, "lora", {"rank": 8}, {"trainable": 5}, started=records.start(), cache=cache)
    record = records.finished(out, "lora")
    assert record["trainable"] == 5 and record["settings"] == {"rank": 8}
    for key in ("command", "git_commit", "packages", "device", "settings_sha256", "wall_seconds"):
        assert key in record["provenance"], key
    assert record["provenance"]["model"]["gguf_file"] == "x.gguf"
    with pytest.raises(FileExistsError):  # evidence is never overwritten
        records.write(
            out, "lora", {"rank": 8}, {"trainable": 6}, started=records.start(), cache=cache
        )
    dest = tmp_path / "recorded"
    target = records.export(out, "lora", dest)
    assert json.loads(target.read_text()) == record
    assert records.export(out, "lora", dest) == target  # the same file again is fine
    target.write_text("{}")
    with pytest.raises(FileExistsError, match="another recorded run"):
        records.export(out, "lora", dest)
    with pytest.raises(FileNotFoundError, match="lab sft"):
        records.export(out, "sft", dest)


@pytest.fixture
def threads_seen_by_a_stand_in_lab(monkeypatch):
    """Registers a model lab named "stand-in" that records torch's thread count when run."""
    import sys
    import types

    import torch

    seen = []
    stand_in = types.ModuleType("verifiable_grpo.part3.stand_in_lab")
    stand_in.summary = lambda metrics: f"stand-in ran {metrics['n']}"
    monkeypatch.setitem(sys.modules, stand_in.__name__, stand_in)
    stand_in.run_lab = lambda out, settings, cache=None: (
        seen.append(torch.get_num_threads()) or {"n": 1}
    )
    settings = labs.LABS["sft-past-turn"].settings  # no options
    row = labs.Lab("stand_in_lab", "test", settings, command_line=True)
    monkeypatch.setitem(labs.LABS, "stand-in", row)
    return seen


def test_a_model_lab_runs_with_the_requested_threads_and_restores_the_callers(
    threads_seen_by_a_stand_in_lab, tmp_path
):
    import types

    import torch

    from verifiable_grpo.part3 import model_labs

    seen = threads_seen_by_a_stand_in_lab
    previous = torch.get_num_threads()
    target = 1 if previous != 1 else 2
    args = types.SimpleNamespace(
        name="stand-in", out=str(tmp_path / "lab"), threads=target, export=False
    )
    assert model_labs.command(args) == 0
    assert seen == [target] and torch.get_num_threads() == previous


def test_a_new_model_lab_row_is_run_and_prints_its_summary_line(
    threads_seen_by_a_stand_in_lab, tmp_path, capsys
):
    import types

    args = types.SimpleNamespace(
        name="stand-in", out=str(tmp_path / "lab"), threads=None, export=False
    )
    assert lab_command.command_lab(args) == 0  # the row alone routes it to the model-lab runner
    assert capsys.readouterr().out == "stand-in ran 1\n"


def test_by_default_a_model_lab_keeps_torchs_threads_and_a_synthetic_lab_takes_one(
    threads_seen_by_a_stand_in_lab, monkeypatch, tmp_path
):
    import types

    import torch

    from verifiable_grpo.part3 import model_labs

    # the parser leaves the choice to the kind of lab
    parsed = cli.build_parser().parse_args(["lab", "sft"])
    assert parsed.threads is None
    seen = threads_seen_by_a_stand_in_lab
    previous = torch.get_num_threads()
    args = types.SimpleNamespace(
        name="stand-in", out=str(tmp_path / "lab"), threads=None, export=False
    )
    assert model_labs.command(args) == 0 and seen == [previous]
    # a synthetic lab asked for nothing runs (and records) one thread
    ran = []
    monkeypatch.setattr(
        labs,
        "run",
        lambda name, out, settings, threads, command: (
            ran.append((threads, command)) or tmp_path / "metrics.json"
        ),
    )
    assert cli.main(["lab", "fault-tree", "--out", str(tmp_path / "f")]) == 0
    assert ran[0][0] == 1 and ran[0][1][-2:] == ["--threads", "1"]


def test_each_model_lab_option_is_declared_once_as_a_field_of_its_settings_class():
    import dataclasses

    from verifiable_grpo.core.settings_schema import flag

    parser = cli.build_parser()
    lab = parser._subparsers._group_actions[0].choices["lab"]
    # the flags the lab command takes besides its own (run folder, settings file, threads,
    # export, model cache) are exactly the model labs' settings fields, with their meaning
    own = {"help", "name", "out", "settings", "threads", "export", "export_only", "cache"}
    flags = {a.dest: a for a in lab._actions if a.dest not in own}
    fields = {
        f.name: f for name in labs.MODEL_LABS for f in dataclasses.fields(labs.LABS[name].settings)
    }
    assert set(flags) == set(fields)
    for name, field in fields.items():
        assert flags[name].option_strings == [flag(name)]
        assert field.metadata["meaning"] in flags[name].help
    # a field added to a lab's settings class becomes its flag, with nothing else to edit
    assert parser.parse_args(["lab", "sft", "--steps", "4"]).steps == "4"
