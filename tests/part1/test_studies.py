"""The STUDIES table: every recorded path in the package belongs to a study or is listed as
not one, every study is recorded or says it has not run, each record agrees with its
declaration, and the `study` verb lists, checks and refuses a tampered record."""

from __future__ import annotations

import ast
import importlib
import json
import re
import shutil
from pathlib import Path

import pytest

import verifiable_grpo
from shared_helpers import run_cli
from verifiable_grpo.core.config import repo_root
from verifiable_grpo.part1 import studies, study_command

PACKAGE = Path(verifiable_grpo.__file__).parent
RECORDED_NAME = re.compile(r"^RECORDED(_[A-Z]+)?$")


def _path_value(node: ast.expr) -> str | None:
    """A constant path expression's value ("a/b", Path("a/b"), Path("a") / "b"), else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Path":
        parts = [_path_value(a) for a in node.args]
        return "/".join(parts) if parts and None not in parts else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        left, right = _path_value(node.left), _path_value(node.right)
        return f"{left}/{right}" if left and right else None
    return None


def recorded_constants() -> dict[str, str]:
    """'module.NAME' -> path, for every module-level RECORDED* path in the package."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(PACKAGE).with_suffix("").parts)
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                name = getattr(node.targets[0], "id", "")
                value = _path_value(node.value)
                if RECORDED_NAME.match(name) and value and "recorded" in value:
                    found[f"{module}.{name}"] = value
    return found


def _reached(constant: str, path: str) -> bool:
    module = constant.rsplit(".", 1)[0]
    return any(
        study.module == module
        and any(f == path or f.startswith(path + "/") for f in study.recorded)
        for study in studies.STUDIES.values()
    )


def _listed(constant: str) -> bool:
    return constant in studies.NOT_STUDIES or constant.rsplit(".", 1)[0] in studies.NOT_STUDIES


def test_the_scan_finds_the_recorded_constants_it_must():
    found = recorded_constants()
    assert found["part1.band_study.RECORDED"] == "data/recorded/band"
    assert found["book.notebook.RECORDED"] == "data/recorded"  # Path("data") / "recorded"
    assert "part1.fixed_prompts.RECORDED_SETTING" not in found  # a setting, not a path


def test_every_recorded_path_belongs_to_a_study_or_is_listed_as_not_one():
    found = recorded_constants()
    stray = [f"{c} = {p!r}" for c, p in found.items() if not (_reached(c, p) or _listed(c))]
    assert not stray, (
        "a RECORDED path no study reaches; add a STUDIES row or a NOT_STUDIES line:\n"
        + "\n".join(stray)
    )
    stale = [
        k for k in studies.NOT_STUDIES if not any(c == k or c.startswith(k + ".") for c in found)
    ]
    assert not stale, f"NOT_STUDIES names what the package no longer has: {stale}"
    both = [c for c, p in found.items() if _reached(c, p) and _listed(c)]
    assert not both, f"a study's record listed as not a study: {both}"


@pytest.mark.parametrize("name", list(studies.STUDIES))
def test_each_study_is_recorded_or_says_not_run(name):
    study = studies.STUDIES[name]
    assert study.name == name
    assert (repo_root() / study.chapter).is_file()
    assert importlib.util.find_spec(f"verifiable_grpo.{study.module}") is not None
    assert studies.state(name) in ("recorded", studies.NOT_RUN), studies.state(name)
    protocol = studies.protocol(name)
    assert all(callable(getattr(protocol, f, None)) for f in studies.PROTOCOL)
    if studies.state(name) == studies.NOT_RUN:
        with pytest.raises(FileNotFoundError, match=f"{name}: not run"):
            studies.recorded(name)


@pytest.mark.parametrize("name", list(studies.STUDIES))
def test_each_declaration_is_where_its_row_says(name):
    declared = studies.STUDIES[name].declared
    if declared.startswith("configs/"):
        assert (repo_root() / declared).is_file()
    else:
        module, constant = declared.rsplit(".", 1)
        assert hasattr(importlib.import_module(f"verifiable_grpo.{module}"), constant)


@pytest.mark.parametrize("name", list(studies.STUDIES))
def test_each_record_agrees_with_its_declaration(name):
    if studies.state(name) == studies.NOT_RUN:
        pytest.skip(f"{name}: not run")
    assert studies.check(name) == []


def test_a_record_that_departs_from_its_declaration_is_named(monkeypatch):
    from verifiable_grpo.part1 import band_study

    record = studies.recorded("band")
    monkeypatch.setitem(record["setting"], "learning_rate", 1e-5)
    monkeypatch.setattr(studies.protocol("band"), "read", staticmethod(lambda: record))
    (problem,) = studies.check("band")
    assert problem.startswith("band: setting: recorded") and str(band_study.SETTING) in problem


def test_an_unknown_study_is_refused_naming_the_choices():
    with pytest.raises(ValueError, match="unknown study 'nope'"):
        studies.get("nope")


def test_study_list_prints_every_study_and_its_state():
    done = run_cli(["study", "list"])
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [line.split()[0] for line in lines] == list(studies.STUDIES)
    assert lines == study_command.list_lines()


def test_study_check_passes_on_the_record_and_refuses_a_tampered_copy(tmp_path):
    done = run_cli(["study", "check", "band"])
    assert done.returncode == 0 and "band: the record agrees" in done.stdout, done.stderr
    # a copy of the repository's inputs whose band record says another learning rate
    (tmp_path / "configs").symlink_to(repo_root() / "configs")
    record = tmp_path / "data" / "recorded" / "band" / "band.json"
    record.parent.mkdir(parents=True)
    shutil.copyfile(repo_root() / "data" / "recorded" / "band" / "band.json", record)
    tampered = json.loads(record.read_text())
    tampered["setting"]["learning_rate"] = 1e-5
    record.write_text(json.dumps(tampered))
    refused = run_cli(["study", "check", "band"], env_extra={"VERIFIABLE_GRPO_ROOT": str(tmp_path)})
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert refused.stderr.count("\n") == 1 and "band: setting: recorded" in refused.stderr
    # and a study with no record there says so, in one line too
    missing = run_cli(
        ["study", "check", "fresh"], env_extra={"VERIFIABLE_GRPO_ROOT": str(tmp_path)}
    )
    assert missing.returncode == 2 and "fresh: not run" in missing.stderr
    assert missing.stderr.count("\n") == 1


def test_a_study_action_without_a_name_is_refused():
    done = run_cli(["study", "check"])
    assert done.returncode == 2 and "name a study" in done.stderr
    assert done.stderr.count("\n") == 1


LEARN_ARGV = {  # study -> the `learn` command it runs through, and values set after parsing
    "band": (["band"], {}),
    "scale-matched": (["objectives", "--scale-matched"], {"objectives": []}),
    "lift-smollm2": (["lift", "--candidates", "smollm2-4x4-lr1e-5"], {}),
    "thinking-compare": (["thinking-compare"], {}),
    "controls": (["controls-first"], {}),
}


def test_study_run_is_the_learn_command_with_the_same_arguments(monkeypatch, tmp_path):
    from verifiable_grpo import cli
    from verifiable_grpo.part1 import learning_command

    seen = []
    monkeypatch.setattr(learning_command, "command_learn", lambda args: seen.append(vars(args)))
    options = studies.StudyOptions(out=tmp_path, export=True)
    for name in LEARN_ARGV:
        studies.protocol(name).run(options)
    for (argv, parsed), args in zip(LEARN_ARGV.values(), seen, strict=True):
        line = ["learn", *argv, "--out", str(tmp_path), "--export"]
        expected = {**vars(cli.build_parser().parse_args(line)), **parsed}
        assert {**args, "command": "learn"} == expected
    # a part that finished: the next run is the study's next part
    (tmp_path / "controls-first").mkdir()
    (tmp_path / "controls-first" / "result.json").write_text("{}")
    studies.protocol("controls").run(options)
    assert seen[-1]["what"] == "controls-second"
