"""Lab 4, part B: DPO on the digit policy, with on-policy and off-policy rejected answers.

Both conditions share the chosen (correct) answers and the reference. On-policy pairs
reject the reference's own wrong samples; off-policy pairs reject random 3-4 digit strings
the reference almost never generates. The pairwise loss falls much further off-policy, yet
the generator gets worse there: a low DPO loss is not evidence of a better policy.
"""
from __future__ import annotations

import copy
import math

import numpy as np
import torch
import torch.nn.functional as F

from verifiable_grpo.part3 import digit_policy as dp
from verifiable_grpo.part3.dpo_bandit import check_beta


def dpo_loss(chosen_logp, rejected_logp, ref_chosen, ref_rejected, beta: float):
    """-log sigmoid(beta [(log pi(y_w) - log pi_ref(y_w)) - (log pi(y_l) - log pi_ref(y_l))])."""
    margin = beta * ((chosen_logp - ref_chosen) - (rejected_logp - ref_rejected))
    return -F.logsigmoid(margin).mean()


def check_pairs(prompts, chosen, rejected) -> None:
    """A preference pair is (prompt[2 digits], chosen[MAXLEN ids], rejected[MAXLEN ids])."""
    if prompts.ndim != 2 or prompts.shape[1] != 2:
        raise ValueError(f"pair prompts must have shape (N, 2), got {tuple(prompts.shape)}")
    for name, ids in (("chosen", chosen), ("rejected", rejected)):
        if ids.shape != (len(prompts), dp.MAXLEN):
            raise ValueError(f"{name} must have shape ({len(prompts)}, {dp.MAXLEN}) to match "
                             f"the prompts, got {tuple(ids.shape)}")
        if ids.min() < 0 or ids.max() >= dp.VOCAB:
            raise ValueError(f"{name} holds token ids outside 0..{dp.VOCAB - 1}")
    if len(prompts) == 0:
        raise ValueError("no preference pairs: collect at least one (chosen, rejected) pair")
    if (chosen == rejected).all(1).any():
        raise ValueError("a preference pair has identical chosen and rejected responses; "
                         "drop it (it carries no preference)")


def on_policy_pairs(reference, per_prompt: int = 64, max_losses: int = 24, seed: int = 10):
    """Sample the reference; per prompt pair each of its first `max_losses` wrong samples
    with a correct sample (cycling through the correct ones). Prompts where every sample
    is right (or wrong) give no pair."""
    torch.manual_seed(seed)
    prompts = dp.ALL_PROMPTS.repeat_interleave(per_prompt, 0)
    targets = dp.sample(reference, prompts)
    replies = dp.decode(targets)
    pair_prompts, good, bad = [], [], []
    for i, prompt in enumerate(dp.ALL_PROMPTS):
        correct = str(int(prompt.sum()))
        block = range(i * per_prompt, (i + 1) * per_prompt)
        wins = [k for k in block if replies[k] == correct]
        losses = [k for k in block if replies[k] != correct]
        if not wins or not losses:
            continue
        for n, k in enumerate(losses[:max_losses]):
            pair_prompts.append(prompt.tolist())
            good.append(targets[wins[n % len(wins)]].tolist())
            bad.append(targets[k].tolist())
    return torch.tensor(pair_prompts), torch.tensor(good), torch.tensor(bad)


def off_policy_rejected(count: int, seed: int = 12) -> torch.Tensor:
    """Random 3- or 4-digit strings: answers far outside the reference's distribution."""
    rng = np.random.default_rng(seed)
    replies = ["".join(str(int(c)) for c in rng.integers(0, 10, rng.integers(3, 5)))
               for _ in range(count)]
    return dp.encode_responses(replies)


def train_dpo(reference, prompts, chosen, rejected, beta: float = 0.1, steps: int = 300,
              batch: int = 64, lr: float = 1e-3, seed: int = 21, log_every: int = 100) -> list[dict]:
    """Adam on the DPO loss over minibatches drawn with replacement; logs pair fit and task
    behaviour every `log_every` steps (record 0 is the reference itself)."""
    beta = check_beta(beta)
    check_pairs(prompts, chosen, rejected)
    with torch.inference_mode():
        ref_chosen = dp.sequence_logprob(reference, prompts, chosen)
        ref_rejected = dp.sequence_logprob(reference, prompts, rejected)
    torch.manual_seed(seed)
    policy = dp.trainable_copy(reference)
    optimizer = torch.optim.Adam(policy.parameters(), lr=lr)
    records = [dict(step=0, loss=math.log(2), chosen_ratio=0.0, rejected_ratio=0.0,
                    pair_accuracy=0.5, **dp.task_metrics(policy, reference))]
    for step in range(1, steps + 1):
        indices = torch.randint(len(chosen), (batch,))
        policy.train()
        optimizer.zero_grad(set_to_none=True)
        win = dp.sequence_logprob(policy, prompts[indices], chosen[indices])
        lose = dp.sequence_logprob(policy, prompts[indices], rejected[indices])
        dpo_loss(win, lose, ref_chosen[indices], ref_rejected[indices], beta).backward()
        torch.nn.utils.clip_grad_norm_(policy.parameters(), 1.0)
        optimizer.step()
        if step % log_every == 0:
            records.append(_pair_report(policy, reference, prompts, chosen, rejected,
                                        ref_chosen, ref_rejected, beta, step))
    return records


@torch.inference_mode()
def _pair_report(policy, reference, prompts, chosen, rejected, ref_chosen, ref_rejected,
                 beta, step) -> dict:
    policy.eval()
    chosen_ratio = dp.sequence_logprob(policy, prompts, chosen) - ref_chosen
    rejected_ratio = dp.sequence_logprob(policy, prompts, rejected) - ref_rejected
    margin = beta * (chosen_ratio - rejected_ratio)
    return dict(step=step, loss=float(-F.logsigmoid(margin).mean()), margin=float(margin.mean()),
                chosen_ratio=float(chosen_ratio.mean()),
                rejected_ratio=float(rejected_ratio.mean()),
                pair_accuracy=float((margin > 0).float().mean()),
                **dp.task_metrics(policy, reference))


def run_digit_dpo(beta: float = 0.1, steps: int = 300, variant_beta: float | None = None) -> dict:
    """The module's Lab 4 part B: reference, pairs, both conditions; with `variant_beta`,
    the on-policy condition again at that beta (the first "Try this")."""
    reference = dp.train_reference()
    prompts, good, bad = on_policy_pairs(reference)
    off_bad = off_policy_rejected(len(good))
    with torch.inference_mode():
        ref_logp = {name: float(dp.sequence_logprob(reference, prompts, ids).mean())
                    for name, ids in (("chosen", good), ("on_policy_rejected", bad),
                                      ("off_policy_rejected", off_bad))}
    return dict(
        policy_parameters=dp.parameter_count(reference),
        reference=dp.task_metrics(reference, reference),
        reference_greedy_accuracy=dp.greedy_accuracy(reference),
        on_policy_pairs=len(good),
        example=[prompts[0].tolist(), dp.decode(good[:1])[0], dp.decode(bad[:1])[0]],
        reference_logp=ref_logp, beta=beta,
        on_policy=train_dpo(reference, prompts, good, bad, beta=beta, steps=steps),
        off_policy=train_dpo(reference, prompts, good, off_bad, beta=beta, steps=steps),
        on_policy_variant=None if variant_beta is None else dict(
            beta=variant_beta, records=train_dpo(reference, prompts, good, bad,
                                                 beta=variant_beta, steps=steps)),
    )


def run_lab(betas=(0.25, 0.5, 1.0, 2.0), pairs: int = 20_000, bandit_steps: int = 1000,
            beta: float = 0.1, steps: int = 300, variant_beta: float | None = 0.5) -> dict:
    """Lab 4 whole: the bandit (part A), then the digit policy (part B)."""
    from verifiable_grpo.part3.dpo_bandit import run_bandit

    return dict(bandit=run_bandit(betas, pairs, bandit_steps), digits=run_digit_dpo(beta, steps, variant_beta))
