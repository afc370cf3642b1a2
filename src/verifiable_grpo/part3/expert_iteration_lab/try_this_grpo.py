"""Lab 5's "Try this" variants of GRPO on the digit policy, each the lab's objective with
other registry axes, run by the lab's own loop (group_relative.train).

group_relative.train_grpo runs the course's GRPO. The variants change the objective's
axes as the course asks, and with every switch at its default a variant draws and computes
exactly what train_grpo does (a test holds the two to the same bits):
- `advantage="centred"` (advantages: centred) keeps r - mean and drops the division by the
  group's std, and `denominator="maxlen"` (aggregation: constant_length, MAXLEN) divides
  each reply's token sum by MAXLEN instead of by its own length: together, a Dr.
  GRPO-like objective (no std scaling, no length normalisation);
- `refill=True` (sampler: dynamic, `max_draws` generation batches) drops the groups
  whose rewards are all equal (they carry no task signal) and samples fresh prompts until
  the batch holds `prompts_per_iteration` mixed groups or `max_draws` draws are spent;
  every generated reply is counted, kept or not;
- `group_size` and `prompts_per_iteration` trade groups against their size at a fixed
  number of generations per iteration;
- `substring=True` with several seeds repeats the flawed-verifier run against the exact one.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from verifiable_grpo.part3.digits import policy as dp
from verifiable_grpo.part3.expert_iteration_lab import group_relative as gr
from verifiable_grpo.training.objectives import AdvantageRule, Aggregation, BatchSampler

# The course's names for its switches, as the registry's axes (the names stay in the
# recorded settings). The lab's loop (group_relative.train) runs every combination.
ADVANTAGES = {"sample_std": gr.LAB_ADVANTAGES, "centred": AdvantageRule("centred", None, None)}
DENOMINATORS = {
    "tokens": Aggregation("response_mean"),
    "maxlen": Aggregation("constant_length", length=dp.MAXLEN),
}


def _check(advantage, denominator, group_size, prompts_per_iteration, max_draws) -> None:
    if advantage not in ADVANTAGES:
        raise ValueError(f"advantage must be one of {tuple(ADVANTAGES)}, got {advantage!r}")
    if denominator not in DENOMINATORS:
        raise ValueError(f"denominator must be one of {tuple(DENOMINATORS)}, got {denominator!r}")
    for name, value, least in (
        ("group_size", group_size, 2),
        ("max_draws", max_draws, 1),
        ("prompts_per_iteration", prompts_per_iteration, 1),
    ):
        if type(value) is not int or value < least:
            raise ValueError(f"{name} must be an integer >= {least}, got {value!r}")


def variant_objective(beta, clip, advantage, denominator, refill, max_draws):
    """The lab's GRPO with the variant's advantages, aggregation and sampler."""
    sampler = (
        BatchSampler("dynamic", max_generation_batches=max_draws) if refill else BatchSampler()
    )
    return gr.lab_objective(
        beta,
        clip,
        advantages=ADVANTAGES[advantage],
        aggregation=DENOMINATORS[denominator],
        sampler=sampler,
    )


def _record(state: dict) -> dict:
    if state["iteration"] == 0:
        return {"iteration": 0, "generations": 0, **state["metrics"]}
    keys = ("iteration", "generations", "draws", "zero_variance", "skipped_updates")
    row = {key: state[key] for key in keys}
    return {**row, **state["metrics"], "verifier_reward": state["verifier_reward"]}


@dataclass(frozen=True)
class Variant:
    """A variant's objective switches: the KL coefficient `beta`, the advantage rule
    (ADVANTAGES), the reply denominator (DENOMINATORS), drop-and-refill with at most
    `max_draws` generation batches, and PPO's clip. The defaults are the lab's GRPO."""

    beta: float = 0.04
    advantage: str = "sample_std"
    denominator: str = "tokens"
    refill: bool = False
    max_draws: int = 8
    clip: float = 0.2


LAB_5_RUN = gr.GroupRun()  # Lab 5's own run settings (iterations, groups, lr, seed, ...)


def train_variant(reference, variant: Variant = Variant(), run: gr.GroupRun = LAB_5_RUN) -> dict:
    """GRPO from the reference with the variant's switches; a record every `run.log_every`
    iterations (record 0: the start), with the replies generated so far."""
    v = variant
    _check(v.advantage, v.denominator, run.group_size, run.prompts_per_iteration, v.max_draws)
    gr._check_grpo_settings(v.beta, run.group_size)
    objective = variant_objective(v.beta, v.clip, v.advantage, v.denominator, v.refill, v.max_draws)
    _, log = gr.train(reference, objective, run, _record)
    settings = {
        "beta": v.beta,
        "advantage": v.advantage,
        "denominator": v.denominator,
        "inner_steps": run.inner_steps,
        "clip": v.clip,
    }
    return {
        "settings": {
            "substring": run.substring,
            "iterations": run.iterations,
            "group_size": run.group_size,
            "prompts_per_iteration": run.prompts_per_iteration,
            "refill": v.refill,
            "max_draws": v.max_draws,
            "seed": run.seed,
            **settings,
        },
        "records": log,
    }


def run_variants(iterations: int = 150, seeds=(41, 42, 43), beta: float = 0.04) -> dict:
    """The four Lab 5 variants the course lists after its first (no KL term, recorded by
    the lab itself): Dr. GRPO-like, drop-and-refill, G = 4 against G = 16 at 256 replies
    per iteration, and the exact against the substring checker over several seeds."""
    reference = dp.train_reference()
    lab = Variant(beta=beta)
    run = gr.GroupRun(iterations=iterations)
    seeds = list(seeds)

    def with_run(**changes) -> gr.GroupRun:
        return dataclasses.replace(run, **changes)

    return {
        "dr_grpo": train_variant(
            reference, Variant(beta=beta, advantage="centred", denominator="maxlen"), run
        ),
        "refill": train_variant(reference, Variant(beta=beta, refill=True), run),
        "group_size": [
            train_variant(reference, lab, with_run(group_size=g, prompts_per_iteration=256 // g))
            for g in (4, 16)
        ],
        "seeds": {
            "exact": [train_variant(reference, lab, with_run(seed=s)) for s in seeds],
            "substring": [
                train_variant(reference, lab, with_run(substring=True, seed=s)) for s in seeds
            ],
        },
    }
