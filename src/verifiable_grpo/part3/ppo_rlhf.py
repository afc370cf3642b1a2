"""PPO-based RLHF at the scale of one episode: the KL-shaped per-token reward, generalised
advantage estimation (GAE) against a value baseline, the clipped surrogate, and one update
of a tiny tabular policy and value model, to set beside GRPO's group baseline.

The episode is a response of T tokens. State t is the prompt plus the first t tokens;
action t is token t. The reward model scores the whole response once, at the last token;
every token also pays beta times its log-ratio to the reference.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


def _vector(name: str, values) -> torch.Tensor:
    out = torch.as_tensor(values, dtype=torch.float64)
    if out.dim() != 1 or out.numel() == 0 or not torch.isfinite(out).all():
        raise ValueError(f"{name} must be a non-empty 1-D sequence of finite numbers")
    return out


def kl_shaped_rewards(score: float, logp_policy, logp_reference, beta: float) -> torch.Tensor:
    """r_t = -beta·(log pi(y_t|s_t) - log pi_ref(y_t|s_t)), plus the score at the last token."""
    policy, reference = (
        _vector("logp_policy", logp_policy),
        _vector("logp_reference", logp_reference),
    )
    if policy.shape != reference.shape:
        raise ValueError(
            f"logp_policy and logp_reference differ in length: {policy.numel()} vs {reference.numel()}"
        )
    if not beta >= 0:
        raise ValueError(f"beta must be non-negative, got {beta!r}")
    rewards = -beta * (policy - reference)
    rewards[-1] += score
    return rewards


def gae(rewards, values, gamma: float = 1.0, lam: float = 0.95) -> dict:
    """Advantages A_t = sum_k (gamma·lam)^k delta_{t+k}, with
    delta_t = r_t + gamma·V(s_{t+1}) - V(s_t) and V = 0 after the last token.
    Returns deltas, advantages and the value targets A_t + V(s_t)."""
    r, v = _vector("rewards", rewards), _vector("values", values)
    if r.shape != v.shape:
        raise ValueError(f"rewards and values differ in length: {r.numel()} vs {v.numel()}")
    for name, x in (("gamma", gamma), ("lam", lam)):
        if not 0 <= x <= 1:
            raise ValueError(f"{name} must lie in [0, 1], got {x!r}")
    following = torch.cat([v[1:], v.new_zeros(1)])
    deltas = r + gamma * following - v
    advantages = torch.zeros_like(deltas)
    running = 0.0
    for t in reversed(range(len(deltas))):
        running = deltas[t] + gamma * lam * running
        advantages[t] = running
    return {"deltas": deltas, "advantages": advantages, "returns": advantages + v}


def clipped_objective(ratio, advantage, epsilon: float = 0.2) -> torch.Tensor:
    """min(rho·A, clip(rho, 1-eps, 1+eps)·A), elementwise (to be maximised)."""
    if not 0 < epsilon < 1:
        raise ValueError(f"epsilon must lie in (0, 1), got {epsilon!r}")
    ratio, advantage = torch.as_tensor(ratio), torch.as_tensor(advantage)
    return torch.minimum(ratio * advantage, ratio.clamp(1 - epsilon, 1 + epsilon) * advantage)


def clip_cases(epsilon: float = 0.2, ratios=(0.5, 0.9, 1.1, 1.5)) -> list[dict]:
    """For A = +1 and A = -1 and each ratio: the objective and whether it still pushes
    (a non-zero gradient with respect to the ratio)."""
    rows = []
    for advantage in (1.0, -1.0):
        for value in ratios:
            ratio = torch.tensor(float(value), dtype=torch.float64, requires_grad=True)
            objective = clipped_objective(
                ratio, torch.tensor(advantage, dtype=torch.float64), epsilon
            )
            objective.backward()
            rows.append(
                {
                    "advantage": advantage,
                    "ratio": value,
                    "objective": objective.item(),
                    "gradient": ratio.grad.item(),
                }
            )
    return rows


@dataclass(frozen=True)
class Episode:
    """One episode, one entry per state: the action taken, its advantage, its return and
    the value model's estimate."""

    actions: list
    advantages: list
    returns: list
    values: list


@dataclass(frozen=True)
class PpoStep:
    """The step's clip range, learning rate and the value loss's weight."""

    epsilon: float = 0.2
    learning_rate: float = 0.5
    value_coefficient: float = 0.5


def tabular_ppo_step(logits, episode: Episode, step: PpoStep = PpoStep()) -> dict:
    """One gradient step of PPO on a tabular policy (logits[T, vocab], one row per state)
    and a tabular value model (episode.values[T]). The old policy is the policy before the
    step, so every ratio starts at exactly 1. Returns the losses and the ratios after it."""
    actions, advantages, returns, values = (
        episode.actions,
        episode.advantages,
        episode.returns,
        episode.values,
    )
    epsilon, learning_rate = step.epsilon, step.learning_rate
    value_coefficient = step.value_coefficient
    logits = torch.as_tensor(logits, dtype=torch.float64).clone().requires_grad_(True)
    values = _vector("values", values).clone().requires_grad_(True)
    actions = torch.as_tensor(actions)
    advantages, returns = _vector("advantages", advantages), _vector("returns", returns)
    if logits.dim() != 2 or not (
        len(actions) == len(advantages) == len(returns) == len(values) == logits.shape[0]
    ):
        raise ValueError(
            "logits must be [T, vocab] with one action, advantage, return and value per row"
        )
    if not learning_rate > 0:
        raise ValueError(f"learning_rate must be positive, got {learning_rate!r}")

    def logp_of(table):
        return torch.log_softmax(table, -1).gather(1, actions[:, None]).squeeze(1)

    old = logp_of(logits).detach()
    ratio = torch.exp(logp_of(logits) - old)
    policy_loss = -clipped_objective(ratio, advantages, epsilon).mean()
    value_loss = 0.5 * ((values - returns) ** 2).mean()
    (policy_loss + value_coefficient * value_loss).backward()
    with torch.no_grad():
        new_logits = logits - learning_rate * logits.grad
        new_values = values - learning_rate * values.grad
        new_ratio = torch.exp(logp_of(new_logits) - old)
    return {
        "policy_loss": policy_loss.item(),
        "value_loss": value_loss.item(),
        "ratio_after": new_ratio,
        "values_after": new_values,
        "value_loss_after": (0.5 * ((new_values - returns) ** 2).mean()).item(),
    }


def models_in_memory(trained_bytes: float, frozen_bytes: float, parameters: int) -> dict:
    """Bytes for the models each method keeps, all of one size: PPO-RLHF trains a policy and
    a value model and keeps a frozen reference and reward model; GRPO with a programmatic
    verifier keeps the policy and the reference only."""
    if parameters <= 0 or trained_bytes <= 0 or frozen_bytes <= 0:
        raise ValueError("parameters and bytes per parameter must be positive")
    ppo = {
        "policy": trained_bytes,
        "value": trained_bytes,
        "reference": frozen_bytes,
        "reward": frozen_bytes,
    }
    grpo = {"policy": trained_bytes, "reference": frozen_bytes}
    return {
        name: {model: size * parameters for model, size in kept.items()}
        for name, kept in (("PPO-RLHF", ppo), ("GRPO", grpo))
    }
