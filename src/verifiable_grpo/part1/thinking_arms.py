"""The declared comparison's runs (part1/thinking_comparison.py): per arm, the untrained
model scored once on the test problems under the arm's template, then per seed GRPO from
the instruct model with the arm's reward and the same score of the trained policy, paired
by problem with the untrained one.

An arm is Part I's GRPO path of the band study (band_data: the family's splits as Part
I's dataset, the instruct model as the starting policy, the captured log-prob check and
the exact KL on), with the arm's FAMILY/TEMPLATE prompt, the screen's token limits and
grpo.reward: the verifier (answer-only: its final answer is the whole response) or
answer+format (think-then-answer: the declared reward terms). Each run keeps its own
folder and files, so a crash loses at most the run in progress.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from verifiable_grpo.core import files
from verifiable_grpo.core import model as model_lib
from verifiable_grpo.core.config_schema import Profile
from verifiable_grpo.evaluation import paired
from verifiable_grpo.part1 import band_data, band_scoring, thinking_screen
from verifiable_grpo.part1.sweep import _expand
from verifiable_grpo.task import working_families
from verifiable_grpo.task.thinking_template import ANSWER_ONLY, THINK_THEN_ANSWER

# grpo.reward per arm (answer-only: the verifier's own 0/1; thinking_comparison checks
# that the declaration's reward_terms are reward_terms.TERMS_OF these).
REWARD = {THINK_THEN_ANSWER: "answer+format"}


def arm_config(declared: dict, arm: str, seed: int, base: Profile | None = None) -> Profile:
    """The screen's profile for `arm` (or `base`: a test's micro model) with the declared
    GRPO setting, the arm's prompt and reward, and the seed."""
    config = thinking_screen.screen_config(arm) if base is None else base
    g = declared["grpo"]
    return config.replaced(
        profile=f"thinking-{arm}-seed-{seed}",
        seed=seed,
        data={"prompt": f"{declared['family']}/{arm}"},
        grpo={**g, "interrupt_at": g["iterations"] - 1, "reward": REWARD.get(arm, "verifier")},
    )


def _source(family: str) -> tuple:
    return family, working_families.splits(family), working_families.FAMILIES[family].split_seed


def scored_on_test(policy, tokenizer, config: Profile, declared: dict, arm: str) -> list[list]:
    """The declared test scoring of one policy under the arm's template."""
    t = declared["test"]
    examples = working_families.splits(declared["family"])[t["split"]][: t["problems"]]
    sampled = (examples, t["draws"], t["seed_base"])
    policy.eval()
    return thinking_screen.scored_rows(policy, tokenizer, config, declared["family"], arm, sampled)


def _scored(path: Path, compute) -> dict:
    return band_data.cached(path, lambda: _timed(compute))


def _timed(compute) -> dict:
    started = time.perf_counter()
    rows = compute()
    return {"rows": rows, "seconds": time.perf_counter() - started}


def run_arm_seed(declared: dict, arm: str, seed: int, out: Path, base: Profile | None = None):
    """One arm and seed: (untrained score, trained score, learning record summary)."""
    config = arm_config(declared, arm, seed, base)
    folder = Path(out) / arm / f"seed-{seed}"
    band_data.prepare(folder, config, _source(declared["family"]))
    tokenizer = model_lib.load_tokenizer(config)
    untrained = _scored(
        Path(out) / arm / "untrained.json",
        lambda: scored_on_test(
            band_data.instruct(folder, config), tokenizer, config, declared, arm
        ),
    )
    curve = band_data.Curve(folder / "curve", [], tokenizer, config, ())
    started = time.perf_counter()
    record, policy = band_data.train(config, folder, curve, progress=False)
    wall = time.perf_counter() - started
    trained = _scored(
        folder / "test-after.json", lambda: scored_on_test(policy, tokenizer, config, declared, arm)
    )
    return untrained, trained, {"history": record["history"], "train_wall_seconds": wall}


def gain(untrained: dict, trained: dict, seed: int) -> dict:
    """Per-draw success, trained minus untrained, paired by problem (bootstrap, 95%)."""
    rows = [_expand([r[:4] for r in side["rows"]]) for side in (untrained, trained)]
    return paired.compare(*rows, np.random.default_rng(seed))


def run(declared: dict, out: Path, seeds: list[int], base: Profile | None = None) -> dict:
    """Every arm and seed of the plan, each arm's gain per seed, and the result file."""
    arms = {}
    for arm in declared["arms"]:
        per_seed = {}
        for seed in seeds:
            untrained, trained, learning = run_arm_seed(declared, arm, seed, out, base)
            per_seed[str(seed)] = {
                "gain": gain(untrained, trained, declared["analysis_seed"]),
                "untrained_per_draw": band_scoring.rate(untrained["rows"]),
                "trained_per_draw": band_scoring.rate(trained["rows"]),
                "train_wall_seconds": learning["train_wall_seconds"],
                "history": learning["history"],
                "trained_rows": trained["rows"],
            }
        arms[arm] = {"seeds": per_seed, "untrained_rows": untrained["rows"]}
    result = {
        "what": "thinking-comparison",
        "declared": declared,
        "seeds": seeds,
        "arms": arms,
        "think_minus_answer_only": secondary(arms, seeds),
    }
    files.save_json(Path(out) / "result.json", result, overwrite=True)
    return result


def secondary(arms: dict, seeds: list[int]) -> dict:
    """Per seed: the thinking arm's gain minus the answer-only arm's (point estimates), and
    the ratio of their training wall times."""
    think, answer = arms.get(THINK_THEN_ANSWER), arms.get(ANSWER_ONLY)
    if think is None or answer is None:
        return {}
    out = {}
    for seed in map(str, seeds):
        t, a = think["seeds"][seed], answer["seeds"][seed]
        out[seed] = {
            "gain_difference": t["gain"]["difference"] - a["gain"]["difference"],
            "wall_time_ratio": t["train_wall_seconds"] / max(a["train_wall_seconds"], 1e-9),
        }
    return out
