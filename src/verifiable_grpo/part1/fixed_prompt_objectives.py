"""The newer objectives of chapter II.7, each trained where GRPO visibly learns.

The setting is Part I's fixed-prompt run (fixed_prompts.RECORDED_SETTING: the same eight
prompts, G = 8, lr 1e-4, 60 iterations, the same seeds) with one change per run: the
objective. Each run uses `objectives.on_part1(entry)`, Part I's GRPO (population std,
exact prefix KL x 0.02) with the entry's own mechanics (its surrogate, baseline,
aggregation, clip or behaviour correction), so each comparison changes one idea. The
recorded Part I run (data/recorded/fixed-prompts/ours.json) is the GRPO column: its
prompts, their success before training and the probe's draw seeds are shared by every
run, so the differences are paired prompt by prompt. No validation probe: chapter 10
showed the setting does not carry to new problems.

Declared before the runs (this module's first commit): the nine entries of OBJECTIVES_RUN,
the setting, and the summary: success after training on the eight prompts (32 draws each)
with a Wilson interval, and its difference from GRPO's with a 95 % bootstrap interval
over the eight prompts.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from verifiable_grpo.core import files
from verifiable_grpo.core.config import resolve
from verifiable_grpo.core.config_schema import Profile
from verifiable_grpo.core.runfolder import RunFolder
from verifiable_grpo.evaluation import statistics
from verifiable_grpo.part1 import fixed_prompts
from verifiable_grpo.training import objectives

# The nine entries run and recorded, declared here and never read from a registry section:
# an entry added to the registry changes neither this study nor its record.
OBJECTIVES_RUN = objectives.declared_entries(
    (
        "cispo",
        "gmpo",
        "sapo",
        "rloo",
        "reinforce_pp",
        "reinforce",
        "reinforce_baseline",
        "grpo_tis",
        "grpo_mis",
    ),
    declared_by="fixed_prompt_objectives.OBJECTIVES_RUN",
)
SETTING = dataclasses.replace(
    fixed_prompts.RECORDED_SETTING, name="objectives", validation_problems=0
)
# The mismatch made on purpose (chapter II.6 on a run): the sampler decodes under bfloat16
# autocast, the trainer stays float32; Part I's GRPO without a correction, with TIS and
# with MIS. The captured-vs-rescored check cannot hold (that gap is the point), so its
# tolerance is set out of the way; the probes sample in float32 as before.
MISMATCH_RUNS = ("part1", "grpo_tis", "grpo_mis")
MISMATCH_PRECISION = "bfloat16"
MISMATCH_VERIFY_TOLERANCE = 100.0
RECORDED = "data/recorded/fixed-prompts/objectives.json"
BOOTSTRAP_SEED = 2026


def check_names(names) -> list[str]:
    """The names, each a registry entry that Part I's loop can run (else ValueError)."""
    for name in names:
        if name != "part1":
            objectives.on_part1(objectives.get_objective(name))
    return list(names)


def objective_config(base: Profile, name: str) -> Profile:
    return base.replaced(grpo={"objective": name})


def mismatch_config(base: Profile, name: str) -> Profile:
    return base.replaced(
        sampling={"precision": MISMATCH_PRECISION},
        grpo={"objective": name, "verify_tolerance": MISMATCH_VERIFY_TOLERANCE},
    )


def run_name(name: str, mismatch: bool) -> str:
    return f"{MISMATCH_PRECISION}-sampler-{name}" if mismatch else name


def seed_selection(out: Path, recorded: dict) -> None:
    """The recorded run's prompts as this run's selection (the same warm start and draw
    seeds would choose them again; reading them saves the 32-draw scan)."""
    selection = out / "selection.json"
    if not selection.is_file():
        out.mkdir(parents=True, exist_ok=True)
        files.save_json(
            selection,
            [{"document_id": p["document_id"], "before": p["before"]} for p in recorded["prompts"]],
        )


def run_objective(
    base: Profile, runs: Path, name: str, progress: bool = True, mismatch: bool = False
) -> dict:
    """One objective's run in RUNS/NAME (continued where it stopped); its result. mismatch:
    the bfloat16 sampler (MISMATCH_RUNS)."""
    check_names([name])
    out = Path(runs) / run_name(name, mismatch)
    seed_selection(out, fixed_prompts.recorded()["ours"])
    config = mismatch_config(base, name) if mismatch else objective_config(base, name)
    result = fixed_prompts.run(config, out, SETTING, progress=progress)
    return {"objective": name, **result}


def export(runs: Path, names=OBJECTIVES_RUN, reference: Path | None = None) -> Path:
    """RECORDED from every finished run in RUNS (histories kept, provenance kept): the
    objectives' runs, and the mismatch runs under their run names. `reference`: the
    folder of the recorded GRPO run (its first-update clipping is kept too, after its
    final weights are checked against the record)."""
    extra = {}
    if reference is not None:
        if (
            files.read_json(Path(reference) / "result.json")["final_model_digest"]
            != fixed_prompts.recorded()["ours"]["final_model_digest"]
        ):
            raise ValueError(f"{reference} is not the recorded GRPO run")
        extra["grpo_first_update_clip_fraction"] = _first_update_clip(Path(reference))
    found = {}
    wanted = list(names) + [run_name(n, True) for n in MISMATCH_RUNS]
    for name in wanted:
        done = Path(runs) / name / "result.json"
        if done.is_file():
            found[name] = {
                **files.read_json(done),
                "first_update_clip_fraction": _first_update_clip(Path(runs) / name),
            }
    if not found:
        raise FileNotFoundError(f"no finished objective run under {runs}")
    return files.save_json(
        resolve(RECORDED), {"setting": dataclasses.asdict(SETTING), "runs": found, **extra}
    )


def _first_update_clip(out: Path) -> list[float]:
    """Per iteration, the clipped share of tokens in its first update (where the policy
    still is the rollout's, so any clipping comes from the sampler/trainer gap)."""
    record = files.read_json(RunFolder(out / "train").record("grpo", "continuous"))
    return [
        h["updates"][0]["clip_low_fraction"] + h["updates"][0]["clip_high_fraction"]
        for h in record["history"]
    ]


def recorded(path: str = RECORDED) -> dict:
    return files.read_json(resolve(path))


def _rates(result: dict, key: str) -> np.ndarray:
    draws = result["setting"]["draws"]
    return np.array([p[key] / draws for p in result["prompts"]], dtype=np.float64)


def comparison(runs: dict, grpo: dict, resamples: int = 10_000) -> list[dict]:
    """One row per run (GRPO first): success after training with its Wilson interval, and
    the paired difference from GRPO with a bootstrap interval over the prompts."""
    ids = [p["document_id"] for p in grpo["prompts"]]
    grpo_after = _rates(grpo, "after")
    rows = []
    for name, result in {"grpo (part1)": grpo, **runs}.items():
        if [p["document_id"] for p in result["prompts"]] != ids:
            raise ValueError(f"{name}: trained on other prompts than the GRPO run")
        after = _rates(result, "after")
        total = result["setting"]["draws"] * len(ids)
        hits = sum(p["after"] for p in result["prompts"])
        rng = np.random.default_rng(BOOTSTRAP_SEED)
        paired = statistics.paired_bootstrap(after, grpo_after, rng, resamples)
        summary = fixed_prompts.summary(result)
        rows.append(
            {
                "objective": name,
                "after": hits / total,
                "after_interval": statistics.wilson_interval(hits, total),
                "difference": paired["difference"],
                "difference_interval": (paired["low"], paired["high"]),
                "prompts_improved": summary["prompts_improved"],
                "reward_first_fifth": summary["reward_first_fifth"],
                "reward_last_fifth": summary["reward_last_fifth"],
                "final_exact_kl": result["history"][-1]["mean_exact_kl"],
                "final_entropy": result["history"][-1]["mean_entropy"],
            }
        )
    return rows
