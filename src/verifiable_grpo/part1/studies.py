"""The one table of Part I's recorded studies, and the reader the chapters use (the `study`
verb itself is study_command.py).

A recorded study is a comparison declared before it ran, run into a folder, and exported
to a record under data/recorded/ that a chapter reads. Every one is a row of STUDIES: its
name, the module that declares and runs it, its record files, where its declaration lives
and the chapter that reads it. Each row is served by an object with the four functions of
PROTOCOL:

    run(options) -> int          run (or continue) the study into its folder under options.out
    export(options) -> list      its finished folder -> its record files under data/recorded/
    read() -> dict               its record (FileNotFoundError while it has not run)
    check(record) -> list[str]   the record against the declaration: one line per mismatch

A new study's own module defines these four functions (`protocol` left empty). The studies
recorded before this table existed keep their own functions and are fitted to it by the
adapters of part1/study_protocols.py (`protocol` names the adapter there).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path

from verifiable_grpo.core.config import resolve

PROTOCOL = ("run", "export", "read", "check")
NOT_RUN = "not run"


@dataclass(frozen=True)
class Study:
    name: str  # the `study` verb's NAME
    module: str  # under verifiable_grpo: the module that declares and runs the study
    recorded: tuple[str, ...]  # its record files, relative to the repository root
    declared: str  # where the declaration lives: a module constant or a config file
    chapter: str  # the chapter that reads the record
    protocol: str = ""  # the adapter in part1/study_protocols.py; "": `module` itself


@dataclass(frozen=True)
class StudyOptions:
    """What `study run|export` is told: the runs folder, the profile, the stamp's label."""

    out: Path
    config: str = "tiny"
    exploratory: bool = False
    export: bool = False


CHAPTER_10 = "notebooks/part1/10_beyond_the_budget.py"
CHAPTER_12 = "notebooks/part1/12_pretrained_model.py"
CHAPTER_13 = "notebooks/part1/13_what_taught_it.py"
CHAPTER_II_7 = "notebooks/part2/07_newer_objectives.py"
FIXED = "data/recorded/fixed-prompts"

STUDIES = {
    "sweep": Study(
        "sweep",
        "part1.sweep",
        ("data/recorded/tiny-sweep/sweep.json",),
        "part1.sweep.SETTINGS",
        CHAPTER_10,
        protocol="Sweep",
    ),
    "lift": Study(
        "lift",
        "part1.lift_study",
        ("data/recorded/lift-study/study.json",),
        "part1.lift_study.CANDIDATES",
        CHAPTER_10,
        protocol="Lift",
    ),
    "lift-smollm2": Study(
        "lift-smollm2",
        "part1.lift_study",
        ("data/recorded/lift-study/smollm2.json",),
        "part1.lift_study.CANDIDATES",
        CHAPTER_10,
        protocol="LiftSmolLM2",
    ),
    "fresh": Study(
        "fresh",
        "part1.fresh_test",
        ("data/recorded/lift-study/fresh.json",),
        "part1.fresh_test.CANDIDATE",
        CHAPTER_10,
        protocol="Fresh",
    ),
    "band-screen": Study(
        "band-screen",
        "part1.band_study",
        ("data/recorded/band/screen.json",),
        "part1.band_study.SCREEN",
        CHAPTER_12,
        protocol="BandScreen",
    ),
    "band": Study(
        "band",
        "part1.band_study",
        ("data/recorded/band/band.json",),
        "part1.band_study.SETTING",
        CHAPTER_12,
        protocol="Band",
    ),
    "fixed-prompts": Study(
        "fixed-prompts",
        "part1.fixed_prompts",
        (f"{FIXED}/ours.json", f"{FIXED}/trl.json"),
        "part1.fixed_prompts.RECORDED_SETTING",
        "notebooks/part1/06_grpo.py",
        protocol="FixedPrompts",
    ),
    "objectives": Study(
        "objectives",
        "part1.fixed_prompt_objectives",
        (f"{FIXED}/objectives.json",),
        "part1.fixed_prompt_objectives.OBJECTIVES_RUN",
        CHAPTER_II_7,
        protocol="Objectives",
    ),
    "scale-matched": Study(
        "scale-matched",
        "part1.advantage_scale",
        (f"{FIXED}/scale-matched.json",),
        "part1.advantage_scale.SCALE_MATCHED",
        CHAPTER_II_7,
        protocol="ScaleMatched",
    ),
    "thinking-screen": Study(
        "thinking-screen",
        "part1.thinking_screen",
        ("data/recorded/thinking/screen.json",),
        "part1.thinking_screen.FAMILIES",
        CHAPTER_13,
        protocol="ThinkingScreen",
    ),
    "thinking-compare": Study(
        "thinking-compare",
        "part1.thinking_comparison",
        ("data/recorded/thinking/comparison.json",),
        "configs/thinking/comparison.yaml",
        CHAPTER_13,
        protocol="ThinkingCompare",
    ),
    "controls": Study(
        "controls",
        "part1.control_study",
        ("data/recorded/controls/controls.json",),
        "configs/part1/controls.yaml",
        CHAPTER_13,
        protocol="Controls",
    ),
}

# Modules with a RECORDED path that is not a study's record, and why (tests check the list).
NOT_STUDIES = {
    "book.notebook": "the folder of every record, read by the chapters' helpers",
    "part1.pipeline_compare": "the pipeline's own recorded runs (`report --export`)",
    "part1.sweep.RECORDED_TINY": "the pipeline's recorded warm start the sweep starts from",
    "part2.record": "Part II's pre-registered family study (`family export`, its lock)",
    "part2.card_defaults_lock": "Part II's card-default runs, under the family study's lock",
    "part3.labs": "Part III's labs (`lab NAME --export`, the LABS table)",
    "part3.smollm2.records": "Part III's SmolLM2 labs (the LABS table)",
}


def get(name: str) -> Study:
    if name not in STUDIES:
        raise ValueError(f"unknown study {name!r}; choose one of {sorted(STUDIES)}")
    return STUDIES[name]


def protocol(name: str):
    """The object serving study `name`'s PROTOCOL (imported now: this may load torch)."""
    study = get(name)
    if not study.protocol:
        return importlib.import_module(f"verifiable_grpo.{study.module}")
    adapters = importlib.import_module("verifiable_grpo.part1.study_protocols")
    return getattr(adapters, study.protocol)


def missing_records(name: str) -> list[str]:
    """Study `name`'s record files that are not there (all of them: not run)."""
    return [path for path in get(name).recorded if not resolve(path).is_file()]


def state(name: str) -> str:
    """ "recorded", "not run", or which of its record files are missing."""
    missing = missing_records(name)
    if not missing:
        return "recorded"
    if len(missing) == len(get(name).recorded):
        return NOT_RUN
    return "missing " + ", ".join(missing)


def recorded(name: str) -> dict:
    """Study `name`'s record, as its chapter reads it; FileNotFoundError (one line, naming
    the file and the command that writes it) while it has not run."""
    study = get(name)
    if missing_records(name) == list(study.recorded):
        raise FileNotFoundError(
            f"{name}: {NOT_RUN} (no {study.recorded[0]}); record it with "
            f"`python -m verifiable_grpo study run {name} --export`"
        )
    return protocol(name).read()


def check(name: str) -> list[str]:
    """Study `name`'s record against its declaration: one line per mismatch, each naming
    the study; [] when they agree."""
    return [f"{name}: {problem}" for problem in protocol(name).check(recorded(name))]
