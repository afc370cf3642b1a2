"""The treatment lock: the family study's pre-registration, written before any recorded run.

The lock names the arms (each with the SHA-256 of its registry mechanics, what it changes
relative to grpo, and its TRL 1.16 configuration), the seeds, the two regimes, the
budgets, the held-out evaluation, the primary metric and the analysis plan with its RNG
seed. Everything in it is built by `build_lock` from the code and the base profile, so
the committed file can be re-derived and compared. Its SHA-256 and the choices it was built
from (budget, seeds, evaluation, arms, notes) are pinned where an edit of the file cannot
follow: in this module for the committed lock, in a pin file written beside any other. A
run refuses to start when the file differs from the lock that the code, the profile and the
warm start build from the pinned choices, field by field, or from the pinned digest
(`check_lock`); every run manifest carries the lock's SHA-256.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from verifiable_grpo.core import files
from verifiable_grpo.core.config import (
    ConfigError,
    canonical_json,
    load_config,
    repo_root,
    resolve,
    sections_hash,
    sha256_bytes,
)
from verifiable_grpo.core.config_schema import Profile
from verifiable_grpo.part2.generation_lock import check_generation
from verifiable_grpo.training import objectives, trl_parity

SCHEMA = "verifiable-grpo-family-lock-v1"
LOCK_PATH = "configs/part2/lock.json"
# The study's five arms, declared here and pre-registered in configs/part2/lock.json
# (read_pin checks the two agree); a registry section never adds an arm.
ARMS = objectives.declared_entries(
    ("grpo", "drgrpo", "dapo", "gspo", "aero"), declared_by="part2.lock.ARMS"
)
BASELINE = "grpo"
SEEDS = (11, 23, 37, 53, 71, 89, 107, 131)
REGIMES = {"on_policy": 1, "two_updates": 2}  # regime -> updates per rollout set
WARM_START = "data/recorded/tiny/policies/warmstart.safetensors"
# The config parts a run's numbers depend on (budgets come from the lock itself).
BASE_SECTIONS = ("model", "data", "tokens", "sampling", "device")
ANALYSIS_SEED = 20261201
LOCKED_AT = "2026-12-01"
# The committed lock's SHA-256 (of its canonical JSON, as every recorded manifest names it),
# pinned here so that an edit of configs/part2/lock.json cannot carry its own digest along.
COMMITTED_LOCK_SHA256 = "71e6c499e6f208967bc22d295a13b6027729cf23c0af4cc708c4bee7f60b2e05"
PIN_SUFFIX = ".pin.json"  # another lock's pin: lock.json -> lock.pin.json

RECORDED_BUDGET = {
    "steps": 30,
    "prompts_per_step": 4,
    "group_size": 4,
    "learning_rate": 3.0e-5,
    "weight_decay": 0.0,
    "max_grad_norm": 1.0,
    "warmup_fraction": 0.0,
    "final_lr_fraction": 0.0,
    "beta": 0.0,
    "temperature": 1.0,
    "checkpoint_every_steps": 5,
    "trainable": "full",
}
RECORDED_EVALUATION = {"problems": 200, "draws": 4}
# budget["trainable"]: "full" (every parameter) or "lora" (training/lora.py on every
# q/k/v/o/gate/up/down projection, the base frozen); a lora budget carries budget["lora"].
LORA_DEFAULTS = {"rank": 16, "alpha": 32, "dropout": 0.0}


def _budget(budget: dict | None) -> dict:
    """The recorded budget with the given changes; a LoRA budget gets its adapter shape."""
    merged = {**RECORDED_BUDGET, **(budget or {})}
    if merged["trainable"] not in ("full", "lora"):
        raise ValueError(f"budget trainable must be 'full' or 'lora', got {merged['trainable']!r}")
    if merged["trainable"] == "lora":
        merged["lora"] = {**LORA_DEFAULTS, **merged.get("lora", {})}
        if set(merged["lora"]) != set(LORA_DEFAULTS):
            raise ValueError(
                f"budget lora needs exactly {sorted(LORA_DEFAULTS)}, got {sorted(merged['lora'])}"
            )
    elif "lora" in merged:
        raise ValueError("budget lora is only read with trainable 'lora'")
    return merged


NOTES = [
    "learning rate 3e-5 (not the study card's 1e-6): on the tiny base 1e-6 leaves the policy "
    "frozen (configs/tiny.yaml: exact KL about 2e-6 after 50 updates); 3e-5 was picked from "
    "short development probes from this warm start that were not recorded (1e-4 lowered "
    "greedy accuracy there). Linear decay to 0 with no warm-up, as the card.",
    "full fine-tuning of the 2.7M-parameter tiny policy, not LoRA: the model is small enough "
    "to train whole on a CPU and Part I trains it whole, so the arms differ from Part I's "
    "run only in the objective and the sampler. The LoRA layer (training/lora.py, r=16, "
    "alpha=32, tested against peft) is not wired into the study runner; a LoRA regime "
    "would need a new lock.",
    "drgrpo is the grpo arm without std scaling only (TRL scale_rewards='none', loss_type "
    "'grpo'); dapo keeps loss_type 'grpo' and adds clip-higher 0.28 plus dynamic sampling, "
    "as the card's study ran them; neither is TRL's loss_type of the same name.",
    "on_policy (one update per rollout set): the old log-probs are the ones captured while "
    "sampling, which full rescoring reproduces within the 2e-4 check (about 1e-5 measured), "
    "so every ratio is 1 to that precision (TRL's is exactly 1): the clip cannot act and "
    "gspo's gradient equals grpo's up to it. two_updates lets the second update run off "
    "policy so that the ratio level and the clip can act.",
    "ZVF is logged per arm on the batch that is optimised: dapo's is 0 by construction and "
    "aero's one-rollout groups still receive a posterior advantage, so ZVF is not comparable "
    "across arms.",
]


def _treatment_changes(name: str) -> list[str]:
    base = objectives.get_objective(BASELINE).mechanics()
    spec = objectives.get_objective(name).mechanics()
    # an axis the baseline leaves at its default is absent from its mechanics (hash growth)
    return sorted(
        set(spec) ^ set(base) | {k for k in spec.keys() & base.keys() if spec[k] != base[k]}
    )


def _arm_entry(name: str) -> dict:
    objective = objectives.get_objective(name)
    trl = trl_parity.trl_arm(objective)
    return {
        "objective_sha256": objective.sha256(),
        "description": objective.description,
        "treatment_changes": _treatment_changes(name),
        "trl": {"config": trl.config, "subclass": trl.subclass},
    }


@dataclass(frozen=True)
class LockChoices:
    """The pre-registered choices a lock is built from (its pin stores them as a dict of
    these field names, so `LockChoices(**pin["choices"])` re-derives the lock)."""

    profile: str = "tiny"
    budget: dict | None = None  # changes to RECORDED_BUDGET
    evaluation: dict | None = None  # changes to RECORDED_EVALUATION
    seeds: tuple | list = SEEDS
    arms: tuple | list = ARMS
    warm_start: str = WARM_START
    locked_at: str = LOCKED_AT
    notes: tuple | list = tuple(NOTES)
    generation: dict | None = None  # part2/generation_lock, only where a lock declares one


def build_lock(choices: LockChoices = LockChoices()) -> dict:
    """The lock as the code and the base profile define it today from `choices` (a pure
    function)."""
    profile, seeds, arms, notes = choices.profile, choices.seeds, choices.arms, choices.notes
    warm_start, locked_at, generation = choices.warm_start, choices.locked_at, choices.generation
    unknown = [a for a in arms if a not in objectives.OBJECTIVES]
    if unknown:
        objectives.get_objective(unknown[0])  # raises with the known names
    if BASELINE not in arms:
        raise ValueError(f"the lock needs the baseline arm {BASELINE!r}")
    config = load_config(profile)
    evaluation = {**RECORDED_EVALUATION, **(choices.evaluation or {})}
    ev = config.evaluation
    warm = resolve(warm_start)
    if not warm.is_file():
        raise FileNotFoundError(f"warm start {warm} is missing: the lock pins its SHA-256")
    declared = {} if generation is None else {"generation": check_generation(generation)}
    return {
        "schema": SCHEMA,
        "locked_at": locked_at,
        "status": "preregistered-not-run",
        "scope": "Part II family study: arms, seeds, regimes, budgets, metric and analysis "
        "are fixed here before any recorded run; a change needs a new lock file.",
        "base_profile": profile,
        "base_sections": list(BASE_SECTIONS),
        "base_config_sha256": sections_hash(config, BASE_SECTIONS),
        "warm_start": {"path": warm_start, "sha256": files.sha256_file(warm)},
        "baseline_arm": BASELINE,
        "arms": {name: _arm_entry(name) for name in arms},
        "seeds": list(seeds),
        "regimes": {name: {"updates_per_rollout": n} for name, n in REGIMES.items()},
        "budget": _budget(choices.budget),
        "evaluation": {
            **evaluation,
            "seed_base": ev.seed_base,
            "greedy": True,
            "populations": ["ALL", "ID50", "OOD100"],
            "test_set": "the first `problems` of input/pages.json (balanced ID50/OOD100 below 200)",
            "untrained_warm_start": "evaluated once, stored as warmstart-heldout.json",
        },
        "metric": _metric_plan(),
        "analysis": _analysis_plan(),
        "notes": list(notes),
        **declared,
    }


def _metric_plan() -> dict:
    """The lock's metrics: the primary one and what is reported beside it."""
    return {
        "primary": "held-out greedy accuracy (ALL), per seed, paired with grpo's same seed",
        "secondary": [
            "per-draw success over the draws",
            "ID50 and OOD100 accuracy",
            "mean training reward of the last 10 steps",
            "mean ZVF and GU",
            "rollouts generated and discarded",
            "tokens generated",
            "wall seconds",
        ],
    }


def _analysis_plan() -> dict:
    """The lock's pre-registered analysis (bootstrap, tests, verdicts, exclusions)."""
    return {
        "rng_seed": ANALYSIS_SEED,
        "resamples": 10_000,
        "level": 0.95,
        "per_arm": "mean over seeds with a percentile bootstrap over seeds",
        "comparison": "arm - grpo per seed; paired percentile bootstrap of the mean "
        "difference (seeds resampled jointly)",
        "p_value": "exact two-sided paired sign-flip test over the seeds",
        "multiple_testing": "Benjamini-Hochberg at alpha 0.05 over the non-baseline "
        "arms, within each regime",
        "verdicts": {
            "better": "BH rejects and the 95% interval lies above 0",
            "worse": "BH rejects and the 95% interval lies below 0",
            "inconclusive": "anything else",
        },
        # "zvf": a key of the pre-registered lock, frozen with its digest
        "zvf": "observed ZVF vs the i.i.d. prediction p^G + (1-p)^G with p the mean "
        "reward of the drawn groups; not comparable across arms",
        "exclusions": "none: a run that fails (e.g. dynamic sampling exhausts its cap) is "
        "reported as failed, never rerun with another seed; a regime with a "
        "failed or missing run gets no verdicts (BH needs all four tests)",
    }


def lock_sha256(lock: dict) -> str:
    return sha256_bytes(canonical_json(lock))


def _choices(lock: dict) -> dict:
    """The pre-registered choices of a lock: build_lock's arguments that re-derive it."""
    return {
        "profile": lock["base_profile"],
        "seeds": list(lock["seeds"]),
        "arms": list(lock["arms"]),
        "warm_start": lock["warm_start"]["path"],
        "budget": lock["budget"],
        "locked_at": lock["locked_at"],
        "notes": list(lock["notes"]),
        "evaluation": {k: lock["evaluation"][k] for k in ("problems", "draws")},
        **({"generation": lock["generation"]} if "generation" in lock else {}),
    }


def pin_path(path) -> Path:
    """Where `write_lock` pins a new lock's digest and choices (beside it, committed with it)."""
    target = resolve(path)
    return target.with_name(target.stem + PIN_SUFFIX)


def _is_committed_lock(path) -> bool:
    return resolve(path).resolve() == resolve(LOCK_PATH).resolve()


def read_pin(path=LOCK_PATH) -> dict:
    """{"lock_sha256", "choices"} pinned for the lock at `path`: the committed lock's live in
    this module (an edit of the file cannot follow them), another lock's in its pin file."""
    if _is_committed_lock(path):
        return {
            "lock_sha256": COMMITTED_LOCK_SHA256,
            "choices": {
                "profile": "tiny",
                "seeds": list(SEEDS),
                "arms": list(ARMS),
                "warm_start": WARM_START,
                "budget": dict(RECORDED_BUDGET),
                "locked_at": LOCKED_AT,
                "evaluation": dict(RECORDED_EVALUATION),
            },
        }
    pin = pin_path(path)
    if not pin.is_file():
        raise ConfigError(
            [
                f"{path} has no pinned digest ({pin} is missing): a lock is pinned "
                "when `family lock --lock PATH` writes it; restore the pin file, or "
                "pre-register a new lock under a new path"
            ]
        )
    return files.read_json(pin)


def write_lock(lock: dict, path=LOCK_PATH) -> Path:
    """Write a new lock and its pin; an existing one is never replaced (pre-registration)."""
    target, pin = resolve(path), pin_path(path)
    for existing in (target, pin):
        if existing.exists():
            raise FileExistsError(
                f"{existing} exists: a pre-registered lock is never "
                "rewritten; verify it with `family lock --check`, or lock a "
                "new study under another --lock path"
            )
    files.save_json(pin, {"lock_sha256": lock_sha256(lock), "choices": _choices(lock)})
    return files.save_json(target, lock)


def warm_start_path(warm: dict) -> Path:
    """The lock's warm start, which must lie in the repository's data/ folder (a lock names
    a recorded policy; an edited path must not load a file from anywhere else)."""
    root = repo_root()
    return files.inside(root, warm["path"], "treatment lock: warm_start.path", [root / "data"])


def read_lock(path=LOCK_PATH) -> tuple[dict, str]:
    """(lock, SHA-256 of its canonical JSON)."""
    target = resolve(path)
    if not target.is_file():
        raise FileNotFoundError(
            f"no treatment lock at {target}: write it first with "
            "`python -m verifiable_grpo family lock`"
        )
    lock = files.read_json(target)
    if lock.get("schema") != SCHEMA:
        raise ConfigError([f"{target} is not a {SCHEMA} lock (schema {lock.get('schema')!r})"])
    return lock, lock_sha256(lock)


def _shown(value) -> str:
    text = json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _field_differences(found: dict, expected: dict, where: str) -> list[str]:
    """'<where>KEY is X, pre-registered Y' for every leaf that differs (arms by name)."""
    missing = object()
    out = []
    for key in sorted(set(found) | set(expected), key=str):
        mine, theirs = found.get(key, missing), expected.get(key, missing)
        if mine == theirs:
            continue
        if where.endswith(" ") and key == "arms" and isinstance(mine, dict):
            out += [
                f"{where}arms.{arm} (its registry entry or TRL mapping changed)"
                for arm in sorted(set(mine) | set(theirs or {}))
                if mine.get(arm) != (theirs or {}).get(arm)
            ]
        elif isinstance(mine, dict) and isinstance(theirs, dict):
            out += _field_differences(mine, theirs, f"{where}{key}.")
        else:
            shown = [_shown(v) if v is not missing else "absent" for v in (mine, theirs)]
            out.append(f"{where}{key} is {shown[0]}, pre-registered {shown[1]}")
    return out


def lock_differences(lock: dict, path=LOCK_PATH) -> list[str]:
    """Where a lock no longer matches its pin: every field against the lock that the code,
    the profile and the warm start build from the pinned choices, then the pinned SHA-256."""
    pin = read_pin(path)
    try:
        expected = build_lock(LockChoices(**pin["choices"]))
    except (ValueError, FileNotFoundError) as err:
        return [str(err)]
    found = _field_differences(lock, expected, f"{Path(str(path)).name} ")
    if not found and lock_sha256(lock) != pin["lock_sha256"]:
        found.append(
            f"{Path(str(path)).name} hashes to {lock_sha256(lock)[:12]}..., pinned "
            f"{pin['lock_sha256'][:12]}..."
        )
    return found


@dataclass(frozen=True)
class LockedRun:
    """One run the lock pre-registers: an arm trained from one seed under one regime."""

    arm: str
    seed: int
    regime: str


def check_request(
    lock: dict, arm: str | None = None, seed: int | None = None, regime: str | None = None
) -> None:
    """Refuse a run the lock does not cover (no compute, no rebuild of the lock)."""
    if arm is not None and arm not in lock["arms"]:
        objectives.get_objective(arm)  # an unknown name gets the registry's message
        raise ConfigError(
            [
                f"arm {arm!r} is not in the treatment lock (arms: "
                f"{', '.join(lock['arms'])}); a new arm needs a new lock"
            ]
        )
    if seed is not None and seed not in lock["seeds"]:
        raise ConfigError([f"seed {seed} is not pre-registered (seeds: {lock['seeds']})"])
    if regime is not None and regime not in lock["regimes"]:
        raise ConfigError([f"unknown regime {regime!r}: use one of {', '.join(lock['regimes'])}"])


def check_lock(
    lock: dict,
    arm: str | None = None,
    seed: int | None = None,
    regime: str | None = None,
    path=LOCK_PATH,
) -> None:
    """Refuse a lock that no longer matches its pin, or a run it does not cover."""
    changed = lock_differences(lock, path)
    if changed:
        raise ConfigError(
            [
                "the treatment lock differs from its pre-registration "
                f"({'; '.join(changed)}); a locked study cannot change: restore "
                "it, or pre-register a new lock file for a new study"
            ]
        )
    check_request(lock, arm, seed, regime)


def run_config(lock: dict, regime: str, seed: int) -> Profile:
    """The base profile with the lock's budgets for one run (a new profile, checked by the
    schema; its hash is that of the edited mapping)."""
    budget, evaluation = lock["budget"], lock["evaluation"]
    return load_config(lock["base_profile"]).replaced(
        seed=int(seed),
        grpo={
            "iterations": budget["steps"],
            "prompts_per_iteration": budget["prompts_per_step"],
            "group_size": budget["group_size"],
            "updates_per_rollout": lock["regimes"][regime]["updates_per_rollout"],
            "learning_rate": budget["learning_rate"],
            "weight_decay": budget["weight_decay"],
            "max_grad_norm": budget["max_grad_norm"],
            "warmup_fraction": budget["warmup_fraction"],
            "final_lr_fraction": budget["final_lr_fraction"],
            "kl_coefficient": budget["beta"],
            "interrupt_at": 1,
            "checkpoint_every_iterations": budget["checkpoint_every_steps"],
            # The recorded study ran before prompt sharing existed; it reruns as recorded.
            "share_prompts": False,
        },
        evaluation={
            "problems": evaluation["problems"],
            "draws": evaluation["draws"],
            "seed_base": evaluation["seed_base"],
        },
    )
