"""Lab 4, part A: DPO on an eight-response bandit against the exact KL-regularised optimum.

With a reference pi_ref and a reward r, the policy maximising E_pi[r] - beta KL(pi || pi_ref)
is pi*(y) proportional to pi_ref(y) exp(r(y) / beta). DPO never sees r: it fits the policy
to Bradley-Terry preference labels through the implicit reward beta log(pi / pi_ref). With
enough pairs the fit approaches pi*; with a finite sample of noisy labels it need not equal
it, and the gap grows as beta shrinks (sharper targets amplify label noise).
"""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

REFERENCE = (0.30, 0.20, 0.15, 0.12, 0.10, 0.06, 0.04, 0.03)
REWARD = (0.0, 0.5, 1.0, 0.2, -0.5, 1.5, 0.8, 2.0)


def check_beta(beta) -> float:
    if isinstance(beta, bool) or not isinstance(beta, (int, float)) or not beta > 0:
        raise ValueError(f"beta must be a positive number (the KL coefficient), got {beta!r}")
    return float(beta)


def kl_regularised_optimum(log_reference: torch.Tensor, reward: torch.Tensor,
                           beta: float) -> torch.Tensor:
    """pi*(y) = pi_ref(y) exp(r(y)/beta) / Z, the maximiser of E[r] - beta KL(pi||pi_ref)."""
    return F.softmax(log_reference + reward / check_beta(beta), dim=0)


def preference_counts(pairs: int, seed: int = 0):
    """Draw `pairs` i.i.d. response pairs from pi_ref, label them by Bradley-Terry on the
    true reward, and aggregate them into a (winner, loser) 8x8 count table (flattened).

    Returns (counts[64], agreement): agreement is how often the higher-reward response
    won among pairs with unequal rewards (about 0.68: the labels are noisy)."""
    rng = np.random.default_rng(seed)
    pi_ref = torch.tensor(REFERENCE, dtype=torch.float64)
    reward = torch.tensor(REWARD, dtype=torch.float64)
    first = rng.choice(8, pairs, p=pi_ref.numpy())
    second = rng.choice(8, pairs, p=pi_ref.numpy())
    probability = 1 / (1 + np.exp(-(reward[first] - reward[second]).numpy()))
    first_wins = rng.random(pairs) < probability
    chosen = torch.tensor(np.where(first_wins, first, second))
    rejected = torch.tensor(np.where(first_wins, second, first))
    unequal = reward[chosen] != reward[rejected]
    agreement = float((reward[chosen][unequal] > reward[rejected][unequal]).double().mean())
    # Equal (winner, loser) pairs contribute identical loss terms: counting them once with
    # a weight leaves the empirical loss unchanged and makes each step 64 terms, not 20,000.
    counts = torch.bincount(8 * chosen + rejected, minlength=64).double()
    return counts, agreement


def fit_dpo(counts: torch.Tensor, beta: float, steps: int = 1000, lr: float = 0.05) -> torch.Tensor:
    """Free logits initialised at log pi_ref, Adam on the count-weighted DPO loss."""
    beta = check_beta(beta)
    log_ref = torch.tensor(REFERENCE, dtype=torch.float64).log()
    winner, loser = torch.arange(8).repeat_interleave(8), torch.arange(8).repeat(8)
    logits = torch.nn.Parameter(log_ref.clone())
    optimizer = torch.optim.Adam([logits], lr=lr)
    for _ in range(steps):
        optimizer.zero_grad(set_to_none=True)
        logp = F.log_softmax(logits, dim=0)
        margin = beta * ((logp[winner] - log_ref[winner]) - (logp[loser] - log_ref[loser]))
        loss = -(F.logsigmoid(margin) * counts).sum() / counts.sum()
        loss.backward()
        optimizer.step()
    return F.softmax(logits.detach(), dim=0)


def kl(p: torch.Tensor, log_q: torch.Tensor) -> float:
    return float((p * (p.log() - log_q)).sum())


def compare(fitted: torch.Tensor, beta: float) -> dict:
    """The fitted policy beside the analytic optimum: KLs, expected rewards, max |dp|."""
    log_ref = torch.tensor(REFERENCE, dtype=torch.float64).log()
    reward = torch.tensor(REWARD, dtype=torch.float64)
    exact = kl_regularised_optimum(log_ref, reward, beta)
    return dict(beta=beta, fitted=fitted.tolist(), exact=exact.tolist(),
                fitted_kl=kl(fitted, log_ref), exact_kl=kl(exact, log_ref),
                fitted_reward=float((fitted * reward).sum()),
                exact_reward=float((exact * reward).sum()),
                max_error=float((fitted - exact).abs().max()))


def centred_implicit_reward(fitted: torch.Tensor, beta: float) -> list[float]:
    """beta log(pi / pi_ref), centred: DPO's reward estimate, defined up to a constant."""
    implicit = beta * (fitted.log() - torch.tensor(REFERENCE, dtype=torch.float64).log())
    return (implicit - implicit.mean()).tolist()


def run_bandit(betas=(0.25, 0.5, 1.0, 2.0), pairs: int = 20_000, steps: int = 1000,
               seed: int = 0) -> dict:
    betas = [check_beta(b) for b in betas]
    if type(pairs) is not int or pairs < 1:
        raise ValueError(f"pairs must be a positive integer, got {pairs!r}")
    counts, agreement = preference_counts(pairs, seed)
    rows, implicit = [], {}
    for beta in betas:
        fitted = fit_dpo(counts, beta, steps)
        rows.append(compare(fitted, beta))
        implicit[str(beta)] = centred_implicit_reward(fitted, beta)
    reward = torch.tensor(REWARD, dtype=torch.float64)
    return dict(agreement=agreement, rows=rows, centred_implicit_reward=implicit,
                centred_true_reward=(reward - reward.mean()).tolist())
