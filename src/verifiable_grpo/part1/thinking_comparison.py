"""The declared comparison: answer-only against think-then-answer, at equal budget.

The declaration is configs/thinking/comparison.yaml (committed before any arm runs): the
family the recorded screen passed, two arms, two seeds each, the same GRPO setting, the
reward terms of each arm (training/reward_terms.py), the screen's token limits, the test
scoring (once, after training, paired per problem with the untrained model under the same
template) and the budget. This module reads and checks it, refuses a family the screen did
not pass, and plans the runs with an estimated time from the screen's measured seconds
per response (`learn thinking-compare --dry-run`).

The estimate: an iteration generates P x G responses, rescores them once and makes two
updates on them; TRAINING_FACTOR (3.0) counts that as three times the screen's seconds
per generated response. Measured in an exploratory probe of the thinking arm on
SmolLM2 (2 iterations of 2 prompts x G 4, loaded machine): per response 4.4 s generating
(a batch of 8 is slower per row than the screen's 64), 1.1 s rescoring, 4.6 s for the two
updates: 10.1 s, 3.4 times the screen's 3.0 s; the comparison's batches of 32 generate
faster per row than the probe's 8, hence 3.0. The screen measured its seconds on a
loaded machine, so the estimate is an upper bound for a quiet one. When every declared
seed would exceed the budget, the plan runs the declared fallback seeds instead (decided
before any arm ran, never after a result); a plan still over the budget says so.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from verifiable_grpo.core.config import ConfigError, resolve
from verifiable_grpo.part1 import thinking_arms, thinking_screen
from verifiable_grpo.task import thinking_template, working_families
from verifiable_grpo.training import reward_terms

DECLARATION = "configs/thinking/comparison.yaml"
TRAINING_FACTOR = 3.0
KEYS = {
    "family": str,
    "arms": list,
    "seeds": list,
    "fallback_seeds": list,
    "grpo": dict,
    "reward_terms": dict,
    "max_new_tokens": dict,
    "test": dict,
    "budget_hours": float,
    "analysis_seed": int,
    "primary": str,
    "secondary": str,
}
GRPO_KEYS = (
    "iterations",
    "prompts_per_iteration",
    "group_size",
    "learning_rate",
    "updates_per_rollout",
    "kl_coefficient",
    "clip_epsilon",
)


def _problems(declared: dict, where: str) -> list[str]:
    found = [f"{where}: unknown key {k!r}" for k in sorted(set(declared) - set(KEYS))]
    found += [f"{where}: missing key {k!r}" for k in KEYS if k not in declared]
    found += [
        f"{where}: {k} must be {kind.__name__}"
        for k, kind in KEYS.items()
        if k in declared and not isinstance(declared[k], (kind, int) if kind is float else kind)
    ]
    if found:
        return found
    if declared["family"] not in working_families.FAMILIES:
        found.append(f"{where}: family {declared['family']!r} is not declared")
    if sorted(declared["arms"]) != sorted(thinking_template.TEMPLATES):
        found.append(f"{where}: arms must be {list(thinking_template.TEMPLATES)}")
    if not declared["fallback_seeds"] or not set(declared["fallback_seeds"]) < set(
        declared["seeds"]
    ):
        found.append(f"{where}: fallback_seeds must be a smaller, non-empty part of seeds")
    if sorted(declared["grpo"]) != sorted(GRPO_KEYS):
        found.append(f"{where}: grpo must hold exactly {list(GRPO_KEYS)}")
    for arm in declared["arms"]:
        terms = tuple(declared["reward_terms"].get(arm, []))
        reward = thinking_arms.REWARD.get(arm, "verifier")
        if terms != reward_terms.TERMS_OF[reward]:
            found.append(
                f"{where}: reward_terms.{arm} must be {list(reward_terms.TERMS_OF[reward])} "
                f"(grpo.reward {reward})"
            )
        if declared["max_new_tokens"].get(arm) != thinking_screen.MAX_NEW_TOKENS.get(arm):
            found.append(f"{where}: max_new_tokens.{arm} must be the screen's")
    return found


def load(path: str | Path | None = None) -> dict:
    """The declaration, checked; ConfigError naming the file and each bad key."""
    where = str(path or DECLARATION)
    file = resolve(DECLARATION) if path is None else Path(path)
    if not file.is_file():
        raise ConfigError([f"{where}: no such declaration"])
    declared = yaml.safe_load(file.read_text())
    if not isinstance(declared, dict):
        raise ConfigError([f"{where}: a declaration is a mapping of keys"])
    found = _problems(declared, where)
    if found:
        raise ConfigError(found)
    return declared


def require_screen(declared: dict, screen: dict) -> None:
    """Refuse a family that the recorded screen did not pass."""
    if declared["family"] not in screen.get("passed", []):
        verdict = screen.get("families", {}).get(declared["family"])
        raise ConfigError(
            [
                f"family {declared['family']} did not pass the recorded screen "
                f"({verdict}): declare another family or screen another model"
            ]
        )


def seconds_per_response(screen: dict) -> dict[str, float]:
    """Measured generation seconds per response, per template, over the screen's cells."""
    out = {}
    for template in thinking_template.TEMPLATES:
        cells = [c for c in screen["cells"] if c["template"] == template]
        out[template] = sum(c["seconds"] for c in cells) / sum(len(c["rows"]) for c in cells)
    return out


def plan(declared: dict, screen: dict) -> dict:
    """Every run the comparison makes, with its estimated seconds, and the total: the
    declared seeds, or the fallback seeds when the declared ones exceed the budget."""
    full = _plan(declared, screen, declared["seeds"])
    if full["within_budget"]:
        return full
    return {**_plan(declared, screen, declared["fallback_seeds"]), "fallback": True}


def _plan(declared: dict, screen: dict, seeds: list) -> dict:
    per = seconds_per_response(screen)
    g = declared["grpo"]
    responses = g["iterations"] * g["prompts_per_iteration"] * g["group_size"]
    scored = declared["test"]["problems"] * declared["test"]["draws"]
    runs = []
    for arm in declared["arms"]:
        runs.append({"run": f"{arm}/untrained", "seconds": scored * per[arm]})
        for seed in seeds:
            train = responses * per[arm] * TRAINING_FACTOR
            runs.append({"run": f"{arm}/seed-{seed}", "seconds": train + scored * per[arm]})
    total = sum(r["seconds"] for r in runs)
    return {
        "family": declared["family"],
        "seeds": list(seeds),
        "fallback": False,
        "runs": runs,
        "seconds_per_response": per,
        "total_seconds": total,
        "budget_seconds": declared["budget_hours"] * 3600.0,
        "within_budget": total <= declared["budget_hours"] * 3600.0,
    }


def plan_lines(found: dict) -> list[str]:
    seeds = "the fallback seeds" if found["fallback"] else "the declared seeds"
    lines = [
        f"comparison on {found['family']}, {seeds} {found['seeds']} (estimates from the "
        "screen's loaded machine):"
    ]
    lines += [f"  {r['run']}: about {r['seconds'] / 60:.0f} min" for r in found["runs"]]
    verdict = "within" if found["within_budget"] else "OVER"
    lines.append(
        f"  total about {found['total_seconds'] / 60:.0f} min, {verdict} the budget of "
        f"{found['budget_seconds'] / 60:.0f} min"
    )
    return lines
