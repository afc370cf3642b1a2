"""Lab 4, part A: DPO on a bandit with eight responses, checked against the exact answer.

For a reference pi_ref and a reward r, the objective E_pi[r] - beta KL(pi || pi_ref) is
maximised by pi*(y) = pi_ref(y) exp(r(y) / beta) / Z (a Gibbs distribution; the
derivation is in the chapter). DPO is never shown r. It fits preference labels drawn
from the Bradley-Terry model, through the implicit reward beta log(pi / pi_ref). Many
pairs bring the fit near pi*; a finite set of noisy labels leaves a gap, and the gap
widens as beta shrinks, because a sharper target magnifies the label noise.
"""

from __future__ import annotations

import numpy as np
import torch
from torch.nn.functional import log_softmax, logsigmoid, softmax

REFERENCE = (0.30, 0.20, 0.15, 0.12, 0.10, 0.06, 0.04, 0.03)
REWARD = (0.0, 0.5, 1.0, 0.2, -0.5, 1.5, 0.8, 2.0)
_ARMS = len(REFERENCE)


def _as_float64(values) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float64)


def check_beta(beta) -> float:
    """beta as a float; a clear error for anything but a positive number."""
    is_number = isinstance(beta, (int, float)) and not isinstance(beta, bool)
    if not (is_number and beta > 0):
        raise ValueError(f"beta must be a positive number (the KL coefficient), got {beta!r}")
    return float(beta)


def kl_regularised_optimum(
    log_reference: torch.Tensor, reward: torch.Tensor, beta: float
) -> torch.Tensor:
    """pi* = softmax(log pi_ref + r / beta): the maximiser of E[r] - beta KL(pi || pi_ref)."""
    return softmax(log_reference + reward / check_beta(beta), dim=0)


def preference_counts(pairs: int, seed: int = 0):
    """Sample `pairs` independent pairs of responses from pi_ref, let Bradley-Terry on
    the true reward pick a winner, and tally the outcomes as a flattened 8 x 8 table
    indexed by 8 * winner + loser.

    Returns (counts[64] float64, agreement), where agreement is the share of pairs with
    different rewards that the better response won (about 0.68: noisy labels)."""
    rng = np.random.default_rng(seed)
    reference = np.array(REFERENCE, dtype=np.float64)
    reward = np.array(REWARD, dtype=np.float64)
    a = rng.choice(_ARMS, pairs, p=reference)
    b = rng.choice(_ARMS, pairs, p=reference)
    a_wins = rng.random(pairs) < 1 / (1 + np.exp(-(reward[a] - reward[b])))
    winner = np.where(a_wins, a, b)
    loser = np.where(a_wins, b, a)
    differ = reward[winner] != reward[loser]
    agreement = float(
        torch.from_numpy(reward[winner][differ] > reward[loser][differ]).double().mean()
    )
    # A (winner, loser) combination that occurs k times adds k identical loss terms, so
    # one weighted term per combination gives the same loss with 64 terms, not `pairs`.
    tally = np.bincount(_ARMS * winner + loser, minlength=_ARMS * _ARMS)
    return torch.from_numpy(tally).double(), agreement


def fit_dpo(counts: torch.Tensor, beta: float, steps: int = 1000, lr: float = 0.05) -> torch.Tensor:
    """Minimise the count-weighted DPO loss over free logits (Adam), starting at pi_ref;
    returns the fitted policy's probabilities."""
    beta = check_beta(beta)
    log_ref = _as_float64(REFERENCE).log()
    table = torch.cartesian_prod(torch.arange(_ARMS), torch.arange(_ARMS))
    winner, loser = table[:, 0], table[:, 1]  # row 8 w + l of the count table
    free = torch.nn.Parameter(log_ref.clone())
    adam = torch.optim.Adam([free], lr=lr)
    total = counts.sum()
    for _ in range(steps):
        adam.zero_grad(set_to_none=True)
        log_pi = log_softmax(free, dim=0)
        implicit = log_pi - log_ref  # implicit reward / beta
        margins = beta * (implicit[winner] - implicit[loser])
        weighted = -(logsigmoid(margins) * counts).sum() / total
        weighted.backward()
        adam.step()
    return softmax(free.detach(), dim=0)


def kl(p: torch.Tensor, log_q: torch.Tensor) -> float:
    """KL(p || q) in nats, q given by its logarithm."""
    return float(torch.sum(p * (p.log() - log_q)))


def compare(fitted: torch.Tensor, beta: float) -> dict:
    """The DPO fit next to the analytic optimum: KL to pi_ref, expected reward, and the
    largest probability difference."""
    log_ref, reward = _as_float64(REFERENCE).log(), _as_float64(REWARD)
    optimum = kl_regularised_optimum(log_ref, reward, beta)
    row = {"beta": beta, "fitted": fitted.tolist(), "exact": optimum.tolist()}
    row.update(fitted_kl=kl(fitted, log_ref), exact_kl=kl(optimum, log_ref))
    row.update(
        fitted_reward=float(torch.sum(fitted * reward)),
        exact_reward=float(torch.sum(optimum * reward)),
    )
    row["max_error"] = float(torch.max(torch.abs(fitted - optimum)))
    return row


def centred_implicit_reward(fitted: torch.Tensor, beta: float) -> list[float]:
    """DPO's estimate of the reward, beta log(pi / pi_ref), known only up to a constant:
    shown with its mean removed."""
    estimate = beta * (fitted.log() - _as_float64(REFERENCE).log())
    return (estimate - estimate.mean()).tolist()


def run_bandit(
    betas=(0.25, 0.5, 1.0, 2.0), pairs: int = 20_000, steps: int = 1000, seed: int = 0
) -> dict:
    """Part A whole: one set of preference counts, a DPO fit per beta."""
    betas = [check_beta(value) for value in betas]
    if type(pairs) is not int or pairs < 1:
        raise ValueError(f"pairs must be a positive integer, got {pairs!r}")
    counts, agreement = preference_counts(pairs, seed)
    fits = [(beta, fit_dpo(counts, beta, steps)) for beta in betas]
    reward = _as_float64(REWARD)
    return {
        "agreement": agreement,
        "rows": [compare(fitted, beta) for beta, fitted in fits],
        "centred_implicit_reward": {
            str(beta): centred_implicit_reward(fitted, beta) for beta, fitted in fits
        },
        "centred_true_reward": (reward - reward.mean()).tolist(),
    }
