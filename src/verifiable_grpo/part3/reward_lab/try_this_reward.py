"""Lab 3's "Try this" variants: a reward model from little data, and from biased labels.

- Small data: fit on 200 pairs instead of 4,000, over several seeds, and compare the
  MLP's calibration (ten-bin ECE on the test pairs) and where best-of-n against each
  learned reward peaks (the n whose kept candidate has the highest true reward).
- Label bias: the labeller judges r*(x) + bias * x2 rather than r*(x), a systematic
  preference for large x2. The learned reward then models the biased utility, whose top
  moves from (2, 1) to (2, 1 + bias); no amount of data or search undoes that: even a
  perfect fit to the labels, searched hard, converges on the biased top, whose true
  reward is 2.5 - bias^2 / 2 (`where_selection_goes` shows where each selector goes).

Draws follow reward_model.fit_both (pairs, test pairs, fresh points, then candidates
from one numpy Generator), so `label_bias=0, train_pairs=4000, seed=0` is the lab's run.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from verifiable_grpo.part3.reward_lab import reward_model as rm
from verifiable_grpo.part3.reward_lab.best_of_n import check_sizes, selection_row


def biased_pairs(n: int, rng: np.random.Generator, bias: float = 0.0):
    """reward_model.comparison_pairs with the labeller's utility r*(x) + bias * x2."""
    left, right = (rng.normal(size=(n, 2)).astype(np.float32) for _ in range(2))
    judged = rm.true_reward(left) + bias * left[:, 1] - rm.true_reward(right) - bias * right[:, 1]
    p_left = rm._sigmoid(judged)
    won = (rng.random(n) < p_left).astype(np.float32)
    return left, right, won, p_left


@dataclass(frozen=True)
class Selection:
    """The best-of-n table: the candidate counts n and the trials (fresh draws) per n."""

    sizes: tuple = (1, 4, 16, 64, 256, 1024, 4096, 16384)
    trials: int = 200


@dataclass(frozen=True)
class LabSizes:
    """Lab 3's sizes a variant keeps: test pairs, fresh points scored, training steps."""

    test_pairs: int = 2000
    fresh_points: int = 2000
    steps: int = 1500


def fit_and_search(
    seed: int = 0,
    train_pairs: int = 4000,
    label_bias: float = 0.0,
    selection: Selection = Selection(),
    lab: LabSizes = LabSizes(),
) -> dict:
    """Both reward models fitted on (possibly biased) labels, then the best-of-n table.
    Test accuracy is against the labeller's labels; correlation is with the TRUE reward."""
    sizes, trials = selection.sizes, selection.trials
    test_pairs, fresh_points, steps = lab.test_pairs, lab.fresh_points, lab.steps
    if type(train_pairs) is not int or train_pairs < 2:
        raise ValueError(f"train_pairs must be an integer >= 2, got {train_pairs!r}")
    sizes = check_sizes(sizes)
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    train = biased_pairs(train_pairs, rng, label_bias)
    test = biased_pairs(test_pairs, rng, label_bias)
    models = {}
    for name, build in (("mlp", rm.mlp_reward), ("linear", lambda: nn.Linear(2, 1))):
        models[name] = rm.fit_reward(build(), train, steps)[0]
    fresh = rng.normal(size=(fresh_points, 2)).astype(np.float32)
    mlp_gap = rm.predict(models["mlp"], test[0]) - rm.predict(models["mlp"], test[1])
    _, ece = rm.calibration_table(rm._sigmoid(mlp_gap), test[2])
    rows = [selection_row(n, rng, models, trials) for n in sizes]
    return {
        "seed": seed,
        "train_pairs": train_pairs,
        "label_bias": label_bias,
        "mlp_ece": ece,
        "models": {name: rm.model_metrics(model, test, fresh) for name, model in models.items()},
        "selection": rows,
        "peak": {key: peak(rows, key) for key in ("linear_true", "mlp_true")},
        # after the table, so that the table's candidates are the lab's
        "where": where_selection_goes(rng, models["mlp"], label_bias) if label_bias else None,
    }


def peak(rows: list[dict], key: str) -> dict:
    """The row with the highest `key` (first on ties): the best n for that selector."""
    best = max(rows, key=lambda row: row[key])
    return {"n": best["n"], "true_reward": best[key]}


def where_selection_goes(
    rng, network, bias: float, sizes=(16, 256, 4096), trials: int = 200
) -> list[dict]:
    """Best-of-n by three scores on fresh candidates: the learned reward, the labeller's own
    utility r* + bias * x2 (a perfect fit to the biased labels) and r* itself. For each,
    the mean true reward and the mean x2 of the kept candidates."""
    rows = []
    for n in sizes:
        points = rng.normal(size=(trials, n, 2)).astype(np.float32)
        truth = rm.true_reward(points)
        scores = {
            "learned": rm.predict(network, points),
            "labeller": truth + bias * points[..., 1],
            "true": truth,
        }
        row = {"n": n}
        for name, score in scores.items():
            kept = np.take_along_axis(points, score.argmax(1)[:, None, None], axis=1)[:, 0]
            row[name] = {
                "true_reward": float(rm.true_reward(kept).mean()),
                "x2": float(kept[:, 1].mean()),
            }
        rows.append(row)
    return rows


def run_variants(
    seeds=(0, 1, 2), small: int = 200, label_bias: float = 0.5, trials: int = 200
) -> dict:
    """200 against 4,000 training pairs for each seed, and the biased labeller (seed 0)."""
    table = Selection(trials=trials)
    runs = {
        "pairs": [fit_and_search(seed, n, selection=table) for seed in seeds for n in (small, 4000)]
    }
    runs["label_bias"] = fit_and_search(0, 4000, label_bias, table)
    runs["biased_top_true_reward"] = float(rm.true_reward(np.array([2.0, 1.0 + label_bias])))
    return runs
