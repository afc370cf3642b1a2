"""The `lab` command: the name table, settings checked against the lab, provenance, and
evidence that is never overwritten."""

import ast
import json
from pathlib import Path

import pytest

from verifiable_grpo import cli
from verifiable_grpo.part3 import labs

PART3 = Path(labs.__file__).parent
# the one flat lab module: the runner of the Try-this variants of several labs
FLAT_LABS = {"try_this"}


def test_every_settings_lab_resolves_and_has_settings():
    for name in labs.SETTINGS_LABS:
        settings, _ = labs.load_settings(name)
        assert callable(labs.lab_function(name)) and isinstance(settings, dict)


def test_every_lab_lives_in_its_folder_whose_docstring_names_it():
    for name, lab in labs.LABS.items():
        if lab.module in FLAT_LABS:
            continue
        folder, module = lab.module.split(".")
        assert folder.endswith("_lab") and (PART3 / folder / f"{module}.py").is_file(), name
        about = ast.get_docstring(ast.parse((PART3 / folder / "__init__.py").read_text()))
        # the folder's docstring says which module is which lab
        assert f"{module}:" in about and f"`lab {name}`" in about, f"{folder}/__init__.py"
    flat = {p.stem for p in PART3.glob("*.py")} & {lab.module for lab in labs.LABS.values()}
    assert flat == FLAT_LABS


def test_a_model_lab_has_no_settings_file_or_settings_record():
    for read in (labs.load_settings, labs.recorded):
        with pytest.raises(ValueError, match="lab sft takes its options on the command line"):
            read("sft")


def test_unknown_lab_and_unknown_setting(tmp_path):
    with pytest.raises(ValueError, match="unknown lab 'sft-lab'"):
        labs.lab_function("sft-lab")
    bad = tmp_path / "judge.yaml"
    bad.write_text("pairs: 400\nseeds: 3\n")
    with pytest.raises(ValueError, match=r"judge.yaml: seeds: unknown key; did you mean seed\?"):
        labs.load_settings("judge", bad)


def test_run_records_provenance_and_refuses_to_overwrite(tmp_path, capsys):
    assert cli.main(["lab", "fault-tree", "--out", str(tmp_path)]) == 0
    record = json.loads((tmp_path / "metrics.json").read_text())
    assert record["metrics"]["revised"]["two_gate"] == 1.0
    assert {"command", "git_commit", "config_sha256", "packages", "device", "wall_seconds"} <= set(
        record["provenance"]
    )
    assert record["provenance"]["config_path"] == "configs/part3/fault-tree.yaml"
    assert (
        record["provenance"]["command"]
        == f"python -m verifiable_grpo lab fault-tree --out {tmp_path} --threads 1"
    )
    assert cli.main(["lab", "fault-tree", "--out", str(tmp_path)]) == 2
    assert "never overwritten" in capsys.readouterr().err
    dest = tmp_path / "recorded.json"
    labs.export("fault-tree", tmp_path / "metrics.json", dest)
    with pytest.raises(ValueError, match="never overwritten"):
        labs.export("fault-tree", tmp_path / "metrics.json", dest)
    with pytest.raises(ValueError, match="another lab"):
        labs.export("judge", tmp_path / "metrics.json", tmp_path / "other.json")


@pytest.mark.parametrize("name", ["judge", "fault-tree", "dpo"])
def test_the_record_line_gives_the_command_and_the_recorded_time_only(name):
    line = labs.record_line(name)
    wall = labs.recorded(name)["provenance"]["wall_seconds"]
    took = f"{wall:.1f} s" if wall >= 0.1 else "under 0.1 s"
    assert f"lab {name} --export" in line and line.endswith(" in " + took)
    assert "commit" not in line and "thread" not in line
