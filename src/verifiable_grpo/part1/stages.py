"""The stage table of `run`: each stage's action, the files it claims, the config parts it
depends on, what it waits for and its rough cost. The pipeline (part1.pipeline) runs it.

Stages: data -> learning view -> warm start -> further SFT -> GRPO (each branch: continuous,
interrupt, resume, verify) -> main evaluation -> exercise (protect, G=2 and G=8 branches,
evaluation, summary) -> report.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from verifiable_grpo.core import crash, files, state_digests
from verifiable_grpo.core.config_schema import Profile
from verifiable_grpo.core.runfolder import MODES, RunFolder, exercise_branch, exercise_branches
from verifiable_grpo.evaluation.evaluate import MAIN_POLICIES

# The config parts each group of stages depends on, upstream stages' parts included:
# a rerun whose config differs elsewhere keeps that stage's evidence.
_WARMSTART = ("seed", "device", "model", "data", "tokens", "warmstart", "threads")
SECTIONS = {
    "data": ("data",),
    "warmstart": _WARMSTART,
    "sft": _WARMSTART + ("sft",),
    "grpo": _WARMSTART + ("sampling", "grpo"),
    "evaluate": _WARMSTART + ("sft", "sampling", "grpo", "evaluation"),
    "exercise-branch": _WARMSTART + ("sampling", "grpo", "exercise"),
}
EVERYTHING = None  # every key of the profile except its name


@dataclass
class Stage:
    name: str
    group: str  # what timings.json sums over (data, warmstart, ...)
    run: Callable[[dict, Path], object]
    claims: list[str] = field(default_factory=list)  # glob patterns relative to OUT
    sections: tuple | None = EVERYTHING  # config parts it depends on
    # Outputs complete although the marker is missing (killed between the two)?
    finished: Callable[[Path], bool] | None = None
    # Files of a half-done run this stage continues from instead of redoing them.
    reuse: Callable[[Path, list[str]], set[str]] = lambda out, rels: set()
    # The stage function itself continues from its crash checkpoint and moves aside what
    # came after it; the pipeline leaves its files alone.
    self_recovering: bool = False
    # Stages whose outputs it reads (None: every earlier stage): with --workers > 1 a stage
    # starts once these are finished, beside any other ready stage.
    needs: tuple[str, ...] | None = None
    threads: str = "stages"  # which threads.* setting it runs with
    cost: float = 1.0  # rough seconds, for the order in which ready stages start


def stage_sections(stage: Stage, config: Profile) -> list[str]:
    if stage.sections is EVERYTHING:
        return sorted(k for k in config if not k.startswith("_") and k != "profile")
    return sorted(stage.sections)


# --------------------------------------------------------------------------- stage actions
def _data(config, out):
    from verifiable_grpo.task.data import write_dataset

    return write_dataset(out / "data", config.data.seed)


def _learning_view(config, out):
    from verifiable_grpo.task.data import write_learning_view

    return write_learning_view(out / "data", out / "learning-data")


def _sft(branch, mode):
    def run(config, out):
        from verifiable_grpo.training.sft import run_sft_branch

        return run_sft_branch(config, out, branch, mode)

    return run


def _grpo(mode):
    def run(config, out):
        from verifiable_grpo.training.grpo import run_grpo_branch

        return run_grpo_branch(config, out, "grpo", mode)

    return run


def _verify(branch):
    def run(config, out):
        return state_digests.verify_branch(config, out, branch)

    return run


def _infer(policy):
    def run(config, out):
        from verifiable_grpo.evaluation.evaluate import check_inference, generate_policy

        if check_inference(out, policy) is None:  # a complete folder is kept as it is
            generate_policy(config, out, policy)

    return run


def _evaluate_main(config, out):
    from verifiable_grpo.evaluation.evaluate import evaluate_policies

    return evaluate_policies(config, out, MAIN_POLICIES, RunFolder(out).results)


def _exercise(step, *extra):
    def run(config, out):
        from verifiable_grpo.part1 import exercise

        return getattr(exercise, step)(config, out, *extra)

    return run


def _report(config, out):
    from verifiable_grpo.part1.report import write_report

    return write_report(config, out)


_branch_claims = RunFolder.branch_patterns


def _branch_finished(branch: str, mode: str) -> Callable[[Path], bool]:
    return lambda out: crash.branch_finished(out, branch, mode)


def _verify_stage(branch: str, group: str, action, sections, config: Profile, **options) -> Stage:
    """Compares continuous with resume; under storage.keep_states digest it then reduces
    the branch's three states to their digest records (core.state_digests)."""
    return Stage(
        f"{branch}-verify",
        group,
        action,
        [f"resume-{branch}.json"] + state_digests.digest_patterns(branch),
        sections,
        needs=(f"{branch}-continuous", f"{branch}-resume"),
        reuse=state_digests.reduction_reuse(config, branch),
        **options,
    )


@dataclass(frozen=True)
class TrainedBranch:
    """One trained branch's stages: its name, the timings group, action(mode) -> the stage's
    run, the config parts it depends on, the stage whose weights it starts from, and each
    mode's rough cost."""

    name: str
    group: str
    action: Callable
    sections: tuple
    start: str
    costs: dict[str, float]


def _branch_stages(spec: TrainedBranch, config: Profile) -> list[Stage]:
    """continuous and interrupt start from `start`'s weights; resume continues interrupt's
    state; verify compares continuous with resume."""
    branch, group, action, sections = spec.name, spec.group, spec.action, spec.sections
    start, costs = spec.start, spec.costs
    needs = {"continuous": (start,), "interrupt": (start,), "resume": (f"{branch}-interrupt",)}
    stages = [
        Stage(
            f"{branch}-{mode}",
            group,
            action(mode),
            _branch_claims(branch, mode),
            sections,
            finished=_branch_finished(branch, mode),
            self_recovering=True,
            needs=needs[mode],
            threads="warmstart" if branch == "warmstart" else "stages",
            cost=costs[mode],
        )
        for mode in MODES
    ]
    stages.append(
        _verify_stage(branch, group, _verify(branch), sections, config, threads=stages[0].threads)
    )
    return stages


# Rough seconds per unit on one CPU thread of the tiny profile (measured): only the order in
# which ready stages start depends on them, never a number.
SECONDS_PER_SFT_EXAMPLE = 0.04
SECONDS_PER_GRPO_RESPONSE = 0.05
SECONDS_PER_EVALUATED_RESPONSE = 0.02


def _sft_costs(section) -> dict[str, float]:
    whole = section.examples * section.epochs * SECONDS_PER_SFT_EXAMPLE
    first = whole * section.interrupt_after_epochs / section.epochs
    return {"continuous": whole, "interrupt": first, "resume": whole - first}


def _grpo_costs(iterations: int, interrupt_at: int, responses: int) -> dict[str, float]:
    per = responses * SECONDS_PER_GRPO_RESPONSE
    return {
        "continuous": iterations * per,
        "interrupt": interrupt_at * per,
        "resume": (iterations - interrupt_at) * per,
    }


def _complete_inference(out: Path, rels: list[str]) -> set[str]:
    """Inference folders whose audit matches their files are reused, not redone."""
    from verifiable_grpo.evaluation.evaluate import check_inference

    keep = set()
    for folder in sorted({"/".join(r.split("/")[:2]) for r in rels if r.startswith("inference/")}):
        try:
            complete = check_inference(out, folder.split("/")[1]) is not None
        except (ValueError, files.DamagedFileError):
            complete = False
        if complete:
            keep |= {r for r in rels if r.startswith(folder + "/")}
    return keep


def _training_stages(cfg, config: Profile) -> list[Stage]:
    """Data, the learning view, then the warm start, further SFT and GRPO (each branch:
    continuous, interrupt, resume, verify)."""
    stages = [
        Stage("data", "data", _data, ["data/*"], SECTIONS["data"], needs=()),
        Stage(
            "learning-view",
            "data",
            _learning_view,
            ["learning-data/*"],
            SECTIONS["data"],
            needs=("data",),
        ),
    ]
    stages += _branch_stages(
        TrainedBranch(
            "warmstart",
            "warmstart",
            lambda mode: _sft("warmstart", mode),
            SECTIONS["warmstart"],
            "learning-view",
            _sft_costs(cfg.warmstart),
        ),
        config,
    )
    stages += _branch_stages(
        TrainedBranch(
            "sft",
            "sft",
            lambda mode: _sft("sft", mode),
            SECTIONS["sft"],
            "warmstart-resume",
            _sft_costs(cfg.sft),
        ),
        config,
    )
    g = cfg.grpo
    stages += _branch_stages(
        TrainedBranch(
            "grpo",
            "grpo",
            _grpo,
            SECTIONS["grpo"],
            "warmstart-resume",
            _grpo_costs(g.iterations, g.interrupt_at, g.prompts_per_iteration * g.group_size),
        ),
        config,
    )
    return stages


def _exercise_stages(cfg, config: Profile, evaluated: int) -> list[Stage]:
    """The group-size exercise: protect, its short GRPO branches, their inference,
    evaluation and summary."""
    stages = [
        Stage("exercise-protect", "exercise", _exercise("protect"), ["exercise/protected.json"])
    ]
    for size in cfg.exercise.group_sizes:
        branch = exercise_branch(size)
        costs = _grpo_costs(
            cfg.exercise.iterations,
            cfg.exercise.interrupt_at,
            cfg.grpo.prompts_per_iteration * size,
        )
        stages += [
            Stage(
                f"{branch}-{mode}",
                "exercise",
                _exercise("train_branch", size, mode),
                _branch_claims(branch, mode),
                SECTIONS["exercise-branch"],
                finished=_branch_finished(branch, mode),
                self_recovering=True,
                cost=costs[mode],
                needs=("exercise-protect",) if mode != "resume" else (f"{branch}-interrupt",),
            )
            for mode in MODES
        ]
        stages.append(
            _verify_stage(
                branch,
                "exercise",
                _exercise("verify_branch", size),
                SECTIONS["exercise-branch"],
                config,
            )
        )
    branches = exercise_branches(config)
    stages += _inference_stages(branches, "exercise", ("exercise-protect",), evaluated)
    stages.append(
        Stage(
            "exercise-evaluate",
            "exercise",
            _exercise("evaluate_exercise"),
            ["exercise/results.json"] + _score_patterns(branches),
            needs=("exercise-protect",) + tuple(f"infer-{b}" for b in branches),
        )
    )
    stages.append(
        Stage("exercise-summary", "exercise", _exercise("summarise"), ["exercise/group-size.json"])
    )
    return stages


def build_stages(config: Profile) -> list[Stage]:
    """Every stage of `run`, in order (a stage without `needs` waits on every earlier one)."""
    stages = _training_stages(config, config)
    evaluated = config.evaluation.problems * (1 + config.evaluation.draws)
    stages += _inference_stages(MAIN_POLICIES, "evaluate", (), evaluated)
    stages.append(
        Stage(
            "evaluate",
            "evaluate",
            _evaluate_main,
            ["results.json"] + _score_patterns(MAIN_POLICIES),
            SECTIONS["evaluate"],
            needs=tuple(f"infer-{p}" for p in MAIN_POLICIES),
        )
    )
    stages += _exercise_stages(config, config, evaluated)
    stages.append(Stage("report", "report", _report, ["report.md"]))
    return stages


def _inference_stages(policies, group: str, after: tuple, evaluated: int) -> list[Stage]:
    """infer-<policy>: the policy's greedy and sampled answers (no labels read), as soon as
    its weights exist; the warm start's with the warm start's threads, as recorded."""
    return [
        Stage(
            f"infer-{p}",
            group,
            _infer(p),
            [f"inference/{p}/*"],
            SECTIONS["evaluate"],
            reuse=_complete_inference,
            needs=after + (f"{p}-resume",),
            threads="warmstart" if p == "warmstart" else "stages",
            cost=evaluated * SECONDS_PER_EVALUATED_RESPONSE,
        )
        for p in policies
    ]


def _score_patterns(policies) -> list[str]:
    return [p for p in RunFolder.evaluation_patterns(policies) if not p.startswith("inference/")]


def stage_needs(stages: list[Stage]) -> dict[str, set[str]]:
    """Each stage's prerequisites: its `needs`, or every earlier stage when it has none
    declared (a barrier: summaries, the exercise's protection record)."""
    names = [s.name for s in stages]
    return {
        s.name: set(names[:i]) if s.needs is None else set(s.needs) for i, s in enumerate(stages)
    }
