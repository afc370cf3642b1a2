"""Small, fully controlled demonstrations used by the chapters (no language model).

`two_updates_on_one_rollout_set` shows why clipping cannot act on the first update of a
rollout set: the current policy *is* the behaviour policy then, so every ratio is exactly
1. Only from the second update on, after the parameters moved, can a ratio leave the
interval.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from verifiable_grpo.core.config_schema import Profile
from verifiable_grpo.training.losses import (
    ClipRange,
    TokenLogProbs,
    clipped_group_surrogate,
    group_advantages,
)


@dataclass(frozen=True)
class ToyGroup:
    """The shape of the demo's one rollout set: a vocabulary of `vocab` tokens, one group
    of `group_size` responses, each `length` tokens long."""

    vocab: int = 6
    group_size: int = 4
    length: int = 3


def two_updates_on_one_rollout_set(
    toy: ToyGroup = ToyGroup(),
    learning_rate: float = 0.5,
    updates: int = 2,
    clip_epsilon: float = 0.2,
    seed: int = 0,
    refresh_old: bool = False,
) -> list[dict]:
    """A categorical 'policy' (one logit vector) samples one group of `length`-token responses;
    reward 1 when the response starts with a token of the lower half of the vocabulary.
    Returns the audit of each update on that same rollout set.

    refresh_old=True reproduces a classic bug: replacing the captured old log-probs with
    detached log-probs of the current policy before each update. Every ratio is then 1
    and the clip can never act."""
    if updates < 1:
        raise ValueError("updates must be >= 1")
    vocab, group_size, length = toy.vocab, toy.group_size, toy.length
    generator = torch.Generator().manual_seed(seed)
    logits = torch.zeros(vocab, dtype=torch.float64, requires_grad=True)
    with torch.no_grad():
        probs = torch.softmax(logits, dim=0)
        tokens = torch.multinomial(
            probs.expand(group_size, vocab), length, replacement=True, generator=generator
        )
        old = torch.log_softmax(logits, dim=0)[tokens]  # captured at sampling time
    rewards = (tokens[:, 0] < vocab // 2).to(torch.float64).unsqueeze(0)
    advantages, _, _ = group_advantages(rewards)
    mask = torch.ones_like(tokens, dtype=torch.bool)
    optimizer = torch.optim.SGD([logits], lr=learning_rate)
    report = []
    for update in range(updates):
        current = torch.log_softmax(logits, dim=0)[tokens]
        if refresh_old:
            old = current.detach()
        loss, audit = clipped_group_surrogate(
            TokenLogProbs(current, old, mask), advantages[0], ClipRange(clip_epsilon)
        )
        objective = loss.mean()
        optimizer.zero_grad()
        objective.backward()
        report.append(
            {
                "update": update + 1,
                "rewards": rewards[0].tolist(),
                "advantages": advantages[0].tolist(),
                "min_ratio": float(audit["ratios"].min()),
                "max_ratio": float(audit["ratios"].max()),
                "outside_fraction": audit["outside_fraction"],
                "active_clip_fraction": audit["active_clip_fraction"],
                "loss": float(objective.detach()),
                "gradient_norm": float(logits.grad.norm()),
            }
        )
        optimizer.step()
    return report


def clip_gradient_table(
    ratios=(0.5, 0.9, 1.0, 1.1, 1.5), advantages=(1.0, -1.0), clip_epsilon: float = 0.2
) -> list[dict]:
    """For each (rho, A): the objective min(rho A, clip(rho) A), which branch is selected and
    the gradient of the objective with respect to the log-probability (autograd, float64)."""
    rows = []
    for advantage in advantages:
        for ratio in ratios:
            current = torch.tensor(
                [[float(torch.log(torch.tensor(ratio, dtype=torch.float64)))]],
                dtype=torch.float64,
                requires_grad=True,
            )
            old = torch.zeros(1, 1, dtype=torch.float64)
            loss, audit = clipped_group_surrogate(
                TokenLogProbs(current, old, torch.ones(1, 1, dtype=torch.bool)),
                torch.tensor([advantage], dtype=torch.float64),
                ClipRange(clip_epsilon),
            )
            loss.sum().backward()
            unclipped, clipped = (
                ratio * advantage,
                min(max(ratio, 1 - clip_epsilon), 1 + clip_epsilon) * advantage,
            )
            rows.append(
                {
                    "advantage": advantage,
                    "ratio": ratio,
                    "objective": -float(loss.detach()),
                    "branch": "clipped (constant)" if clipped < unclipped else "unclipped",
                    "d_objective_d_logp": -float(current.grad) + 0.0,  # no "-0.0" in tables
                    "active_clip": audit["active_clip_fraction"] > 0,
                }
            )
    return rows


def kl_normalising_each_block(current_logits, reference_logits, block_size: int):
    """THE BUG the exact KL avoids: softmax within each vocabulary block separately.

    Returns sum over blocks of KL(block-normalised p || block-normalised q), which is not
    KL(p || q) unless there is a single block. For the notebooks and tests only."""
    total = torch.zeros(current_logits.shape[:-1], dtype=current_logits.dtype)
    for start in range(0, current_logits.shape[-1], block_size):
        log_p = torch.log_softmax(current_logits[..., start : start + block_size], dim=-1)
        log_q = torch.log_softmax(reference_logits[..., start : start + block_size], dim=-1)
        total = total + (log_p.exp() * (log_p - log_q)).sum(dim=-1)
    return total


def nudged_copy(model, input_ids, response_mask, learning_rate: float = 1e-3, steps: int = 1):
    """A copy of `model` after `steps` plain SGD steps of cross-entropy on the response tokens:
    two genuinely different, nearby policies whose full distributions the KL probe compares."""
    import copy

    from verifiable_grpo.core.scoring import target_mask, token_logprobs

    moved = copy.deepcopy(model).eval()
    optimizer = torch.optim.SGD(moved.parameters(), lr=learning_rate)
    attention = torch.ones_like(input_ids)
    mask = target_mask(response_mask)
    for _ in range(steps):
        logprobs = token_logprobs(moved, input_ids, attention)
        loss = -(logprobs * mask).sum() / mask.sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return moved


def sampled_estimates_at_prefixes(current_logits, reference_logits, samples: int, seed: int = 0):
    """Draw `samples` tokens from the current distribution at each prefix and average the
    one-sample estimators k1, k2, k3 of KL(current || reference). Returns [T] tensors."""
    from verifiable_grpo.training.losses import sampled_kl_estimators

    generator = torch.Generator().manual_seed(seed)
    log_p = torch.log_softmax(current_logits.double(), dim=-1)
    log_q = torch.log_softmax(reference_logits.double(), dim=-1)
    draws = torch.multinomial(log_p.exp(), samples, replacement=True, generator=generator)
    estimates = sampled_kl_estimators(log_p.gather(-1, draws), log_q.gather(-1, draws))
    return {name: value.mean(dim=-1) for name, value in estimates.items()} | {
        f"{name}_std": value.std(dim=-1) for name, value in estimates.items()
    }


def response_logprob_sums(model, group: dict) -> list[float]:
    """Sum of the log-probs of each response of a group under `model` (teacher forcing)."""
    from verifiable_grpo.core.scoring import token_logprobs
    from verifiable_grpo.training.rollout import model_device, response_slice

    sums = []
    with torch.no_grad():
        for row in group["responses"]:
            ids = torch.tensor(
                [row["prompt_ids"] + row["response_ids"]], device=model_device(model)
            )
            scores = token_logprobs(model, ids, torch.ones_like(ids))[0]
            sums.append(
                float(
                    scores[response_slice(len(row["prompt_ids"]), len(row["response_ids"]))].sum()
                )
            )
    return sums


def update_on_one_group(policy, group: dict, config: Profile, learning_rate: float) -> dict:
    """One GRPO update (package code: clipped surrogate + exact KL) of a COPY of `policy` on
    one group, against a frozen copy as reference. Returns each response's log-probability
    before and after, and the update's telemetry. `policy` itself is not modified."""
    import copy

    from verifiable_grpo.training.grpo import Trainee, grpo_update

    current = copy.deepcopy(policy).eval()
    reference = copy.deepcopy(policy).eval().requires_grad_(False)
    optimizer = torch.optim.AdamW(
        current.parameters(), lr=learning_rate, weight_decay=config.grpo.weight_decay
    )
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0)
    before = response_logprob_sums(current, group)
    telemetry = grpo_update(Trainee(current, reference, optimizer, scheduler), [group], config)
    after = response_logprob_sums(current, group)
    return {"before": before, "after": after, "telemetry": telemetry}


def dropout_changes_scores(model, input_ids, dropout: float = 0.1, seed: int = 0) -> float:
    """Score the same sequence twice with dropout active (train mode) on a copy whose attention
    dropout is `dropout`; returns the largest difference between the two scorings. In eval
    mode the difference is exactly 0."""
    import copy

    from verifiable_grpo.core.scoring import token_logprobs

    noisy = copy.deepcopy(model)
    noisy.config.attention_dropout = dropout
    for module in noisy.modules():
        if hasattr(module, "attention_dropout"):
            module.attention_dropout = dropout
    noisy.train()
    torch.manual_seed(seed)
    attention = torch.ones_like(input_ids)
    with torch.no_grad():
        first = token_logprobs(noisy, input_ids, attention)
        second = token_logprobs(noisy, input_ids, attention)
    return float((first - second).abs().max())
