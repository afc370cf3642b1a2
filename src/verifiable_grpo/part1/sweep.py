"""A measured sweep beyond the specification: is there a GRPO setting on the tiny base
whose per-draw test success rises above the warm start's?

The specification's budget (learning rate 1e-5, 100 iterations, two updates per rollout
set, G = 4) is Part I's faithful record and it did not move the policy much. The sweep
trains GRPO from the same recorded warm start with a few other settings declared here
before any of them ran, then:

- selects ONE setting by per-draw success on the validation split (200 ID50 problems,
  4 draws each, seeds of their own) — never by the test set, so that the test comparison
  of the selected setting is not a best-of-N on the test set;
- reports, for every setting, test greedy and per-draw success, and the paired
  comparison with the warm start on the same problems and draw seeds (paired bootstrap
  95 % interval of the per-problem success difference, exact McNemar on draw 0).
The selected setting "learns" when its paired interval lies above zero.

Each setting is an ordinary Part I GRPO branch run (training/grpo.py, exact prefix KL,
crash checkpoints) in its own folder RUNS/<name>, continuous mode; only the four swept
values differ from the tiny profile. A finished setting keeps RUNS/<name>/result.json
and is skipped on the next call, so an interrupted sweep continues where it stopped.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from verifiable_grpo.core import files, record_folders
from verifiable_grpo.core import model as model_lib
from verifiable_grpo.core.config import provenance, resolve, sha256_file
from verifiable_grpo.core.config_schema import Profile
from verifiable_grpo.core.record_names import with_current_names
from verifiable_grpo.core.runfolder import RunFolder
from verifiable_grpo.evaluation import paired, policy_scores
from verifiable_grpo.task import data

RECORDED_TINY = "data/recorded/tiny"
RECORDED = "data/recorded/tiny-sweep"
RECORD_KIND = record_folders.RecordKind("sweep record", frozenset({"sweep.json"}), "sweep.json")
VALIDATION_SEED_BASE = 470000  # test draws use evaluation.seed_base (480000)
ANALYSIS_SEED = 20261201
SPEC = {"learning_rate": 1.0e-5, "iterations": 100, "updates_per_rollout": 2, "group_size": 4}


@dataclass(frozen=True)
class Setting:
    name: str
    learning_rate: float
    iterations: int
    updates_per_rollout: int
    group_size: int
    why: str


# Declared before any run (the order is the run order).
SETTINGS = (
    Setting("lr3e-5", 3e-5, 100, 2, 4, "3x the recorded rate, the specification's budget"),
    Setting("lr1e-4", 1e-4, 100, 2, 4, "10x the recorded rate"),
    Setting("lr3e-4", 3e-4, 100, 2, 4, "30x: where the clip should start to act"),
    Setting("lr1e-4-g8", 1e-4, 100, 1, 8, "a larger group, one update per rollout set"),
    Setting("lr1e-4-4upd", 1e-4, 100, 4, 4, "more updates per rollout set (off-policy)"),
    Setting("lr1e-4-200it", 1e-4, 200, 2, 4, "twice the iterations"),
)


def setting_config(base: Profile, setting: Setting) -> Profile:
    """The tiny profile with the setting's four values (interrupt point kept valid): a new
    profile, checked by the schema, its hash that of the edited mapping."""
    return base.replaced(
        grpo={
            "learning_rate": setting.learning_rate,
            "iterations": setting.iterations,
            "updates_per_rollout": setting.updates_per_rollout,
            "group_size": setting.group_size,
            "interrupt_at": min(base.grpo.interrupt_at, setting.iterations - 1),
            # The recorded sweep ran before prompt sharing existed.
            "share_prompts": False,
        }
    )


def prepare_folder(folder: Path, config: Profile) -> None:
    """A Part I run folder holding the dataset and the recorded warm start (SHA-checked)."""
    data_dir, learning = folder / "data", folder / "learning-data"
    if not (data_dir / "MANIFEST.json").is_file():
        data.write_dataset(data_dir, config.data.seed)
    if not (learning / "MANIFEST.json").is_file():
        data.write_learning_view(data_dir, learning)
    copy_warm_start(folder)


def copy_warm_start(folder: Path) -> None:
    """The recorded warm start (SHA-checked) and its resume record into a run folder."""
    recorded = resolve(RECORDED_TINY)
    warm = RunFolder(recorded).recorded_policy_sha256("warmstart")
    source = recorded / "policies" / "warmstart.safetensors"
    if warm is None or sha256_file(source) != warm:
        raise ValueError(f"{source} does not match its record: restore data/recorded/tiny")
    target = RunFolder(folder).policy("warmstart")
    if not target.is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        (folder / "learning").mkdir(exist_ok=True)
        shutil.copyfile(
            recorded / "learning" / "warmstart-resume.json",
            RunFolder(folder).record("warmstart", "resume"),
        )


def _validation_pages(learning: Path) -> list[tuple[int, dict]]:
    return list(enumerate(data.read_examples(learning, "validation")))


def validation_sample(
    policy, tokenizer, config: Profile, learning: Path, problems: int | None = None
) -> list[dict]:
    """Scored per-draw rows on the first `problems` validation problems (all by default),
    with the evaluation's draws and this module's validation seeds."""
    validation = _validation_pages(learning)[:problems]
    gold = {page["document_id"]: page for _, page in validation}
    return policy_scores.score(
        policy_scores.answer(
            policy,
            tokenizer,
            config,
            policy_scores.Questions(validation, config.evaluation.draws, VALIDATION_SEED_BASE),
        ),
        gold,
    )["sample"]


def score_policy(policy, tokenizer, config: Profile, folder: Path) -> dict:
    """Scored rows: validation per-draw (selection) and test greedy + per-draw (report)."""
    val = validation_sample(policy, tokenizer, config, folder / "learning-data")
    _, test = policy_scores.score_test_set(policy, tokenizer, config, folder / "data")
    return {"validation_sample": val, "test_greedy": test["greedy"], "test_sample": test["sample"]}


def _rate(rows: list[dict]) -> dict:
    correct = int(sum(r["reward"] for r in rows))
    return {"correct": correct, "responses": len(rows), "rate": correct / len(rows)}


def _compact(rows: list[dict]) -> list[list]:
    """[document_id, draw, seed, reward] per row: what a paired comparison needs."""
    return [[r["document_id"], r["draw"], r["seed"], int(r["reward"])] for r in rows]


def _expand(rows: list[list]) -> list[dict]:
    return [
        {"document_id": d, "draw": k, "seed": s, "reward": r, "population": "ALL"}
        for d, k, s, r in rows
    ]


def paired_modes(first: dict, second: dict, seed: int) -> dict:
    """Second minus first, paired by problem, for the "sample" and "greedy" rows of each
    (compact rows; fields past the reward are ignored), stream [seed, mode index]."""
    import numpy as np

    from verifiable_grpo.evaluation import paired

    out = {}
    for index, mode in enumerate(("sample", "greedy")):
        rows = [_expand([r[:4] for r in side[mode]]) for side in (first, second)]
        out[mode] = paired.compare(*rows, np.random.default_rng([seed, index]))
    return out


def _history(record: dict) -> list[dict]:
    """Per iteration: mean reward, ZVF, exact KL and clip activity of the last update."""
    out = []
    for h in record["history"]:
        updates = h.get("updates") or [{}]
        out.append(
            {
                "iteration": h["iteration"],
                "mean_reward": h["mean_reward"],
                "zero_variance_fraction": h["zero_variance_fraction"],
                "kl": h["mean_exact_kl"],
                "clip": max(
                    u.get("clip_low_fraction", 0.0) + u.get("clip_high_fraction", 0.0)
                    for u in updates
                ),
            }
        )
    return out


def warm_policy(folder: Path, config: Profile) -> tuple:
    """(policy, metadata): the warm start of a prepared run folder, in eval mode."""
    run_folder = RunFolder(folder)
    policy, meta = model_lib.reload_policy(
        run_folder.policy("warmstart"), config, run_folder.recorded_policy_sha256("warmstart")
    )
    policy.eval()
    return policy, meta


def train_only(config: Profile, folder: Path, progress: bool = True) -> tuple:
    """GRPO from the recorded warm start in `folder` (continuing a training that stopped,
    reusing one that finished): (learning record, trained policy in eval mode, None)."""
    from verifiable_grpo.training.grpo import finished_or_trained, with_trained_weights

    prepare_folder(folder, config)
    record = finished_or_trained(config, folder, progress)  # a finished run is reused
    policy, _ = warm_policy(folder, config)
    return record, with_trained_weights(policy, folder), None


def train_and_score(config: Profile, folder: Path, progress: bool = True) -> tuple:
    """train_only, then the policy's scores: (learning record, policy, scored rows)."""
    record, policy, _ = train_only(config, folder, progress)
    return record, policy, score_policy(policy, model_lib.load_tokenizer(config), config, folder)


def run_setting(base: Profile, setting: Setting, runs: Path) -> dict:
    """Train (or reuse) one setting and score it; returns RUNS/<name>/result.json."""
    folder = runs / setting.name
    done = folder / "result.json"
    if done.is_file():  # written by this or an earlier version (`zvf`)
        return with_current_names(files.read_cached_json(done))
    config = setting_config(base, setting)
    started = time.perf_counter()
    trained = train_and_score(config, folder)
    result = {"setting": asdict(setting), **trained_result(config, trained, _history, started)}
    files.save_cached_json(done, result)
    return result


def trained_result(config: Profile, trained: tuple, history, started: float) -> dict:
    """What a trained and scored run records after its own name: settings, the final
    weights' digest, times, `history(record)` per iteration, the compact scores, provenance."""
    record, policy, scored = trained
    return {
        "config_grpo": config["grpo"],
        "final_model_digest": model_lib.model_digest(policy),
        "train_seconds": record["timings"]["total_seconds"],
        "seconds": time.perf_counter() - started,
        "history": history(record),
        **{k: _compact(v) for k, v in scored.items()},
        "provenance": provenance(config),
    }


def warm_start_result(base: Profile, runs: Path) -> dict:
    folder = runs / "warmstart"
    done = folder / "result.json"
    if done.is_file():
        return files.read_cached_json(done)
    prepare_folder(folder, base)
    warm = RunFolder(folder)
    policy, _ = model_lib.reload_policy(
        warm.policy("warmstart"), base, warm.recorded_policy_sha256("warmstart")
    )
    policy.eval()
    scored = score_policy(policy, model_lib.load_tokenizer(base), base, folder)
    result = {
        "setting": {"name": "warmstart"},
        **{k: _compact(v) for k, v in scored.items()},
        "provenance": provenance(base),
    }
    files.save_cached_json(done, result)
    return result


def check_warm_start(warm: dict) -> None:
    """The sweep's warm start must score exactly as Part I's record on the test set (same
    policy, problems, draw seeds and batching): otherwise the pairing would be broken."""
    recorded = files.read_json(resolve(RECORDED_TINY) / "results.json")["policies"]["warmstart"]
    mine = {
        "greedy": _rate(_expand(warm["test_greedy"]))["correct"],
        "per-draw": _rate(_expand(warm["test_sample"]))["correct"],
    }
    theirs = {
        "greedy": recorded["greedy_pass_at_1"]["ALL"]["correct"],
        "per-draw": recorded["per_draw_success"]["ALL"]["correct"],
    }
    if mine != theirs:
        raise ValueError(
            f"the sweep's warm start scored {mine} on the test set, Part I's "
            f"record {theirs}: the sweep ran other code or another warm start"
        )


def summarise(warm: dict, results: list[dict], resamples: int = 10_000) -> dict:
    """The sweep table, the selection by validation and the paired test comparisons."""
    rows = []
    for index, res in enumerate(results):
        rng = np.random.default_rng([ANALYSIS_SEED, index])
        test = paired.compare(
            _expand(warm["test_sample"]), _expand(res["test_sample"]), rng, resamples=resamples
        )
        last = res["history"][-10:]
        rows.append(
            {
                **res["setting"],
                "validation_per_draw": _rate(_expand(res["validation_sample"])),
                "test_greedy": _rate(_expand(res["test_greedy"])),
                "test_per_draw": _rate(_expand(res["test_sample"])),
                "paired_vs_warm_start": test,
                "last10_reward": float(np.mean([h["mean_reward"] for h in last])),
                "last10_kl": float(np.mean([h["kl"] for h in last])),
                "clip_max": float(max(h["clip"] for h in res["history"])),
                "train_seconds": res["train_seconds"],
            }
        )
    best = max(range(len(rows)), key=lambda i: (rows[i]["validation_per_draw"]["rate"], -i))
    chosen = rows[best]
    return {
        "rule": "select the highest validation per-draw success (ties: the earlier "
        "setting); it learns when its paired 95% test interval lies above 0",
        "warm_start": {
            "validation_per_draw": _rate(_expand(warm["validation_sample"])),
            "test_greedy": _rate(_expand(warm["test_greedy"])),
            "test_per_draw": _rate(_expand(warm["test_sample"])),
        },
        "specification": SPEC,
        "settings": rows,
        "selected": chosen["name"],
        "learns": bool(chosen["paired_vs_warm_start"]["low"] > 0),
    }


def check_setting_names(names: list[str] | None) -> None:
    """ValueError naming the settings that are not declared (None: all of them)."""
    unknown = sorted(set(names or []) - {s.name for s in SETTINGS})
    if unknown:
        raise ValueError(
            f"unknown sweep settings {unknown}: choose from {[s.name for s in SETTINGS]}"
        )


def run_sweep(base: Profile, runs, names: list[str] | None = None) -> dict:
    runs = Path(runs)
    check_setting_names(names)
    chosen = [s for s in SETTINGS if names is None or s.name in names]
    warm = warm_start_result(base, runs)
    results = [run_setting(base, s, runs) for s in chosen]
    return summarise(warm, results)


def export(base: Profile, runs, dest=None) -> Path:
    """data/recorded/tiny-sweep/sweep.json: every setting's result plus the summary."""
    runs = Path(runs)
    dest = resolve(RECORDED) if dest is None else Path(dest)
    missing = [s.name for s in SETTINGS if not (runs / s.name / "result.json").is_file()]
    if missing or not (runs / "warmstart" / "result.json").is_file():
        raise ValueError(
            f"the sweep is not finished ({missing or ['warmstart']} missing): "
            "run `python -m verifiable_grpo sweep` first"
        )
    warm = files.read_cached_json(runs / "warmstart" / "result.json")
    check_warm_start(warm)
    results = [
        with_current_names(files.read_cached_json(runs / s.name / "result.json")) for s in SETTINGS
    ]
    record = {"summary": summarise(warm, results), "warm_start": warm, "results": results}
    dest = record_folders.replace_folder(
        dest, RECORD_KIND, lambda folder: files.save_json(folder / "sweep.json", record), [runs]
    )
    return dest / "sweep.json"


def load_recorded(dest=None) -> dict:
    """The recorded sweep, with its histories' keys under their current names (it was
    recorded when a history said `zvf`; the file itself is never rewritten)."""
    dest = resolve(RECORDED) if dest is None else Path(dest)
    return with_current_names(files.read_json(dest / "sweep.json"))
