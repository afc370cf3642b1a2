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

import dataclasses
from dataclasses import dataclass

import torch
from torch.nn.utils import clip_grad_norm_

from verifiable_grpo.part3.digits import policy as dp
from verifiable_grpo.part3.expert_iteration_lab.settings import ExpertIterationSettings
from verifiable_grpo.training.objectives import (
    OBJECTIVES,
    AdvantageRule,
    ClipInterval,
    KLTerm,
    Objective,
)


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


# The lab's GRPO as an entry of the objectives registry: the course's sample std + 1e-6, a k3
# term x beta, PPO's clip, token mean per reply. The "Try this" variants change its axes
# (advantages, aggregation, sampler), never the loop. The arithmetic below is the lab's own,
# in float32 on the digit policy, chosen by those axes.
LAB_ADVANTAGES = AdvantageRule("group_std", 1, 1e-6)


def lab_objective(beta: float, clip: float = 0.2, **axes) -> Objective:
    """The lab's GRPO at KL coefficient `beta`, with any axis replaced (advantages=...,
    aggregation=..., sampler=...)."""
    _check_grpo_settings(beta, 2)
    lab = {
        "name": "lab5_grpo",
        "description": "Lab 5's GRPO: sample std + 1e-6, k3 x beta, PPO's clip, token mean",
        "advantages": LAB_ADVANTAGES,
        "clip": ClipInterval(clip, clip),
        "kl": KLTerm("k3", beta),
    }
    return dataclasses.replace(OBJECTIVES["grpo"], **{**lab, **axes})


# What the digit loop can do, per axis; anything else is refused before the run.
LOOP_AXES = {
    "advantages.kind": ("group_std", "centred"),
    "ratio": ("token",),
    "aggregation.kind": ("response_mean", "constant_length"),
    "kl.kind": ("k3",),
    "sampler.kind": ("plain", "dynamic"),
    "surrogate.kind": ("clipped_ratio",),
    "correction.kind": ("none",),
}


def check_objective(objective: Objective) -> None:
    """ValueError naming the first axis the digit loop has no arithmetic for."""
    for path, allowed in LOOP_AXES.items():
        value = objective
        for attribute in path.split("."):
            value = getattr(value, attribute)
        if value not in allowed:
            raise ValueError(
                f"objective {objective.name}: {path} {value!r} is not one of {allowed}"
            )
    if objective.clip.low != objective.clip.high:
        raise ValueError(f"objective {objective.name}: the digit loop clips symmetrically")


def group_advantages(scores: torch.Tensor, rule: AdvantageRule):
    """(advantages, each group's spread) of scores [P, G] under the rule: the course's
    (r - mean) / (std + epsilon), or r - mean with the sample std reported."""
    if rule.kind == "centred":
        spread = torch.std(scores, dim=1, correction=1)
        return scores - scores.mean(1, keepdim=True), spread
    return group_advantages_sample_std(scores, rule.epsilon, rule.correction)


def surrogate(logp, sampled_logp, ref_logp, mask, advantages, objective: Objective):
    """The clipped, KL-penalised objective per token; each reply's token sum divided by its
    own length (response_mean) or by a constant (constant_length); mean over replies."""
    clip, beta = objective.clip.low, objective.kl.coefficient
    ratio = torch.exp(logp - sampled_logp)
    plain_term = ratio * advantages
    capped_term = ratio.clamp(1 - clip, 1 + clip) * advantages  # PPO's trust region
    penalty = beta * k3(ref_logp - logp)
    per_token = torch.minimum(plain_term, capped_term) - penalty
    aggregation = objective.aggregation
    length = mask.sum(1) if aggregation.kind == "response_mean" else aggregation.length
    per_sequence = (per_token * mask).sum(1) / length
    return per_sequence.mean()


def _check_grpo_settings(beta, group_size) -> None:
    if isinstance(beta, bool) or not isinstance(beta, (int, float)) or beta < 0:
        raise ValueError(f"beta must be a number >= 0 (the KL coefficient), got {beta!r}")
    if type(group_size) is not int or group_size < 2:
        raise ValueError(
            f"group_size must be an integer >= 2 (a group needs a spread), got {group_size!r}"
        )


@dataclass(frozen=True)
class GroupRun:
    """A run's settings beside its objective (which holds the arithmetic's choices)."""

    substring: bool = False  # the flawed checker
    iterations: int = 150
    prompts_per_iteration: int = 32
    group_size: int = 8
    inner_steps: int = 2
    lr: float = 1e-3
    seed: int = 41
    log_every: int = 25


def _draw_groups(policy, count, group_size, substring):
    drawn = dp.ALL_PROMPTS[torch.randint(len(dp.ALL_PROMPTS), (count,))]
    prompts = drawn.repeat_interleave(group_size, 0)
    replies = dp.sample(policy, prompts)
    scores = verifier_rewards(prompts, replies, substring).reshape(count, group_size)
    return prompts, replies, scores


def refilled_batch(policy, count, group_size, substring, max_draws):
    """Dynamic sampling: mixed groups only, drawing `count` prompts at a time until `count`
    are kept or `max_draws` draws are spent. Returns (prompts, replies, scores, draws,
    first-draw group std); a batch may come back short, or empty."""
    keep_prompts, keep_replies, keep_scores = [], [], []
    first_std, kept, draws = None, 0, 0
    while kept < count and draws < max_draws:
        prompts, replies, scores = _draw_groups(policy, count, group_size, substring)
        draws += 1
        std = torch.std(scores, dim=1, correction=1)
        first_std = std if first_std is None else first_std
        mixed = (std > 0).repeat_interleave(group_size)
        keep_prompts.append(prompts[mixed])
        keep_replies.append(replies[mixed])
        keep_scores.append(scores[std > 0])
        kept += int((std > 0).sum())
    rows = min(kept, count) * group_size
    return (
        torch.cat(keep_prompts)[:rows],
        torch.cat(keep_replies)[:rows],
        torch.cat(keep_scores)[: min(kept, count)],
        draws,
        first_std,
    )


def _collect(policy, objective: Objective, run: GroupRun):
    """(batch, draws, group std of the first draw) under the objective's sampler."""
    count, size = run.prompts_per_iteration, run.group_size
    if objective.sampler.kind == "dynamic":
        limit = objective.sampler.max_generation_batches
        *batch, draws, group_std = refilled_batch(policy, count, size, run.substring, limit)
        return batch, draws, group_std
    batch = _draw_groups(policy, count, size, run.substring)
    return batch, 1, torch.std(batch[2], dim=1, correction=1)


def _update(policy, reference, adam, batch, objective: Objective, inner_steps: int) -> None:
    prompts, replies, scores = batch
    advantages, _ = group_advantages(scores, objective.advantages)
    per_reply = advantages.reshape(-1, 1)  # one advantage for all its tokens
    with torch.no_grad():  # fixed for both inner steps: the first ratio is exactly 1
        sampled_logp, mask = dp.token_logprobs(policy, prompts, replies)
        ref_logp = dp.token_logprobs(reference, prompts, replies)[0]
    for _ in range(inner_steps):
        policy.train()
        adam.zero_grad(set_to_none=True)
        logp = dp.token_logprobs(policy, prompts, replies)[0]
        loss = -surrogate(logp, sampled_logp, ref_logp, mask, per_reply, objective)
        loss.backward()
        clip_grad_norm_(policy.parameters(), max_norm=1.0)
        adam.step()


def train(reference, objective: Objective, run: GroupRun, record) -> tuple:
    """The one GRPO loop of the digit lab and its variants: (policy, log). `record(state)`
    turns the state every `log_every` iterations (and at 0, the start) into a log row."""
    check_objective(objective)
    _check_grpo_settings(objective.kl.coefficient, run.group_size)
    torch.manual_seed(run.seed)
    policy = dp.trainable_copy(reference)
    adam = torch.optim.Adam(policy.parameters(), run.lr)
    log = [record({"iteration": 0, "metrics": dp.task_metrics(policy, reference)})]
    generations, skipped = 0, 0
    for iteration in range(1, run.iterations + 1):
        batch, draws, group_std = _collect(policy, objective, run)
        generations += draws * run.prompts_per_iteration * run.group_size
        if len(batch[2]):
            _update(policy, reference, adam, batch, objective, run.inner_steps)
        else:
            skipped += 1
        if iteration % run.log_every == 0:
            state = {
                "iteration": iteration,
                "generations": generations,
                "draws": draws,
                "zero_variance": float((group_std == 0).float().mean()),
                "skipped_updates": skipped,
                "scores": batch[2],
            }
            state["metrics"] = dp.task_metrics(policy, reference)
            state["verifier_reward"] = _verifier_pass_rate(policy, run.substring)
            log.append(record(state))
    return policy, log


@dataclass(frozen=True)
class GrpoSettings:
    """One Lab 5 GRPO run as the lab's table names it: the KL coefficient, the verifier
    (exact, or the flawed substring one), the budget, the clip, Adam's rate, the seed, how
    often to log and the std's correction (1: sample)."""

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
    beta, substring, correction = settings.beta, settings.substring, settings.correction
    _check_grpo_settings(beta, settings.group_size)
    rule = dataclasses.replace(LAB_ADVANTAGES, correction=correction)
    run = GroupRun(**{f.name: getattr(settings, f.name) for f in dataclasses.fields(GroupRun)})

    def record(state: dict) -> dict:
        if state["iteration"] == 0:
            start = state["metrics"]
            return {
                "iteration": 0,
                "sampled_reward": start["accuracy"],
                "zero_variance": None,
                **start,
            }
        return {
            "iteration": state["iteration"],
            "sampled_reward": float(state["scores"].mean()),
            "zero_variance": state["zero_variance"],
            **state["metrics"],
            "verifier_reward": state["verifier_reward"],
        }

    policy, log = train(reference, lab_objective(beta, settings.clip, advantages=rule), run, record)
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


def run_lab(settings: ExpertIterationSettings) -> dict:
    """Lab 5 whole: expert iteration, GRPO at each beta and GRPO on the substring checker.
    `variants` adds two runs the module does not make: Part I's population std (beta
    0.04) and no KL term at all (beta 0, the first "Try this")."""
    from verifiable_grpo.part3.expert_iteration_lab.expert_iteration import (
        ExpertSettings,
        expert_iteration,
    )

    group_size = settings.group_size
    reference = dp.train_reference()
    shared = {"iterations": settings.iterations, "group_size": group_size}
    exact_runs = [train_grpo(reference, GrpoSettings(b, **shared)) for b in settings.betas]
    flawed = GrpoSettings(settings.substring_beta, substring=True, **shared)
    flawed_run = train_grpo(reference, flawed)
    extra = (
        [
            train_grpo(reference, GrpoSettings(0.04, correction=0, **shared)),
            train_grpo(reference, GrpoSettings(0.0, **shared)),
        ]
        if settings.variants
        else []
    )
    summary = {
        "policy_parameters": dp.parameter_count(reference),
        "variants": extra,
        "reference": dp.task_metrics(reference, reference),
        "reference_greedy_accuracy": dp.greedy_accuracy(reference),
    }
    summary["expert_iteration"] = expert_iteration(
        reference, ExpertSettings(rounds=settings.expert_rounds)
    )
    summary.update(grpo=exact_runs + [flawed_run], group_size=group_size, inner_steps=2)
    return summary
