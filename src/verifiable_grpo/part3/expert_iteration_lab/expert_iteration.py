"""Lab 5, first half: expert iteration, i.e. supervised fine-tuning on verified successes only.

Every round samples the current policy on all prompts, keeps the replies the exact verifier
accepts and trains on those with the masked NLL. It can only reinforce what the policy
already gets right sometimes: a prompt it never solves adds nothing. So each round
reports how many prompts its kept replies cover, next to how many replies it kept.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from verifiable_grpo.part3.digits import policy as dp


def _require_positive_ints(**named) -> None:
    for name, value in named.items():
        if type(value) is not int or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")


@dataclass(frozen=True)
class ExpertSettings:
    """Expert iteration's budget: rounds, samples per prompt, SFT steps and batch per
    round, Adam's learning rate and the seed."""

    rounds: int = 3
    per_prompt: int = 8
    steps: int = 200
    batch: int = 128
    lr: float = 1e-3
    seed: int = 30


def expert_iteration(reference, settings: ExpertSettings = ExpertSettings()) -> list[dict]:
    """Success-only SFT for `rounds` rounds; one record per round."""
    rounds, per_prompt, steps, batch = (
        settings.rounds,
        settings.per_prompt,
        settings.steps,
        settings.batch,
    )
    lr, seed = settings.lr, settings.seed
    _require_positive_ints(rounds=rounds, per_prompt=per_prompt, steps=steps, batch=batch)
    policy = dp.trainable_copy(reference)
    adam = torch.optim.Adam(policy.parameters(), lr)  # its state carries across rounds
    torch.manual_seed(seed)
    history = []
    prompts = dp.ALL_PROMPTS.repeat_interleave(per_prompt, 0)
    truths = dp.answers(prompts)
    for number in range(1, rounds + 1):
        replies = dp.sample(policy, prompts)
        verified = torch.tensor([text == truth for text, truth in zip(dp.decode(replies), truths)])
        if not bool(verified.any()):
            raise RuntimeError(
                "no sample passed the verifier: success-only SFT has no "
                "training signal; sample more per prompt or start nearer"
            )
        train_prompts, train_replies = prompts[verified], replies[verified]
        solved = verified.view(len(dp.ALL_PROMPTS), per_prompt).any(dim=1)
        for _ in range(steps):
            rows = torch.randint(len(train_prompts), (batch,))
            policy.train()
            adam.zero_grad(set_to_none=True)
            dp.masked_nll(policy, train_prompts[rows], train_replies[rows]).backward()
            adam.step()
        record = {
            "round": number,
            "accepted": int(verified.sum()),
            "accept_rate": float(verified.float().mean()),
            "covered_prompts": int(solved.sum()),
        }
        record.update(dp.task_metrics(policy, reference))
        history.append(record)
    return history
