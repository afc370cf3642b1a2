"""Lab 5, first half: success-only SFT (expert iteration) on the digit policy.

Each round samples the current policy, keeps the samples the exact verifier accepts and
fine-tunes on them with the masked NLL. It needs existing successes: a prompt the policy
never solves contributes nothing, so the number of prompts covered is reported beside the
number of kept samples.
"""
from __future__ import annotations

import torch

from verifiable_grpo.part3 import digit_policy as dp


def expert_iteration(reference, rounds: int = 3, per_prompt: int = 8, steps: int = 200,
                     batch: int = 128, lr: float = 1e-3, seed: int = 30) -> list[dict]:
    for name, value in (("rounds", rounds), ("per_prompt", per_prompt), ("steps", steps),
                        ("batch", batch)):
        if type(value) is not int or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    policy = dp.trainable_copy(reference)
    optimizer = torch.optim.Adam(policy.parameters(), lr=lr)   # one optimiser for all rounds
    torch.manual_seed(seed)
    records = []
    for round_number in range(1, rounds + 1):
        prompts = dp.ALL_PROMPTS.repeat_interleave(per_prompt, 0)
        targets = dp.sample(policy, prompts)
        keep = torch.tensor([r == a for r, a in zip(dp.decode(targets), dp.answers(prompts))])
        if not keep.any():
            raise RuntimeError("no sample passed the verifier: success-only SFT has no "
                               "training signal; sample more per prompt or start nearer")
        kept_prompts, kept_targets = prompts[keep], targets[keep]
        covered = int(keep.reshape(len(dp.ALL_PROMPTS), per_prompt).any(1).sum())
        for _ in range(steps):
            indices = torch.randint(len(kept_prompts), (batch,))
            policy.train()
            optimizer.zero_grad(set_to_none=True)
            dp.masked_nll(policy, kept_prompts[indices], kept_targets[indices]).backward()
            optimizer.step()
        records.append(dict(round=round_number, accepted=int(keep.sum()),
                            accept_rate=float(keep.float().mean()), covered_prompts=covered,
                            **dp.task_metrics(policy, reference)))
    return records
