"""Lab 5, second half: GRPO on the digit policy, following the post-training module's choices.

Those choices are not Part I's, deliberately; the chapter compares them:
- a group's advantages divide by its SAMPLE standard deviation (G - 1 in the denominator)
  plus 1e-6, and a group with identical rewards gets advantage 0 outright;
- the KL term is k3 = u - log u - 1 per sampled token, u = pi_ref / pi_theta (Part I
  instead sums the exact KL over the whole vocabulary at every prefix);
- the log-probabilities of the sampling policy are taken once, just after sampling, and
  serve both of the two inner optimisation steps;
- each sequence's objective is its mean over tokens; the batch objective is the mean of
  those.

With `substring=True` the verifier is the flawed one: a reply passes when the answer
appears anywhere in it ("1514" passes for 15), and the policy learns to exploit that.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.nn.utils import clip_grad_norm_

from verifiable_grpo.part3.digits import policy as dp


def group_advantages_sample_std(rewards: torch.Tensor, epsilon: float = 1e-6, correction: int = 1):
    """Advantages (rewards - group mean) / (group std + epsilon), one group per row, and
    each group's std. A group whose std is 0 gets exactly 0.

    correction=1: the sample std (the module's); correction=0: the population std (Part I)."""
    centre = torch.mean(rewards, 1, keepdim=True)
    spread = torch.std(rewards, dim=1, keepdim=True, correction=correction)
    scaled = (rewards - centre) / (spread + epsilon)
    return torch.where(spread > 0, scaled, torch.zeros_like(rewards)), spread[:, 0]


def verifier_rewards(prompts, targets, substring: bool = False) -> torch.Tensor:
    """1.0 for a reply equal to the answer (flawed checker: one that merely contains it)."""

    def passes(reply: str, answer: str) -> bool:
        return answer in reply if substring else reply == answer

    return torch.tensor(
        [
            float(passes(reply, answer))
            for reply, answer in zip(dp.decode(targets), dp.answers(prompts))
        ]
    )


def k3(log_u: torch.Tensor) -> torch.Tensor:
    """u - log u - 1 from log u (here log pi_ref - log pi): never negative, 0 iff u = 1."""
    return torch.exp(log_u) - log_u - 1


@dataclass(frozen=True)
class TokenLogprobs:
    """Per-token log-probabilities of the replies [rows, T] under the policy now (`current`),
    when they were sampled and under the reference, with the replies' token mask."""

    current: torch.Tensor
    sampled: torch.Tensor
    reference: torch.Tensor
    mask: torch.Tensor


def _surrogate(logprobs: TokenLogprobs, advantages, beta, clip):
    """The clipped, KL-penalised objective, averaged over tokens then over sequences."""
    logp, sampled_logp = logprobs.current, logprobs.sampled
    ref_logp, mask = logprobs.reference, logprobs.mask
    ratio = torch.exp(logp - sampled_logp)
    plain_term = ratio * advantages
    capped_term = ratio.clamp(1 - clip, 1 + clip) * advantages  # PPO's trust region
    penalty = beta * k3(ref_logp - logp)
    per_token = torch.minimum(plain_term, capped_term) - penalty
    tokens_per_sequence = mask.sum(1)
    per_sequence = (per_token * mask).sum(1) / tokens_per_sequence
    return per_sequence.mean()


def _check_grpo_settings(beta, group_size) -> None:
    if isinstance(beta, bool) or not isinstance(beta, (int, float)) or beta < 0:
        raise ValueError(f"beta must be a number >= 0 (the KL coefficient), got {beta!r}")
    if type(group_size) is not int or group_size < 2:
        raise ValueError(
            f"group_size must be an integer >= 2 (a group needs a spread), got {group_size!r}"
        )


@dataclass(frozen=True)
class GrpoSettings:
    """One Lab 5 GRPO run: the KL coefficient, the verifier (exact, or the flawed substring
    one), the budget (iterations, prompts per iteration, group size, inner steps), the
    clip, Adam's rate, the seed, how often to log and the std's correction (1: sample)."""

    beta: float
    substring: bool = False
    iterations: int = 150
    prompts_per_iteration: int = 32
    group_size: int = 8
    inner_steps: int = 2
    clip: float = 0.2
    lr: float = 1e-3
    seed: int = 41
    log_every: int = 25
    correction: int = 1


def train_grpo(reference, settings: GrpoSettings) -> dict:
    """GRPO from the reference; logs every `log_every` iterations (record 0: the start)."""
    s = settings
    beta, substring, group_size, clip = s.beta, s.substring, s.group_size, s.clip
    iterations, prompts_per_iteration = s.iterations, s.prompts_per_iteration
    inner_steps, lr, seed = s.inner_steps, s.lr, s.seed
    log_every, correction = s.log_every, s.correction
    _check_grpo_settings(beta, group_size)
    torch.manual_seed(seed)
    policy = dp.trainable_copy(reference)
    adam = torch.optim.Adam(policy.parameters(), lr)
    start = dp.task_metrics(policy, reference)
    log = [{"iteration": 0, "sampled_reward": start["accuracy"], "zero_variance": None, **start}]
    count = len(dp.ALL_PROMPTS)
    for iteration in range(1, iterations + 1):
        drawn = dp.ALL_PROMPTS[torch.randint(count, (prompts_per_iteration,))]
        prompts = drawn.repeat_interleave(group_size, 0)
        replies = dp.sample(policy, prompts)
        scores = verifier_rewards(prompts, replies, substring).reshape(
            prompts_per_iteration, group_size
        )
        advantages, group_std = group_advantages_sample_std(scores, correction=correction)
        per_reply = advantages.reshape(-1, 1)  # one advantage for all its tokens
        with torch.no_grad():  # fixed for both inner steps: the first ratio is exactly 1
            sampled_logp, mask = dp.token_logprobs(policy, prompts, replies)
            ref_logp = dp.token_logprobs(reference, prompts, replies)[0]
        for _ in range(inner_steps):
            policy.train()
            adam.zero_grad(set_to_none=True)
            logp = dp.token_logprobs(policy, prompts, replies)[0]
            logprobs = TokenLogprobs(logp, sampled_logp, ref_logp, mask)
            loss = -_surrogate(logprobs, per_reply, beta, clip)
            loss.backward()
            clip_grad_norm_(policy.parameters(), max_norm=1.0)
            adam.step()
        if iteration % log_every == 0:
            entry = {
                "iteration": iteration,
                "sampled_reward": float(scores.mean()),
                "zero_variance": float((group_std == 0).float().mean()),
            }
            entry.update(dp.task_metrics(policy, reference))
            entry["verifier_reward"] = _verifier_pass_rate(policy, substring)
            log.append(entry)
    result = {"beta": beta, "substring": substring, "correction": correction, "records": log}
    if substring:
        result["accepted_but_wrong"] = accepted_but_wrong(policy)
    return result


def _evaluation_replies(policy, per_prompt: int, seed: int):
    """Prompts and the policy's replies from a forked, seeded generator (no side effect)."""
    prompts = dp.ALL_PROMPTS.repeat_interleave(per_prompt, 0)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        replies = dp.sample(policy, prompts)
    return prompts, replies


@torch.inference_mode()
def _verifier_pass_rate(policy, substring: bool, per_prompt: int = 16, seed: int = 88) -> float:
    prompts, replies = _evaluation_replies(policy, per_prompt, seed)
    return float(verifier_rewards(prompts, replies, substring).mean())


@torch.inference_mode()
def accepted_but_wrong(policy, per_prompt: int = 16, seed: int = 99, limit: int = 5) -> list:
    """Up to `limit` (prompt, reply, answer) that the substring checker passes wrongly."""
    prompts, replies = _evaluation_replies(policy, per_prompt, seed)
    cheats = []
    for prompt, reply, answer in zip(prompts.tolist(), dp.decode(replies), dp.answers(prompts)):
        if reply != answer and answer in reply:
            cheats.append((prompt, reply, answer))
    return cheats[:limit]


def mixed_group_probability(p: float, group_size: int) -> float:
    """Chance that G independent tries, each a success with probability p, include at least
    one success and one failure: 1 - p^G - (1 - p)^G. Other groups give no task signal."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p must be a probability in [0, 1], got {p!r}")
    if type(group_size) is not int or group_size < 1:
        raise ValueError(f"group_size must be a positive integer, got {group_size!r}")
    return 1.0 - p**group_size - (1.0 - p) ** group_size


def run_lab(
    betas=(0.04, 0.5),
    substring_beta: float = 0.04,
    iterations: int = 150,
    group_size: int = 8,
    expert_rounds: int = 3,
    variants: bool = True,
) -> dict:
    """Lab 5 whole: expert iteration, GRPO at each beta and GRPO on the substring checker.
    `variants` adds two runs the module does not make: Part I's population std (beta
    0.04) and no KL term at all (beta 0, the first "Try this")."""
    from verifiable_grpo.part3.expert_iteration_lab.expert_iteration import (
        ExpertSettings,
        expert_iteration,
    )

    reference = dp.train_reference()
    settings = {"iterations": iterations, "group_size": group_size}
    exact_runs = [train_grpo(reference, GrpoSettings(b, **settings)) for b in betas]
    flawed_run = train_grpo(reference, GrpoSettings(substring_beta, substring=True, **settings))
    extra = (
        [
            train_grpo(reference, GrpoSettings(0.04, correction=0, **settings)),
            train_grpo(reference, GrpoSettings(0.0, **settings)),
        ]
        if variants
        else []
    )
    summary = {
        "policy_parameters": dp.parameter_count(reference),
        "variants": extra,
        "reference": dp.task_metrics(reference, reference),
        "reference_greedy_accuracy": dp.greedy_accuracy(reference),
    }
    summary["expert_iteration"] = expert_iteration(reference, ExpertSettings(rounds=expert_rounds))
    summary.update(grpo=exact_runs + [flawed_run], group_size=group_size, inner_steps=2)
    return summary
