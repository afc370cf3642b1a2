"""Lab 3: a Bradley-Terry reward model on a synthetic 2-D utility, and its calibration.

The true utility r*(x) = 2 x1 + x2 - |x|^2 / 2 = 2.5 - ((x1 - 2)^2 + (x2 - 1)^2) / 2 peaks
at 2.5 at (2, 1). A pair (x, x') is labelled "x wins" with probability
sigma(r*(x) - r*(x')). Two reward models are fitted by the pair log-loss: an MLP, which
can represent the quadratic, and a linear model, which cannot (misspecified).

One numpy generator (seed 0) draws, in this order: training pairs, test pairs, fresh
points, then best-of-n candidates (best_of_n.py); torch's seed 0 initialises the MLP,
then the linear model. That order is the module's, so its figures reproduce.
"""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


def true_reward(x: np.ndarray) -> np.ndarray:
    return 2 * x[..., 0] + x[..., 1] - 0.5 * np.square(x).sum(-1)


def comparison_pairs(n: int, rng: np.random.Generator):
    """(first, second, labels, P(first wins)) with points ~ N(0, I2) in float32."""
    first = rng.normal(size=(n, 2)).astype(np.float32)
    second = rng.normal(size=(n, 2)).astype(np.float32)
    probability = 1 / (1 + np.exp(-(true_reward(first) - true_reward(second))))
    labels = (rng.random(n) < probability).astype(np.float32)
    return first, second, labels, probability


def oracle_metrics(labels: np.ndarray, probability: np.ndarray) -> dict:
    """How the true preference probabilities themselves score on sampled labels."""
    loss = -np.mean(labels * np.log(probability + 1e-12)
                    + (1 - labels) * np.log(1 - probability + 1e-12))
    return dict(accuracy=float(np.mean((probability >= 0.5) == labels)), loss=float(loss),
                expected_bayes_accuracy=float(np.mean(np.maximum(probability, 1 - probability))))


def mlp_reward() -> nn.Module:
    return nn.Sequential(nn.Linear(2, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(),
                         nn.Linear(64, 1))


def fit_reward(network: nn.Module, train, steps: int = 1500, lr: float = 3e-3,
               weight_decay: float = 1e-4, log_every: int = 500):
    """Full-batch AdamW on the Bradley-Terry log-loss of r(x) - r(x'); returns the
    network (eval mode) and the training loss every `log_every` steps."""
    first, second, target = (torch.tensor(x) for x in train[:3])
    optimizer = torch.optim.AdamW(network.parameters(), lr=lr, weight_decay=weight_decay)
    history = []
    for step in range(1, steps + 1):
        optimizer.zero_grad(set_to_none=True)
        delta = network(first).squeeze(-1) - network(second).squeeze(-1)
        loss = F.binary_cross_entropy_with_logits(delta, target)
        loss.backward()
        optimizer.step()
        if step % log_every == 0:
            history.append([step, loss.item()])
    return network.eval(), history


@torch.inference_mode()
def predict(network: nn.Module, points) -> np.ndarray:
    """Reward of every point in (..., 2), in chunks of 8,192 to bound memory."""
    array = np.asarray(points, dtype=np.float32)
    flat = torch.from_numpy(array.reshape(-1, 2))
    values = [network(chunk).squeeze(-1).numpy() for chunk in flat.split(8192)]
    return np.concatenate(values).reshape(array.shape[:-1])


def model_metrics(network, test, fresh: np.ndarray) -> dict:
    """Pair accuracy and log-loss on test pairs; correlation with r* on fresh points; the
    mean reward, which is arbitrary (a constant shift cancels from every comparison)."""
    a, b, labels, _ = test
    delta = predict(network, a) - predict(network, b)
    probability = 1 / (1 + np.exp(-delta))
    reward = predict(network, fresh)
    return dict(accuracy=float(np.mean((probability >= 0.5) == labels)),
                loss=float(np.mean(np.logaddexp(0, delta) - labels * delta)),
                correlation=float(np.corrcoef(reward, true_reward(fresh))[0, 1]),
                mean_reward=float(reward.mean()))


def calibration_table(probability: np.ndarray, labels: np.ndarray, bins: int = 10):
    """Equal-width bins of predicted P(first wins): [bin, count, mean predicted, observed
    frequency] for non-empty bins, and ECE = sum_b (count_b / n) |predicted_b - observed_b|."""
    probability, labels = np.asarray(probability), np.asarray(labels)
    if probability.shape != labels.shape or probability.size == 0:
        raise ValueError("probability and labels must be non-empty and of equal length")
    if type(bins) is not int or bins < 1:
        raise ValueError(f"bins must be a positive integer, got {bins!r}")
    ids = np.minimum((bins * probability).astype(int), bins - 1)
    rows, ece = [], 0.0
    for i in range(bins):
        select = ids == i
        count = int(select.sum())
        if count:
            predicted, observed = float(probability[select].mean()), float(labels[select].mean())
            ece += count / len(labels) * abs(predicted - observed)
            rows.append([i, count, predicted, observed])
    return rows, ece


def fit_both(seed: int = 0, train_pairs: int = 4000, test_pairs: int = 2000,
             fresh_points: int = 2000, steps: int = 1500):
    """Data, oracle, both fitted models. Returns (rng, models, report); the rng continues
    into best-of-n so its draws match the module's."""
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    train, test = comparison_pairs(train_pairs, rng), comparison_pairs(test_pairs, rng)
    mlp, mlp_history = fit_reward(mlp_reward(), train, steps)
    linear, linear_history = fit_reward(nn.Linear(2, 1), train, steps)
    fresh = rng.normal(size=(fresh_points, 2)).astype(np.float32)
    probability = 1 / (1 + np.exp(-(predict(mlp, test[0]) - predict(mlp, test[1]))))
    calibration, ece = calibration_table(probability, test[2])
    report = dict(oracle=oracle_metrics(test[2], test[3]),
                  history=dict(mlp=mlp_history, linear=linear_history),
                  models=dict(mlp=model_metrics(mlp, test, fresh),
                              linear=model_metrics(linear, test, fresh)),
                  calibration=calibration, ece=ece)
    return rng, dict(mlp=mlp, linear=linear), report
