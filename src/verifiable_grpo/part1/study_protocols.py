"""Part I's studies recorded before the STUDIES table (part1/studies.py), fitted to its
PROTOCOL without touching them: each adapter runs a study through the command that always
ran it (`learn PART` or `sweep`, so its stamp, lock and refusals are the same), exports and
reads it with the study's own functions, and checks the record against the constants that
declare it. A study's folder is the one those commands use under OUT."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from verifiable_grpo.core import files
from verifiable_grpo.core.config import load_config, resolve
from verifiable_grpo.part1.studies import StudyOptions


def _learn(options: StudyOptions, what: str, *extra: str, **parsed) -> int:
    """`learn WHAT --out OUT ...` exactly as the command line would run it (`parsed`: values
    set after parsing, for a meaning the command line no longer spells)."""
    from verifiable_grpo.part1 import learning_arguments, learning_command

    parser = argparse.ArgumentParser(prog="learn")
    parser.add_argument("--config", default="tiny")
    learning_arguments.add_arguments(parser, exploratory_help="")
    argv = [what, "--out", str(options.out), "--config", options.config, *extra]
    argv += ["--exploratory"] * options.exploratory + ["--export"] * options.export
    args = parser.parse_args(argv)
    vars(args).update(parsed)
    return learning_command.command_learn(args)


def _next_part(options: StudyOptions, parts: tuple[str, ...]) -> str:
    """The first part without a finished folder (each part is its own stamped run)."""
    return next((p for p in parts if not (options.out / p / "result.json").is_file()), parts[-1])


def _differs(what: str, found, declared) -> list[str]:
    return [] if found == declared else [f"{what}: recorded {found}, declared {declared}"]


def _in_order(what: str, found: list, declared: list) -> list[str]:
    """Runs recorded: each declared, in the declared order (a declared one may not have run)."""
    return _differs(what, found, [name for name in declared if name in found])


class Sweep:
    FOLDER = "tiny-sweep"  # `sweep --out OUT/tiny-sweep`

    @staticmethod
    def run(options: StudyOptions) -> int:
        from verifiable_grpo.part1 import sweep_command

        args = argparse.Namespace(
            config=options.config,
            out=str(options.out / Sweep.FOLDER),
            settings=None,
            exploratory=options.exploratory,
            export=options.export,
        )
        return sweep_command.command_sweep(args)

    @staticmethod
    def export(options: StudyOptions) -> list[Path]:
        from verifiable_grpo.part1 import sweep

        return [sweep.export(load_config(options.config), options.out / Sweep.FOLDER)]

    @staticmethod
    def read() -> dict:
        from verifiable_grpo.part1 import sweep

        return sweep.load_recorded()

    @staticmethod
    def check(record: dict) -> list[str]:
        from verifiable_grpo.part1 import sweep

        names = [r["setting"]["name"] for r in record["results"]]
        return _differs("settings", names, [s.name for s in sweep.SETTINGS])


def _candidates(model: str) -> list[str]:
    from verifiable_grpo.part1 import lift_study

    return [c.name for c in lift_study.CANDIDATES if c.model == model]


class Lift:
    @staticmethod
    def run(options: StudyOptions) -> int:
        return _learn(options, "lift")  # the tiny candidates (SmolLM2's: lift-smollm2)

    @staticmethod
    def export(options: StudyOptions) -> list[Path]:
        from verifiable_grpo.part1 import lift_study

        return [lift_study.export(load_config(options.config), options.out / "lift")]

    @staticmethod
    def read() -> dict:
        from verifiable_grpo.part1 import lift_study

        return lift_study.recorded()

    @staticmethod
    def check(record: dict) -> list[str]:
        names = [r["candidate"]["name"] for r in record["results"]]
        return _in_order("candidates", names, _candidates("tiny"))


class LiftSmolLM2:
    @staticmethod
    def run(options: StudyOptions) -> int:
        from verifiable_grpo.part1 import smollm2_candidate

        return _learn(options, "lift", "--candidates", *_candidates(smollm2_candidate.MODEL))

    @staticmethod
    def export(options: StudyOptions) -> list[Path]:
        from verifiable_grpo.part1 import lift_study

        return [lift_study.export_own_warm_start(options.out / "lift")]

    @staticmethod
    def read() -> dict:
        from verifiable_grpo.part1 import lift_study

        return lift_study.recorded_own_warm_start()

    @staticmethod
    def check(record: dict) -> list[str]:
        from verifiable_grpo.part1 import smollm2_candidate

        names = [r["candidate"]["name"] for r in record["results"]]
        return _in_order("candidates", names, _candidates(smollm2_candidate.MODEL))


class Fresh:
    @staticmethod
    def run(options: StudyOptions) -> int:
        return _learn(options, "fresh")

    @staticmethod
    def export(options: StudyOptions) -> list[Path]:
        from verifiable_grpo.part1 import fresh_test

        return [fresh_test.export(options.out / "fresh")]

    @staticmethod
    def read() -> dict:
        from verifiable_grpo.part1 import fresh_test

        return fresh_test.recorded()

    @staticmethod
    def check(record: dict) -> list[str]:
        from verifiable_grpo.part1 import fresh_test as f

        fresh = {"seed": f.FRESH_SEED, "counts": f.COUNTS, "draws": f.DRAWS}
        return (
            _differs("candidate", record["candidate"], f.CANDIDATE)
            + _differs("rule", record["rule"], f.RULE)
            + _differs("fresh", {k: record["fresh"][k] for k in fresh}, fresh)
        )


class BandScreen:
    @staticmethod
    def run(options: StudyOptions) -> int:
        return _learn(options, "band-screen")

    @staticmethod
    def export(options: StudyOptions) -> list[Path]:
        from verifiable_grpo.part1 import band_study

        return [band_study.export(options.out / "band-screen", "screen")]

    @staticmethod
    def read() -> dict:
        from verifiable_grpo.part1 import band_study

        return band_study.recorded("screen")

    @staticmethod
    def check(record: dict) -> list[str]:
        from verifiable_grpo.part1 import band_study

        return _differs("screen", record["screen"], band_study.SCREEN)


class Band:
    @staticmethod
    def run(options: StudyOptions) -> int:
        return _learn(options, "band")

    @staticmethod
    def export(options: StudyOptions) -> list[Path]:
        from verifiable_grpo.part1 import band_study

        return [band_study.export(options.out / "band", "band")]

    @staticmethod
    def read() -> dict:
        from verifiable_grpo.part1 import band_study

        return band_study.recorded("band")

    @staticmethod
    def check(record: dict) -> list[str]:
        from verifiable_grpo.part1 import band_study

        return _differs("setting", record["setting"], band_study.SETTING) + _differs(
            "rule", record["rule"], band_study.RULE
        )


class FixedPrompts:
    PARTS = ("fixed-prompts", "fixed-prompts-trl")  # ours, then TRL on the prompts ours chose

    @staticmethod
    def run(options: StudyOptions) -> int:
        return _learn(options, _next_part(options, FixedPrompts.PARTS))

    @staticmethod
    def export(options: StudyOptions) -> list[Path]:
        from verifiable_grpo.part1 import fixed_prompts

        dest = resolve(fixed_prompts.RECORDED)
        return [
            files.save_json(dest / name, files.read_json(options.out / part / "result.json"))
            for part, name in zip(FixedPrompts.PARTS, ("ours.json", "trl.json"), strict=True)
            if (options.out / part / "result.json").is_file()
        ]

    @staticmethod
    def read() -> dict:
        from verifiable_grpo.part1 import fixed_prompts

        return fixed_prompts.recorded()

    @staticmethod
    def check(record: dict) -> list[str]:
        from verifiable_grpo.part1 import fixed_prompts

        declared = dataclasses.asdict(fixed_prompts.RECORDED_SETTING)
        return [p for side, run in record.items() for p in _differs(side, run["setting"], declared)]


class Objectives:
    @staticmethod
    def run(options: StudyOptions) -> int:
        return _learn(options, "objectives", "--mismatch")

    @staticmethod
    def export(options: StudyOptions) -> list[Path]:
        from verifiable_grpo.part1 import fixed_prompt_objectives

        reference = options.out / "fixed-prompts"  # as `learn objectives --export` finds it
        found = reference if (reference / "result.json").is_file() else None
        return [fixed_prompt_objectives.export(options.out / "objectives", reference=found)]

    @staticmethod
    def read() -> dict:
        from verifiable_grpo.part1 import fixed_prompt_objectives

        return fixed_prompt_objectives.recorded()

    @staticmethod
    def check(record: dict) -> list[str]:
        from verifiable_grpo.part1 import fixed_prompt_objectives as f

        runs = [*f.OBJECTIVES_RUN, *(f.run_name(n, True) for n in f.MISMATCH_RUNS)]
        return _differs("setting", record["setting"], dataclasses.asdict(f.SETTING)) + _differs(
            "runs", list(record["runs"]), runs
        )


class ScaleMatched:
    @staticmethod
    def run(options: StudyOptions) -> int:
        # none of the nine first: the recorded `learn objectives --objectives --scale-matched`
        # (argparse now refuses an empty --objectives, so the empty list is set here)
        return _learn(options, "objectives", "--scale-matched", objectives=[])

    @staticmethod
    def export(options: StudyOptions) -> list[Path]:
        from verifiable_grpo.part1 import advantage_scale

        return [advantage_scale.export_scale_matched(options.out / "objectives")]

    @staticmethod
    def read() -> dict:
        from verifiable_grpo.part1 import advantage_scale

        return files.read_json(resolve(advantage_scale.RECORDED))

    @staticmethod
    def check(record: dict) -> list[str]:
        from verifiable_grpo.part1 import advantage_scale

        declared = list(advantage_scale.SCALE_MATCHED)
        return _differs("declared", record["declared"], declared) + _differs(
            "runs", sorted(record["runs"]), sorted(declared)
        )


class ThinkingScreen:
    @staticmethod
    def run(options: StudyOptions) -> int:
        return _learn(options, "thinking-screen")

    @staticmethod
    def export(options: StudyOptions) -> list[Path]:
        from verifiable_grpo.part1 import thinking_screen

        return [thinking_screen.export(options.out / "thinking-screen")]

    @staticmethod
    def read() -> dict:
        from verifiable_grpo.part1 import thinking_screen

        return thinking_screen.recorded()

    @staticmethod
    def check(record: dict) -> list[str]:
        from verifiable_grpo.part1 import thinking_screen as t

        return (
            _differs("families", list(record["families"]), list(t.FAMILIES))
            + _differs("screen", record["screen"], t.SCREEN)
            + _differs("band", record["band"], t.BAND)
        )


class ThinkingCompare:
    RECORD = "comparison.json"  # beside the screen's record, as `learn thinking-compare` writes it

    @staticmethod
    def run(options: StudyOptions) -> int:
        return _learn(options, "thinking-compare")

    @staticmethod
    def export(options: StudyOptions) -> list[Path]:
        from verifiable_grpo.part1 import thinking_screen

        result = files.read_json(options.out / "thinking-compare" / "result.json")
        dest = resolve(thinking_screen.RECORDED) / ThinkingCompare.RECORD
        return [files.save_json(dest, result, overwrite=True)]

    @staticmethod
    def read() -> dict:
        from verifiable_grpo.part1 import thinking_screen

        return files.read_json(resolve(thinking_screen.RECORDED) / ThinkingCompare.RECORD)

    @staticmethod
    def check(record: dict) -> list[str]:
        from verifiable_grpo.part1 import thinking_comparison

        declared = thinking_comparison.load()
        return _differs("declaration", record["declared"], declared) + _differs(
            "arms", list(record["arms"]), list(declared["arms"])
        )


class Controls:
    # `learn PART` in order; each its own stamped folder; the record's name for each
    PARTS = {
        "controls-first": "controls-first",
        "controls-second": "controls-second",
        "controls-pass-at-k": "pass-at-k",
    }

    @staticmethod
    def run(options: StudyOptions) -> int:
        return _learn(options, _next_part(options, tuple(Controls.PARTS)))

    @staticmethod
    def export(options: StudyOptions) -> list[Path]:
        from verifiable_grpo.part1 import control_declaration, control_study

        out = options.out
        done = [
            control_study.export(out / part, what)
            for part, what in Controls.PARTS.items()
            if (out / part / "result.json").is_file()
        ]
        halves = {
            h: files.read_json(out / f"controls-{h}" / "result.json")
            for h in control_declaration.HALVES
            if (out / f"controls-{h}" / "result.json").is_file()
        }
        if len(halves) == len(control_declaration.HALVES):
            combined = control_study.combined_record(halves, control_declaration.load())
            done.append(control_study.save_recorded(combined, "controls"))
        return done

    @staticmethod
    def read() -> dict:
        from verifiable_grpo.part1 import control_study

        record = control_study.recorded("controls")
        if record is None:
            raise FileNotFoundError(f"no {control_study.RECORDED}/controls.json: not run")
        return record

    @staticmethod
    def check(record: dict) -> list[str]:
        from verifiable_grpo.part1 import control_declaration

        declaration = control_declaration.load()
        names = [name for name, _, _ in control_declaration.runs(declaration)]
        return _differs("runs", sorted(record["per_draw"]), sorted(names)) + _differs(
            "declaration sha256", record["declaration"]["sha256"], declaration["sha256"]
        )
