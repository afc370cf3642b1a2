"""Lab 3: learn a reward from pairwise preferences on a 2-D toy problem, then check it.

The hidden utility is r*(x) = 2 x1 + x2 - |x|^2 / 2, which completes the square to
2.5 - ((x1 - 2)^2 + (x2 - 1)^2) / 2: a bowl whose top, 2.5, sits at (2, 1). For a pair of
points the first is preferred with the Bradley-Terry probability sigma(r*(x) - r*(x')).
We fit two reward models to such labels with the pairwise log-loss: a small MLP (able to
bend like the bowl) and a linear score (which cannot, so it is misspecified by design).

Random draws, in order: one numpy Generator gives the training pairs, the test pairs, the
fresh evaluation points and afterwards the best-of-n candidates (best_of_n.py); torch's
global seed initialises the MLP first and the linear model second. Keeping that order
keeps the post-training module's figures.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn
from torch.nn.functional import binary_cross_entropy_with_logits

_CHUNK = 8192  # points per forward pass in predict()


def _sigmoid(z):
    return 1 / (1 + np.exp(-z))


def true_reward(x: np.ndarray) -> np.ndarray:
    """r*(x) over the last axis (size 2); float32 in, float32 out."""
    half_square_norm = 0.5 * np.square(x).sum(-1)
    return 2 * x[..., 0] + x[..., 1] - half_square_norm


def comparison_pairs(n: int, rng: np.random.Generator):
    """n labelled pairs: (first points, second points, 1.0 where the first won, the true
    probability that it wins). Points are standard normal in float32."""
    left, right = (rng.normal(size=(n, 2)).astype(np.float32) for _ in range(2))
    p_left = _sigmoid(true_reward(left) - true_reward(right))
    won = (rng.random(n) < p_left).astype(np.float32)
    return left, right, won, p_left


def oracle_metrics(labels: np.ndarray, probability: np.ndarray) -> dict:
    """The scores the true probabilities themselves get on the sampled labels: the
    ceiling a learned model can approach."""
    log_win = np.log(probability + 1e-12)
    log_lose = np.log(1 - probability + 1e-12)
    right_side = (probability >= 0.5) == labels
    return {
        "accuracy": float(np.mean(right_side)),
        "loss": float(-np.mean(labels * log_win + (1 - labels) * log_lose)),
        "expected_bayes_accuracy": float(np.mean(np.maximum(probability, 1 - probability))),
    }


def mlp_reward() -> nn.Module:
    """2 -> 64 -> 64 -> 1 with ReLU between the linear maps."""
    widths = (2, 64, 64, 1)
    layers: list[nn.Module] = []
    for depth, (fan_in, fan_out) in enumerate(zip(widths, widths[1:])):
        if depth:
            layers.append(nn.ReLU())
        layers.append(nn.Linear(fan_in, fan_out))
    return nn.Sequential(*layers)


def fit_reward(
    network: nn.Module,
    train,
    steps: int = 1500,
    lr: float = 3e-3,
    weight_decay: float = 1e-4,
    log_every: int = 500,
):
    """Full-batch AdamW on the Bradley-Terry loss of r(first) - r(second).

    Returns the network in eval mode and [step, training loss] every `log_every` steps."""
    left, right, won = map(torch.tensor, train[:3])
    adamw = torch.optim.AdamW(network.parameters(), lr, weight_decay=weight_decay)
    losses = []
    for done in range(1, steps + 1):
        adamw.zero_grad(set_to_none=True)
        score_gap = network(left).squeeze(-1) - network(right).squeeze(-1)
        objective = binary_cross_entropy_with_logits(score_gap, won)
        objective.backward()
        adamw.step()
        if done % log_every == 0:
            losses.append([done, objective.item()])
    network.eval()
    return network, losses


@torch.inference_mode()
def predict(network: nn.Module, points) -> np.ndarray:
    """r(x) for every point of an array shaped (..., 2); evaluated _CHUNK rows at a time
    so that a large candidate grid does not need one huge activation."""
    grid = np.asarray(points, dtype=np.float32)
    rows = torch.from_numpy(grid.reshape(-1, 2))
    pieces = []
    for begin in range(0, rows.shape[0], _CHUNK):
        pieces.append(network(rows[begin : begin + _CHUNK]).squeeze(-1).numpy())
    return np.concatenate(pieces).reshape(grid.shape[:-1])


def model_metrics(network, test, fresh: np.ndarray) -> dict:
    """Test-pair accuracy and log-loss, and the correlation of r with r* on fresh points.
    The mean reward is reported too, though it means nothing: adding a constant to r
    changes no comparison."""
    left, right, won, _ = test
    gap = predict(network, left) - predict(network, right)
    scores = predict(network, fresh)
    log_loss = np.logaddexp(0, gap) - won * gap  # -log sigma(+-gap), stable form
    return {
        "accuracy": float(np.mean((_sigmoid(gap) >= 0.5) == won)),
        "loss": float(np.mean(log_loss)),
        "correlation": float(np.corrcoef(scores, true_reward(fresh))[0, 1]),
        "mean_reward": float(scores.mean()),
    }


def calibration_table(probability: np.ndarray, labels: np.ndarray, bins: int = 10):
    """Reliability table over `bins` equal-width bins of the predicted P(first wins).

    Returns (rows, ECE). Each non-empty bin gives [bin index, count, mean prediction,
    observed win rate]; ECE is the count-weighted mean of |prediction - observation|."""
    probability, labels = np.asarray(probability), np.asarray(labels)
    if probability.size == 0 or probability.shape != labels.shape:
        raise ValueError("probability and labels must be non-empty and of equal length")
    if type(bins) is not int or bins < 1:
        raise ValueError(f"bins must be a positive integer, got {bins!r}")
    which_bin = np.minimum((bins * probability).astype(int), bins - 1)  # p = 1 -> last bin
    rows, ece = [], 0.0
    for index in np.unique(which_bin):  # ascending: the bins that hold something
        members = which_bin == index
        size = int(members.sum())
        mean_prediction = float(probability[members].mean())
        win_rate = float(labels[members].mean())
        share = size / len(labels)
        ece += share * abs(mean_prediction - win_rate)
        rows.append([int(index), size, mean_prediction, win_rate])
    return rows, ece


def fit_both(
    seed: int = 0,
    train_pairs: int = 4000,
    test_pairs: int = 2000,
    fresh_points: int = 2000,
    steps: int = 1500,
):
    """Data, the oracle's scores and both fitted models.

    Returns (rng, models, report); best_of_n keeps drawing from the same rng, which is
    what makes its candidates the module's."""
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    train = comparison_pairs(train_pairs, rng)
    test = comparison_pairs(test_pairs, rng)
    models, history = {}, {}
    # The MLP is built (and trained) before the linear model is built: init order.
    for name, build in (("mlp", mlp_reward), ("linear", lambda: nn.Linear(2, 1))):
        models[name], history[name] = fit_reward(build(), train, steps)
    fresh = rng.normal(size=(fresh_points, 2)).astype(np.float32)
    mlp_gap = predict(models["mlp"], test[0]) - predict(models["mlp"], test[1])
    table, ece = calibration_table(_sigmoid(mlp_gap), test[2])
    report = {
        "oracle": oracle_metrics(test[2], test[3]),
        "history": history,
        "models": {name: model_metrics(model, test, fresh) for name, model in models.items()},
        "calibration": table,
        "ece": ece,
    }
    return rng, models, report
