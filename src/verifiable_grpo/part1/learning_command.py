"""`python -m verifiable_grpo learn WHAT`: the GRPO learning runs of chapter 6 and the
held-out lift study, each continued where it stopped and optionally recorded."""

from __future__ import annotations

from pathlib import Path

from verifiable_grpo.core import files, preregistration, runlock
from verifiable_grpo.core.config import ConfigError, load_config, resolve
from verifiable_grpo.core.config_schema import Profile
from verifiable_grpo.part1 import (
    advantage_scale,
    fixed_prompt_objectives,
    fixed_prompts,
    fixed_prompts_trl,
    lift_study,
    smollm2_candidate,
)


def _print_fixed(name: str, result: dict) -> None:
    prompts, draws = result["prompts"], result["setting"]["draws"]
    total = draws * len(prompts)
    print(
        f"{name}: success on the {len(prompts)} trained prompts "
        f"{sum(p['before'] for p in prompts) / total:.3f} -> "
        f"{sum(p['after'] for p in prompts) / total:.3f} ({draws} draws each)"
    )


def command_learn(args) -> int:
    if args.what == "thinking-compare":  # a plan only: no folder, no stamp
        return _thinking_compare(args)
    base = load_config(args.config)
    unknown = sorted(set(args.candidates or []) - {c.name for c in lift_study.CANDIDATES})
    if unknown:  # refused before any folder is touched
        raise ConfigError(
            [
                f"--candidates: unknown {unknown}; choose from "
                f"{[c.name for c in lift_study.CANDIDATES]}"
            ]
        )
    if args.what == "lift":  # a missing prerequisite, before any folder is touched
        for candidate in lift_study.CANDIDATES:
            if candidate.model == smollm2_candidate.MODEL and candidate.name in (
                args.candidates or []
            ):
                smollm2_candidate.check_weights(smollm2_candidate.smollm2_config(base, candidate))
    if args.what in CONTROLS:  # the declaration checked (and --dry-run answered) first
        if _controls_before_any_folder(args):
            return 0
    elif getattr(args, "dry_run", False):
        raise ConfigError([f"--dry-run: only for {' / '.join(CONTROLS)} and thinking-compare"])
    chosen = Path(args.out) / "fixed-prompts" / "selection.json"
    if args.what == "fixed-prompts-trl" and not chosen.is_file():
        raise FileNotFoundError(
            f"no {chosen}: TRL trains on the prompts ours chose; run `python -m "
            f"verifiable_grpo learn fixed-prompts --out {args.out}` first"
        )
    names = getattr(args, "objectives", None)
    if names == [] and not (
        getattr(args, "mismatch", False) or getattr(args, "scale_matched", False)
    ):
        raise ConfigError(
            [
                "--objectives with no names runs nothing: name entries, or add "
                "--mismatch or --scale-matched"
            ]
        )
    try:
        fixed_prompt_objectives.check_names(names or [])
    except ValueError as err:
        raise ConfigError([f"--objectives: {err}"]) from None
    try:
        out = runlock.usable_folder(args.out)
        with runlock.locked(out, f"learn {args.what}"):
            # The start stamp before any compute: a dirty tree is refused here.
            preregistration.stamp_folder(Path(out) / args.what, args.exploratory)
            return _learn(args, base, Path(out))
    except runlock.RunFolderError as err:  # a file in the way, or a folder in use
        raise ConfigError([str(err)]) from None


def _learn(args, base: Profile, out: Path) -> int:
    dest = resolve(fixed_prompts.RECORDED)
    if args.what == "fixed-prompts":
        result = fixed_prompts.run(base, out / "fixed-prompts")
        _print_fixed("ours", result)
        if args.export:
            print(f"recorded {files.save_json(dest / 'ours.json', result)}")
    elif args.what == "fixed-prompts-trl":
        result = fixed_prompts_trl.run_trl(base, out / "fixed-prompts", out / "fixed-prompts-trl")
        _print_fixed("TRL", result)
        if args.export:
            print(f"recorded {files.save_json(dest / 'trl.json', result)}")
    elif args.what == "objectives":
        _learn_objectives(args, base, out / "objectives")
    elif args.what == "fresh":
        _learn_fresh(args, base, out / "fresh")
    elif args.what in ("band-screen", "band"):
        _learn_band(args, out / args.what)
    elif args.what in CONTROLS:
        _learn_controls(args, out)
    elif args.what == "thinking-screen":
        _learn_thinking_screen(args, out / args.what)
    else:
        for candidate in lift_study.CANDIDATES:
            if args.candidates is None and candidate.model != "tiny":
                print(
                    f"{candidate.name}: declared; {candidate.model} runs only when named "
                    "in --candidates"
                )
                continue
            if args.candidates is None or candidate.name in args.candidates:
                lift_study.run_candidate(base, candidate, out / "lift")
        if args.export:
            _export_lift(base, out / "lift")
    return 0


def _learn_fresh(args, base: Profile, out: Path) -> None:
    from verifiable_grpo.part1 import fresh_test

    result = fresh_test.run(base, out, args.exploratory)
    for mode, row in result["paired"].items():
        print(
            f"fresh {mode}: {row['first_rate']:.3f} -> {row['second_rate']:.3f}, paired "
            f"{row['difference']:+.3f} [{row['low']:+.3f}, {row['high']:+.3f}]"
        )
    if args.export:
        print(f"recorded {fresh_test.export(out)}")


def _learn_band(args, out: Path) -> None:
    from verifiable_grpo.part1 import band_study

    if args.what == "band-screen":
        result = band_study.run_screen(out, args.exploratory)
        print(band_study.screen_line(result))
        if args.export:
            print(f"recorded {band_study.export(out, 'screen')}")
        return
    result = band_study.run_band(out, args.exploratory)
    print(band_study.result_line(result))
    if args.export:
        print(f"recorded {band_study.export(out, 'band')}")


CONTROLS = ("controls", "controls-first", "controls-second", "controls-pass-at-k")


def _controls_before_any_folder(args) -> bool:
    """Check the declaration and the SmolLM2 weights; print the plan for --dry-run (then
    True: nothing else happens)."""
    from verifiable_grpo.part1 import band_study, control_declaration, control_study

    declaration = control_declaration.load(getattr(args, "declaration", None))
    if getattr(args, "dry_run", False):
        print(control_declaration.plan_text(declaration))
        return True
    smollm2_candidate.check_weights(band_study.band_config())
    if args.what == "controls-pass-at-k":
        control_study.require_runs(_study_folders(Path(args.out)), declaration)
    return False


def _study_folders(out: Path) -> list[Path]:
    return [out / what for what in CONTROLS[:3]]


def _learn_controls(args, out: Path) -> None:
    from verifiable_grpo.part1 import control_declaration, control_study

    declaration = control_declaration.load(getattr(args, "declaration", None))
    if args.what == "controls-pass-at-k":
        control_study.run_pass_at_k(out / args.what, _study_folders(out), declaration)
        print(f"pass@k to k = {declaration['pass_at_k']['k_max']}: {out / args.what}/result.json")
        if args.export:
            print(f"recorded {control_study.export(out / args.what, 'pass-at-k')}")
        return
    half = None if args.what == "controls" else args.what.removeprefix("controls-")
    result = control_study.run_controls(out / args.what, declaration, half=half)
    if args.export:
        print(f"recorded {control_study.export(out / args.what, args.what)}")
    if half is None:
        print(control_study.result_line(result))
        return
    halves = {
        h: files.read_json(out / f"controls-{h}" / "result.json")
        for h in control_declaration.HALVES
        if (out / f"controls-{h}" / "result.json").is_file()
    }
    if len(halves) == len(control_declaration.HALVES):
        combined = control_study.combined_record(halves, declaration)
        print(control_study.result_line(combined))
        if args.export:
            print(f"recorded {control_study.save_recorded(combined, 'controls')}")


def _learn_thinking_screen(args, out: Path) -> None:
    from verifiable_grpo.part1 import thinking_screen

    result = thinking_screen.run_screen(out, args.exploratory)
    print("\n".join(thinking_screen.screen_lines(result)))
    if args.export:
        print(f"recorded {thinking_screen.export(out)}")


def _thinking_compare(args) -> int:
    from verifiable_grpo.part1 import thinking_arms, thinking_comparison, thinking_screen

    declared = thinking_comparison.load()
    try:
        screen = thinking_screen.recorded()
    except FileNotFoundError:
        raise ConfigError(
            ["no recorded screen: run `learn thinking-screen --export` first"]
        ) from None
    thinking_comparison.require_screen(declared, screen)
    found = thinking_comparison.plan(declared, screen)
    print("\n".join(thinking_comparison.plan_lines(found)))
    if args.dry_run:
        return 0
    out = Path(args.out) / args.what
    # The start stamp before any compute: a dirty tree is refused here.
    preregistration.stamp_folder(out, args.exploratory)
    with runlock.locked(runlock.usable_folder(args.out), f"learn {args.what}"):
        result = thinking_arms.run(declared, out, found["seeds"])
    for arm, runs in result["arms"].items():
        for seed, row in runs["seeds"].items():
            g = row["gain"]
            print(
                f"{arm} seed {seed}: gain {g['difference']:+.3f} [{g['low']:+.3f}, "
                f"{g['high']:+.3f}], train {row['train_wall_seconds'] / 60:.0f} min"
            )
    if args.export:
        dest = resolve(thinking_screen.RECORDED) / "comparison.json"
        print(f"recorded {files.save_json(dest, result, overwrite=True)}")
    return 0


def _export_lift(base: Profile, runs: Path) -> None:
    """study.json from the tiny candidates, smollm2.json from the SmolLM2 ones (each when
    one of them finished in `runs`)."""
    finished = {c.model for c in lift_study.CANDIDATES if (runs / c.name / "result.json").is_file()}
    if "tiny" in finished:
        print(f"recorded {lift_study.export(base, runs)}")
    if smollm2_candidate.MODEL in finished:
        print(f"recorded {lift_study.export_own_warm_start(runs)}")


def _learn_objectives(args, base: Profile, runs: Path) -> None:
    names = fixed_prompt_objectives.OBJECTIVES_RUN if args.objectives is None else args.objectives
    for name in names:  # --objectives with no names: none (e.g. only --mismatch)
        _print_fixed(name, fixed_prompt_objectives.run_objective(base, runs, name))
    if args.mismatch:
        for name in fixed_prompt_objectives.MISMATCH_RUNS:
            result = fixed_prompt_objectives.run_objective(base, runs, name, mismatch=True)
            _print_fixed(fixed_prompt_objectives.run_name(name, True), result)
    scale_matched = getattr(args, "scale_matched", False)
    if scale_matched:  # the declared rerun at GRPO's advantage / KL ratio
        for name in advantage_scale.SCALE_MATCHED:
            result = advantage_scale.run_scale_matched(base, runs, name)
            _print_fixed(name + advantage_scale.RUN_SUFFIX, result)
    if args.export and scale_matched:
        print(f"recorded {advantage_scale.export_scale_matched(runs)}")
    elif args.export:
        reference = runs.parent / "fixed-prompts"  # `learn fixed-prompts` with this --out
        found = reference if (reference / "result.json").is_file() else None
        print(f"recorded {fixed_prompt_objectives.export(runs, reference=found)}")
