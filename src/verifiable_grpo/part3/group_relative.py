"""Lab 5, second half: GRPO on the digit policy, with the module's conventions.

These conventions differ from Part I's on purpose, and the chapter sets them side by side:
- advantages use the SAMPLE standard deviation of each group (denominator G - 1) plus
  1e-6, and an explicit zero for a group whose rewards are all equal;
- the KL penalty is the per-token k3 estimator, u - log u - 1 with u = pi_ref / pi_theta,
  on the sampled tokens (Part I computes the exact KL over the vocabulary on each prefix);
- old log-probabilities are recomputed right after sampling, before two inner steps;
- the loss is a token mean per sequence, then a mean over sequences.

`substring=True` swaps the exact verifier for a flawed one that accepts any reply
containing the answer ("1514" for 15): the policy learns what the checker accepts.
"""
from __future__ import annotations

import torch

from verifiable_grpo.part3 import digit_policy as dp


def group_advantages_sample_std(rewards: torch.Tensor, epsilon: float = 1e-6, correction: int = 1):
    """(r - mean) / (std + epsilon) per group (row); exactly 0 where std is 0.

    correction=1 is the module's sample std; correction=0 the population std of Part I."""
    mean = rewards.mean(1, keepdim=True)
    sd = rewards.std(1, keepdim=True, correction=correction)
    advantage = torch.where(sd > 0, (rewards - mean) / (sd + epsilon), torch.zeros_like(rewards))
    return advantage, sd.squeeze(1)


def verifier_rewards(prompts, targets, substring: bool = False) -> torch.Tensor:
    """1.0 when the reply equals the answer (or, flawed, merely contains it), else 0.0."""
    values = [float(answer in reply if substring else reply == answer)
              for reply, answer in zip(dp.decode(targets), dp.answers(prompts))]
    return torch.tensor(values)


def k3(log_ratio_ref_over_policy: torch.Tensor) -> torch.Tensor:
    """u - log u - 1 with log u = log pi_ref - log pi: >= 0, and 0 only where u = 1."""
    return torch.exp(log_ratio_ref_over_policy) - log_ratio_ref_over_policy - 1


def train_grpo(reference, beta: float, substring: bool = False, iterations: int = 150,
               prompts_per_iteration: int = 32, group_size: int = 8, inner_steps: int = 2,
               clip: float = 0.2, lr: float = 1e-3, seed: int = 41, log_every: int = 25,
               correction: int = 1) -> dict:
    if isinstance(beta, bool) or not isinstance(beta, (int, float)) or beta < 0:
        raise ValueError(f"beta must be a number >= 0 (the KL coefficient), got {beta!r}")
    if type(group_size) is not int or group_size < 2:
        raise ValueError(f"group_size must be an integer >= 2 (a group needs a spread), "
                         f"got {group_size!r}")
    torch.manual_seed(seed)
    policy = dp.trainable_copy(reference)
    optimizer = torch.optim.Adam(policy.parameters(), lr=lr)
    initial = dp.task_metrics(policy, reference)
    records = [dict(iteration=0, sampled_reward=initial["accuracy"], zero_variance=None, **initial)]
    for iteration in range(1, iterations + 1):
        chosen = dp.ALL_PROMPTS[torch.randint(len(dp.ALL_PROMPTS), (prompts_per_iteration,))]
        prompts = chosen.repeat_interleave(group_size, 0)
        targets = dp.sample(policy, prompts)
        rewards = verifier_rewards(prompts, targets, substring).reshape(prompts_per_iteration,
                                                                         group_size)
        advantages, sd = group_advantages_sample_std(rewards, correction=correction)
        advantages = advantages.reshape(-1, 1)
        with torch.no_grad():   # frozen for both inner steps: the ratio starts at exactly 1
            old_logp, mask = dp.token_logprobs(policy, prompts, targets)
            ref_logp, _ = dp.token_logprobs(reference, prompts, targets)
        for _ in range(inner_steps):
            policy.train()
            optimizer.zero_grad(set_to_none=True)
            logp, _ = dp.token_logprobs(policy, prompts, targets)
            ratio = torch.exp(logp - old_logp)
            surrogate = torch.minimum(ratio * advantages,
                                      ratio.clamp(1 - clip, 1 + clip) * advantages)
            token_objective = surrogate - beta * k3(ref_logp - logp)
            objective = ((token_objective * mask).sum(1) / mask.sum(1)).mean()
            (-objective).backward()
            torch.nn.utils.clip_grad_norm_(policy.parameters(), 1.0)
            optimizer.step()
        if iteration % log_every == 0:
            item = dict(iteration=iteration, sampled_reward=float(rewards.mean()),
                        zero_variance=float((sd == 0).float().mean()),
                        **dp.task_metrics(policy, reference))
            item["verifier_reward"] = _verifier_pass_rate(policy, substring)
            records.append(item)
    result = dict(beta=beta, substring=substring, correction=correction, records=records)
    if substring:
        result["accepted_but_wrong"] = accepted_but_wrong(policy)
    return result


@torch.inference_mode()
def _verifier_pass_rate(policy, substring: bool, per_prompt: int = 16, seed: int = 88) -> float:
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        prompts = dp.ALL_PROMPTS.repeat_interleave(per_prompt, 0)
        return float(verifier_rewards(prompts, dp.sample(policy, prompts), substring).mean())


@torch.inference_mode()
def accepted_but_wrong(policy, per_prompt: int = 16, seed: int = 99, limit: int = 5) -> list:
    """Replies the substring checker accepts although they are not the answer."""
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        prompts = dp.ALL_PROMPTS.repeat_interleave(per_prompt, 0)
        replies = dp.decode(dp.sample(policy, prompts))
    found = [(p.tolist(), reply, answer) for p, reply, answer
             in zip(prompts, replies, dp.answers(prompts)) if answer in reply and reply != answer]
    return found[:limit]


def mixed_group_probability(p: float, group_size: int) -> float:
    """P(a group of G independent draws with success probability p holds both a success
    and a failure) = 1 - p^G - (1-p)^G: only such groups carry a task gradient."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p must be a probability in [0, 1], got {p!r}")
    if type(group_size) is not int or group_size < 1:
        raise ValueError(f"group_size must be a positive integer, got {group_size!r}")
    return 1.0 - p ** group_size - (1.0 - p) ** group_size


def run_lab(betas=(0.04, 0.5), substring_beta: float = 0.04, iterations: int = 150,
            group_size: int = 8, expert_rounds: int = 3, variants: bool = True) -> dict:
    """Lab 5 whole: expert iteration, GRPO at each beta, GRPO on the substring verifier;
    with `variants`, two runs beside the module's: Part I's population std (beta 0.04) and
    no KL term at all (beta 0, the first "Try this")."""
    from verifiable_grpo.part3.expert_iteration import expert_iteration

    reference = dp.train_reference()
    runs = [train_grpo(reference, b, iterations=iterations, group_size=group_size) for b in betas]
    runs.append(train_grpo(reference, substring_beta, substring=True, iterations=iterations,
                           group_size=group_size))
    extra = []
    if variants:
        extra = [train_grpo(reference, 0.04, iterations=iterations, group_size=group_size, correction=0),
                 train_grpo(reference, 0.0, iterations=iterations, group_size=group_size)]
    return dict(policy_parameters=dp.parameter_count(reference), variants=extra,
                reference=dp.task_metrics(reference, reference),
                reference_greedy_accuracy=dp.greedy_accuracy(reference),
                expert_iteration=expert_iteration(reference, rounds=expert_rounds),
                grpo=runs, group_size=group_size, inner_steps=2)
