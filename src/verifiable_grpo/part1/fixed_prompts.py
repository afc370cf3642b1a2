"""GRPO learning where the reader can watch it: a few fixed training prompts.

On new problems the tiny model barely moves under GRPO (chapter 10's sweep), so this
module shows the algorithm doing what it is built to do, on prompts it trains on:

1. from the training split, in order, keep the first `prompts` problems whose warm-start
   sampled success over `draws` draws lies in [low, high] (hard but not hopeless: a group
   of G answers to such a prompt usually mixes rewards, so it carries a gradient);
2. train GRPO (Part I's loop: exact prefix KL, two clipped updates per rollout set) on
   those prompts only, every prompt in every iteration, constant learning rate;
3. measure success on the same prompts with the same draw seeds after training (paired,
   prompt by prompt), and per-draw success on the validation split before and after, to
   see what of it carries to problems the policy never trained on.

Everything is an ordinary Part I GRPO branch run in OUT/train (a learning view whose
train split holds only the chosen prompts) from the recorded warm start.
"""

from __future__ import annotations

import copy
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from verifiable_grpo.core import files
from verifiable_grpo.core import model as model_lib
from verifiable_grpo.core.config import provenance, resolve
from verifiable_grpo.core.config_schema import Profile
from verifiable_grpo.core.runfolder import RunFolder
from verifiable_grpo.evaluation import policy_scores
from verifiable_grpo.part1 import sweep
from verifiable_grpo.task import data

RECORDED = "data/recorded/fixed-prompts"
SELECTION_SEED_BASE = 450000  # draw seeds of the selection and the after-training probe


@dataclass(frozen=True)
class FixedPromptSetting:
    name: str
    prompts: int = 8
    draws: int = 32
    low: float = 0.1
    high: float = 0.5
    group_size: int = 8
    learning_rate: float = 1e-4
    iterations: int = 60
    updates_per_rollout: int = 2
    kl_coefficient: float = 0.02
    validation_problems: int = 200


# Declared before the recorded run: the setting in which both trainers were seen to learn.
RECORDED_SETTING = FixedPromptSetting("eight-prompts")
# The chapter's live run: the same recipe, small enough for a laptop CPU in a minute.
LIVE_SETTING = FixedPromptSetting("live", prompts=4, draws=16, iterations=12, validation_problems=0)


def setting_config(base: Profile, setting: FixedPromptSetting) -> Profile:
    """The profile with the setting's GRPO values: every chosen prompt in every iteration,
    constant learning rate (no warm-up, no decay)."""
    return base.replaced(
        grpo={
            "iterations": setting.iterations,
            "prompts_per_iteration": setting.prompts,
            "group_size": setting.group_size,
            "learning_rate": setting.learning_rate,
            "updates_per_rollout": setting.updates_per_rollout,
            "kl_coefficient": setting.kl_coefficient,
            "warmup_fraction": 0.0,
            "final_lr_fraction": 1.0,
            "interrupt_at": min(base.grpo.interrupt_at, setting.iterations - 1),
        }
    )


def probe_config(config: Profile) -> Profile:
    """The config the probes sample with: the trainer's float32 path, whatever sampler
    precision training used (the selection measured success that way)."""
    return config.edited(lambda settings: settings["sampling"].pop("precision", None))


def success_counts(
    policy,
    tokenizer,
    config: Profile,
    examples: list[dict],
    draws: int,
    seed_base: int = SELECTION_SEED_BASE,
) -> list[int]:
    """Sampled successes out of `draws` for each example (draw seeds fixed per position)."""
    selected = list(enumerate(examples))
    questions = policy_scores.Questions(selected, draws, seed_base)
    answers = policy_scores.answer(policy, tokenizer, config, questions)
    gold = {e["document_id"]: e for e in examples}
    rows = policy_scores.score({"sample": answers["sample"]}, gold)["sample"]
    counts = {e["document_id"]: 0 for e in examples}
    for row in rows:
        counts[row["document_id"]] += int(row["reward"])
    return [counts[e["document_id"]] for e in examples]


def select_prompts(
    policy,
    tokenizer,
    config: Profile,
    examples: list[dict],
    setting: FixedPromptSetting,
    chunk: int = 16,
) -> list[dict]:
    """The first `setting.prompts` training examples with success in [low, high]."""
    chosen: list[dict] = []
    for start in range(0, len(examples), chunk):
        batch = examples[start : start + chunk]
        counts = success_counts(policy, tokenizer, config, batch, setting.draws)
        for example, count in zip(batch, counts):
            rate = count / setting.draws
            if setting.low <= rate <= setting.high and len(chosen) < setting.prompts:
                chosen.append({"document_id": example["document_id"], "before": count})
        if len(chosen) == setting.prompts:
            return chosen
    raise ValueError(
        f"only {len(chosen)} training prompts have success in "
        f"[{setting.low}, {setting.high}]; {setting.prompts} were asked for"
    )


def _history(record: dict) -> list[dict]:
    """What the chapter plots, per iteration."""
    keys = (
        "mean_reward",
        "zero_variance_fraction",
        "mean_exact_kl",
        "mean_entropy",
        "mean_response_tokens",
        "clip_low_fraction",
        "clip_high_fraction",
        "loss",
    )
    corrected = (
        "behaviour_weight_mean",
        "behaviour_weight_zero_fraction",
        "behaviour_weight_min",
        "behaviour_weight_max",
    )  # objectives with a correction

    def update_means(h):
        found = [k for k in corrected if k in h["updates"][0]]
        return {k: sum(u[k] for u in h["updates"]) / len(h["updates"]) for k in found}

    return [
        {"iteration": h["iteration"], **{k: h[k] for k in keys}, **update_means(h)}
        for h in record["history"]
    ]


def _validation(policy, tokenizer, config, learning: Path, problems: int) -> list[list]:
    """[document_id, draw, reward] per validation draw (sweep's seeds), or [] if skipped."""
    if problems == 0:
        return []
    rows = sweep.validation_sample(policy, tokenizer, config, learning, problems)
    return [[r["document_id"], r["draw"], int(r["reward"])] for r in rows]


def run(
    base: Profile, out, setting: FixedPromptSetting = RECORDED_SETTING, progress: bool = True
) -> dict:
    """Select, train, probe; returns (and writes) OUT/result.json. A finished folder is
    read back; an interrupted training continues from its crash checkpoint."""
    from verifiable_grpo.training.grpo import finished_or_trained, with_trained_weights

    out = Path(out)
    done = out / "result.json"
    if done.is_file():
        return files.read_cached_json(done)
    config = setting_config(base, setting)
    started = time.perf_counter()
    sweep.prepare_folder(out / "base", config)
    tokenizer = model_lib.load_tokenizer(config)
    warm_folder = RunFolder(out / "base")
    warm, _ = model_lib.reload_policy(
        warm_folder.policy("warmstart"), config, warm_folder.recorded_policy_sha256("warmstart")
    )
    warm.eval()
    examples = data.read_examples(out / "base" / "learning-data", "train")
    selection = out / "selection.json"
    if not selection.is_file():
        files.save_cached_json(
            selection, select_prompts(warm, tokenizer, config, examples, setting)
        )
    chosen = files.read_cached_json(selection)
    train = out / "train"
    if not (train / "learning-data" / "MANIFEST.json").is_file():
        data.write_train_subset(
            out / "base" / "learning-data",
            train / "learning-data",
            [c["document_id"] for c in chosen],
        )
    sweep.copy_warm_start(train)
    record = finished_or_trained(config, train, progress)
    policy = with_trained_weights(copy.deepcopy(warm), train)
    trained_examples = data.read_examples(train / "learning-data", "train")
    after = success_counts(policy, tokenizer, probe_config(config), trained_examples, setting.draws)
    learning = out / "base" / "learning-data"
    result = {
        "setting": asdict(setting),
        "config_grpo": config["grpo"],
        "prompts": [{**c, "after": a} for c, a in zip(chosen, after)],
        "history": _history(record),
        "validation_before": _validation(
            warm, tokenizer, config, learning, setting.validation_problems
        ),
        "validation_after": _validation(
            policy, tokenizer, config, learning, setting.validation_problems
        ),
        "final_model_digest": model_lib.model_digest(policy),
        "train_seconds": record["timings"]["total_seconds"],
        "seconds": time.perf_counter() - started,
        "provenance": provenance(config),
    }
    files.save_cached_json(done, result)
    return result


def summary(result: dict) -> dict:
    """Success on the trained prompts and on validation, before and after."""
    draws = result["setting"]["draws"]
    prompts = result["prompts"]
    total = draws * len(prompts)

    def rate(rows):
        return sum(r[2] for r in rows) / len(rows) if rows else None

    # ours records a history per iteration; TRL's record keeps its log (one entry per set)
    history = result.get("history") or [{"mean_reward": e["reward"]} for e in result["log"]]
    fifth = max(1, len(history) // 5)
    return {
        "trained_before": sum(p["before"] for p in prompts) / total,
        "trained_after": sum(p["after"] for p in prompts) / total,
        "prompts_improved": sum(p["after"] > p["before"] for p in prompts),
        "prompts": len(prompts),
        "reward_first_fifth": sum(h["mean_reward"] for h in history[:fifth]) / fifth,
        "reward_last_fifth": sum(h["mean_reward"] for h in history[-fifth:]) / fifth,
        "validation_before": rate(result.get("validation_before")),
        "validation_after": rate(result.get("validation_after")),
    }


VALIDATION_ANALYSIS_SEED = 20261204


def validation_change(result: dict, resamples: int = 10_000) -> dict:
    """After minus before on the validation problems, paired by problem: the bootstrap
    interval of per-draw success (over problems) and the exact McNemar test on draw 0."""
    import numpy as np

    from verifiable_grpo.evaluation import paired

    def rows(side):
        return [
            {"document_id": d, "draw": k, "seed": k, "reward": r, "population": "ALL"}
            for d, k, r in result[side]
        ]

    rng = np.random.default_rng(VALIDATION_ANALYSIS_SEED)
    return paired.compare(
        rows("validation_before"), rows("validation_after"), rng, resamples=resamples
    )


def recorded(path: str = RECORDED) -> dict:
    """The recorded run (ours, and TRL's beside it when present)."""
    folder = resolve(path)
    found = {"ours": files.read_json(folder / "ours.json")}
    if (folder / "trl.json").is_file():
        found["trl"] = files.read_json(folder / "trl.json")
    return found
