"""Lab 5's "Try this" variants of GRPO on the digit policy, as one configurable loop.

group_relative.train_grpo runs the course's GRPO. This loop runs the same algorithm with
the switches the course's variants ask for, and with every switch at its default it draws
and computes exactly what train_grpo does (a test holds the two to the same bits):
- `advantage="centred"` keeps r - mean and drops the division by the group's std, and
  `denominator="maxlen"` divides each reply's token sum by MAXLEN instead of by its own
  length: together, a Dr. GRPO-like objective (no std scaling, no length normalisation);
- `refill=True` drops the groups whose rewards are all equal (they carry no task signal)
  and samples fresh prompts until the batch holds `prompts_per_iteration` mixed groups or
  `max_draws` draws are spent; every generated reply is counted, kept or not;
- `group_size` and `prompts_per_iteration` trade groups against their size at a fixed
  number of generations per iteration;
- `substring=True` with several seeds repeats the flawed-verifier run against the exact one.
"""

from __future__ import annotations

import torch
from torch.nn.utils import clip_grad_norm_

from verifiable_grpo.part3.digits import policy as dp
from verifiable_grpo.part3.expert_iteration_lab import group_relative as gr

ADVANTAGES = ("sample_std", "centred")
DENOMINATORS = ("tokens", "maxlen")


def _check(advantage, denominator, group_size, prompts_per_iteration, max_draws) -> None:
    if advantage not in ADVANTAGES:
        raise ValueError(f"advantage must be one of {ADVANTAGES}, got {advantage!r}")
    if denominator not in DENOMINATORS:
        raise ValueError(f"denominator must be one of {DENOMINATORS}, got {denominator!r}")
    for name, value, least in (
        ("group_size", group_size, 2),
        ("max_draws", max_draws, 1),
        ("prompts_per_iteration", prompts_per_iteration, 1),
    ):
        if type(value) is not int or value < least:
            raise ValueError(f"{name} must be an integer >= {least}, got {value!r}")


def advantages_for(scores: torch.Tensor, advantage: str):
    """(advantages, group std): the course's sample-std scaling, or centring only."""
    if advantage == "centred":
        spread = torch.std(scores, dim=1, correction=1)
        return scores - scores.mean(1, keepdim=True), spread
    return gr.group_advantages_sample_std(scores)


def objective(logp, sampled_logp, ref_logp, mask, advantages, beta, clip, denominator):
    """Clipped surrogate minus beta * k3 per token; each reply's token sum divided by its
    own length ("tokens", the course's) or by MAXLEN ("maxlen"); mean over replies."""
    ratio = torch.exp(logp - sampled_logp)
    plain_term = ratio * advantages
    capped_term = ratio.clamp(1 - clip, 1 + clip) * advantages
    penalty = beta * gr.k3(ref_logp - logp)
    per_token = torch.minimum(plain_term, capped_term) - penalty
    length = mask.sum(1) if denominator == "tokens" else dp.MAXLEN
    per_sequence = (per_token * mask).sum(1) / length
    return per_sequence.mean()


def _draw_groups(policy, count, group_size, substring):
    drawn = dp.ALL_PROMPTS[torch.randint(len(dp.ALL_PROMPTS), (count,))]
    prompts = drawn.repeat_interleave(group_size, 0)
    replies = dp.sample(policy, prompts)
    scores = gr.verifier_rewards(prompts, replies, substring).reshape(count, group_size)
    return prompts, replies, scores


def _refilled_batch(policy, count, group_size, substring, max_draws):
    """Mixed groups only, drawing `count` prompts at a time until `count` are kept or
    `max_draws` draws are spent. Returns (prompts, replies, scores, draws, first-draw
    group std); a batch may come back short, or empty."""
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


def _update(policy, reference, adam, batch, settings) -> None:
    prompts, replies, scores = batch
    advantages, _ = advantages_for(scores, settings["advantage"])
    per_reply = advantages.reshape(-1, 1)
    with torch.no_grad():  # fixed for both inner steps: the first ratio is exactly 1
        sampled_logp, mask = dp.token_logprobs(policy, prompts, replies)
        ref_logp = dp.token_logprobs(reference, prompts, replies)[0]
    for _ in range(settings["inner_steps"]):
        policy.train()
        adam.zero_grad(set_to_none=True)
        logp = dp.token_logprobs(policy, prompts, replies)[0]
        loss = -objective(
            logp,
            sampled_logp,
            ref_logp,
            mask,
            per_reply,
            settings["beta"],
            settings["clip"],
            settings["denominator"],
        )
        loss.backward()
        clip_grad_norm_(policy.parameters(), max_norm=1.0)
        adam.step()


@torch.inference_mode()
def verifier_pass_rate(policy, substring: bool, per_prompt: int = 16, seed: int = 88) -> float:
    """The checker's acceptance rate on fresh samples from a forked, seeded generator."""
    prompts = dp.ALL_PROMPTS.repeat_interleave(per_prompt, 0)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        replies = dp.sample(policy, prompts)
    return float(gr.verifier_rewards(prompts, replies, substring).mean())


def train_variant(
    reference,
    beta: float = 0.04,
    substring: bool = False,
    iterations: int = 150,
    prompts_per_iteration: int = 32,
    group_size: int = 8,
    advantage: str = "sample_std",
    denominator: str = "tokens",
    refill: bool = False,
    max_draws: int = 8,
    inner_steps: int = 2,
    clip: float = 0.2,
    lr: float = 1e-3,
    seed: int = 41,
    log_every: int = 25,
) -> dict:
    """GRPO from the reference with the variant's switches; a record every `log_every`
    iterations (record 0: the start), with the replies generated so far."""
    _check(advantage, denominator, group_size, prompts_per_iteration, max_draws)
    gr._check_grpo_settings(beta, group_size)
    settings = {
        "beta": beta,
        "advantage": advantage,
        "denominator": denominator,
        "inner_steps": inner_steps,
        "clip": clip,
    }
    torch.manual_seed(seed)
    policy = dp.trainable_copy(reference)
    adam = torch.optim.Adam(policy.parameters(), lr)
    log = [{"iteration": 0, "generations": 0, **dp.task_metrics(policy, reference)}]
    generations, skipped = 0, 0
    for iteration in range(1, iterations + 1):
        if refill:
            *batch, draws, group_std = _refilled_batch(
                policy, prompts_per_iteration, group_size, substring, max_draws
            )
        else:
            batch, draws = _draw_groups(policy, prompts_per_iteration, group_size, substring), 1
            group_std = torch.std(batch[2], dim=1, correction=1)
        generations += draws * prompts_per_iteration * group_size
        if len(batch[2]):
            _update(policy, reference, adam, batch, settings)
        else:
            skipped += 1
        if iteration % log_every == 0:
            entry = {
                "iteration": iteration,
                "generations": generations,
                "draws": draws,
                "zero_variance": float((group_std == 0).float().mean()),
                "skipped_updates": skipped,
            }
            entry.update(dp.task_metrics(policy, reference))
            entry["verifier_reward"] = verifier_pass_rate(policy, substring)
            log.append(entry)
    return {
        "settings": {
            "substring": substring,
            "iterations": iterations,
            "group_size": group_size,
            "prompts_per_iteration": prompts_per_iteration,
            "refill": refill,
            "max_draws": max_draws,
            "seed": seed,
            **settings,
        },
        "records": log,
    }


def run_variants(iterations: int = 150, seeds=(41, 42, 43), beta: float = 0.04) -> dict:
    """The four Lab 5 variants the course lists after its first (no KL term, recorded by
    the lab itself): Dr. GRPO-like, drop-and-refill, G = 4 against G = 16 at 256 replies
    per iteration, and the exact against the substring checker over several seeds."""
    reference = dp.train_reference()
    common = {"iterations": iterations, "beta": beta}
    seeds = list(seeds)
    return {
        "dr_grpo": train_variant(reference, advantage="centred", denominator="maxlen", **common),
        "refill": train_variant(reference, refill=True, **common),
        "group_size": [
            train_variant(reference, group_size=g, prompts_per_iteration=256 // g, **common)
            for g in (4, 16)
        ],
        "seeds": {
            "exact": [train_variant(reference, seed=s, **common) for s in seeds],
            "substring": [
                train_variant(reference, substring=True, seed=s, **common) for s in seeds
            ],
        },
    }
