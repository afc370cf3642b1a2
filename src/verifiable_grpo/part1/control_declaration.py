"""The control study's declaration (configs/part1/controls.yaml): read, checked, planned.

The declaration fixes, before any run, the arms (the reward each GRPO run learns from), the
seeds of each arm, the budget (everything else is the band study's setting, checked equal
to band_study.SETTING), the scoring, the analysis with its decision rule, and the second
half (pass@k with many draws on a subset). Every problem is reported at once, each naming
the file and the key, before anything is computed.

The plan lists the study's steps in order with an estimate of each one's time, from the
recorded band run (seconds per iteration, seconds per scored answer before and after).
"""

from __future__ import annotations

from pathlib import Path

import yaml

from verifiable_grpo.core import files
from verifiable_grpo.core.config import ConfigError, resolve
from verifiable_grpo.core.config_schema import REWARDS

DECLARATION = "configs/part1/controls.yaml"
TOP_KEYS = (
    "study arms random_rate seeds budget setting departures halves scoring analysis pass_at_k "
    "family model"
).split()
INSTRUCT = "instruct"
HALVES = ("first", "second")  # each its own folder and start stamp; the instruct model in the first


def run_name(arm: str, seed: int) -> str:
    return f"{arm}-{seed}"


def runs(declaration: dict) -> list[tuple[str, str, int]]:
    """(name, arm, seed) of every GRPO run, arms in declared order."""
    return [
        (run_name(arm, seed), arm, seed)
        for arm in declaration["arms"]
        for seed in declaration["seeds"][arm]
    ]


def _count(value, low: int) -> bool:
    return type(value) is int and value >= low


def _problems_of_sections(d: dict, test_size: int) -> list[str]:
    out = []
    budget, scoring, pk = d.get("budget") or {}, d.get("scoring") or {}, d.get("pass_at_k") or {}
    if not _count(budget.get("iterations"), 2):
        out.append("budget.iterations: an integer of at least 2")
    if not _count(budget.get("checkpoint_every_iterations"), 1):
        out.append("budget.checkpoint_every_iterations: a positive integer")
    if not (_count(scoring.get("problems"), 1) and scoring["problems"] <= test_size):
        out.append(f"scoring.problems: an integer in 1..{test_size}")
    if not _count(scoring.get("draws"), 1) or not _count(scoring.get("seed_base"), 0):
        out.append("scoring.draws / scoring.seed_base: a positive integer / a non-negative one")
    if not (_count(pk.get("problems"), 1) and pk["problems"] <= test_size):
        out.append(f"pass_at_k.problems: an integer in 1..{test_size}")
    if not _count(pk.get("draws"), 1) or not _count(pk.get("seed_base"), 0):
        out.append("pass_at_k.draws / pass_at_k.seed_base: a positive integer / a non-negative one")
    elif not (_count(pk.get("k_max"), 1) and pk["k_max"] <= pk["draws"]):
        out.append(f"pass_at_k.k_max: an integer in 1..draws = 1..{pk['draws']}")
    known = {INSTRUCT} | {name for name, _, _ in runs(d)} if not out else {INSTRUCT}
    if not out and set(pk.get("policies") or ["?"]) - known:
        out.append(f"pass_at_k.policies: each one of {sorted(known)}")
    analysis = d.get("analysis") or {}
    if not (_count(analysis.get("resamples"), 100) and _count(analysis.get("seed"), 0)):
        out.append("analysis.seed / analysis.resamples: integers (resamples at least 100)")
    if not isinstance(analysis.get("level"), float) or not 0 < analysis["level"] < 1:
        out.append("analysis.level: a number strictly between 0 and 1")
    if not all(isinstance(analysis.get(k), str) for k in ("primary", "rule", "publish")):
        out.append("analysis.primary / rule / publish: the declared words")
    return out


def problems(d: dict, setting: dict, test_size: int) -> list[str]:
    """Every problem of the mapping `d` (empty when it declares a runnable study)."""
    if not isinstance(d, dict):
        return ["the file must hold one mapping"]
    out = [f"{k}: unknown key" for k in d if k not in TOP_KEYS]
    out += [f"{k}: missing" for k in TOP_KEYS if k not in d]
    if out:
        return out
    arms, seeds = d["arms"], d["seeds"]
    if not isinstance(arms, dict) or "verifier" not in arms or len(arms) < 2:
        return ["arms: verifier and at least one control"]
    out += [
        f"arms.{a}: unknown reward; choose from {list(REWARDS)}" for a in arms if a not in REWARDS
    ]
    if not isinstance(seeds, dict) or set(seeds) != set(arms):
        out.append(f"seeds: one list per arm ({sorted(arms)})")
    else:
        for arm, values in seeds.items():
            if (
                not values
                or not all(_count(s, 0) for s in values)
                or len(set(values)) < len(values)
            ):
                out.append(f"seeds.{arm}: a non-empty list of distinct non-negative integers")
    rate = d["random_rate"]
    if not isinstance(rate, float) or not 0 < rate < 1:
        out.append("random_rate: a number strictly between 0 and 1")
    departures = d["departures"] or {}
    differs = {
        k: v
        for k, v in (d["setting"] or {}).items()
        if setting.get(k) != v and not isinstance(departures.get(k), str)
    }
    out += [
        f"departures.{k}: names no change from the band setting"
        for k in departures
        if (d["setting"] or {}).get(k, setting.get(k)) == setting.get(k)
    ]
    missing = [k for k in setting if k not in (d["setting"] or {}) and k not in d["budget"]]
    out += [
        f"setting.{k}: {v!r} is not the band study's {setting.get(k)!r} (a departure needs "
        "its reason under departures)"
        for k, v in differs.items()
    ]
    out += [
        f"setting.{k}: missing (the band study's is {setting[k]!r})"
        for k in missing
        if k != "iterations" and k != "checkpoint_every_iterations"
    ]
    return out or _problems_of_sections(d, test_size) or _problems_of_halves(d)


def _problems_of_halves(d: dict) -> list[str]:
    """halves: first and second, each a non-empty list of declared runs, together every run
    once."""
    halves = d["halves"]
    if not isinstance(halves, dict) or list(halves) != list(HALVES):
        return [f"halves: exactly {' and '.join(HALVES)}, in that order"]
    names = [name for name, _, _ in runs(d)]
    listed = [n for half in HALVES for n in (halves[half] or [])]
    out = [f"halves.{h}: a non-empty list of runs" for h in HALVES if not halves[h]]
    out += [f"halves: {n} is not a declared run" for n in listed if n not in names]
    out += [f"halves: {n} listed twice" for n in sorted(set(listed)) if listed.count(n) > 1]
    out += [f"halves: {n} in neither half" for n in names if n not in listed]
    return out


def half_runs(declaration: dict, half: str | None) -> list[tuple[str, str, int]]:
    """The runs of one half in declared order (every run for None: the study in one go)."""
    if half is None:
        return runs(declaration)
    return [r for r in runs(declaration) if r[0] in declaration["halves"][half]]


def load(path=None) -> dict:
    """The checked declaration with its SHA-256 and path; ConfigError naming every problem."""
    from verifiable_grpo.part1.band_study import SETTING
    from verifiable_grpo.task import small_sums

    path = resolve(DECLARATION) if path is None else Path(path)
    try:
        mapping = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as err:
        raise ConfigError([f"{path}: cannot read the declaration ({err})"]) from None
    found = problems(mapping, SETTING, len(small_sums.splits()["test"]))
    if found:
        raise ConfigError([f"{path}: {p}" for p in found])
    return {**mapping, "path": str(path), "sha256": files.sha256_file(path)}


def recorded_rates() -> dict:
    """Seconds per GRPO iteration and per scored answer (instruct, trained) of the band run."""
    from verifiable_grpo.part1.band_study import recorded

    band = recorded("band")

    def per_answer(side):
        return band[side]["seconds"] / (len(band[side]["sample"]) + len(band[side]["greedy"]))

    return {
        "iteration": band["train_seconds"] / band["setting"]["iterations"],
        "instruct_answer": per_answer("before"),
        "trained_answer": per_answer("after"),
    }


PARTS = ("controls-first", "controls-second", "controls-pass-at-k")  # the `learn` verbs


def plan(declaration: dict) -> dict:
    """{part: steps} for the two halves and pass@k, each step {"what", "seconds"} (an
    estimate from the recorded band run)."""
    rates = recorded_rates()
    scoring, pk = declaration["scoring"], declaration["pass_at_k"]
    scored = scoring["problems"] * (scoring["draws"] + 1)
    iterations = declaration["budget"]["iterations"]
    parts = {}
    for half, part in zip(HALVES, PARTS):
        steps = []
        if half == HALVES[0]:
            steps.append(
                {
                    "what": f"score the instruct model ({scored:,} answers)",
                    "seconds": scored * rates["instruct_answer"],
                }
            )
        for name, _arm, _seed in half_runs(declaration, half):
            seconds = iterations * rates["iteration"] + scored * rates["trained_answer"]
            steps.append(
                {"what": f"{name}: {iterations} GRPO iterations, then score it", "seconds": seconds}
            )
        parts[part] = steps
    sampled = pk["problems"] * (pk["draws"] + 1)
    parts[PARTS[2]] = [
        {
            "what": f"{policy}: {sampled:,} answers for pass@k",
            "seconds": sampled
            * rates["instruct_answer" if policy == INSTRUCT else "trained_answer"],
        }
        for policy in pk["policies"]
    ]
    return parts


def plan_text(declaration: dict, limit_hours: float = 2.5, identity: bool = True) -> str:
    """The plan as lines, with each half's total against the limit; `identity`: first the
    declaration's path and SHA-256 (what a run will record)."""
    path = Path(declaration["path"])
    shown = path.relative_to(resolve(".")) if path.is_relative_to(resolve(".")) else path
    lines = [f"declaration {shown.as_posix()} (sha256 {declaration['sha256'][:12]})"]
    lines = lines if identity else []
    for part, steps in plan(declaration).items():
        command = f"learn {part}"
        total = sum(s["seconds"] for s in steps)
        lines.append(f"{command}: {len(steps)} steps, about {total / 3600:.1f} h on 2 CPU cores")
        lines += [f"  {s['what']}: about {s['seconds'] / 60:.0f} min" for s in steps]
        if total > limit_hours * 3600:
            lines.append(f"  over {limit_hours} h: run it on a quiet machine, or split it")
    lines.append("estimates from the recorded band run's seconds per iteration and per answer")
    lines.append(
        f"disk: each of the {len(runs(declaration))} run folders keeps the instruct model and "
        "its last training state with AdamW's moments: about 2 GB each for a 135M model"
    )
    return "\n".join(lines)
