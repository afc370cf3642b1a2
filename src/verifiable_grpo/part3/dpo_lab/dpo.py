"""Lab 4, part B: DPO on the digit policy, once with on-policy and once with off-policy losers.

The two runs share the reference and the preferred (correct) replies; they differ in the
rejected reply of each pair. On-policy, it is one of the reference's own wrong samples.
Off-policy, it is a random string of 3 or 4 digits, something the reference essentially
never says. Off-policy pairs are easy to separate, so the DPO loss drops far lower, and
yet sampled accuracy falls: a small pairwise loss does not certify a better generator.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch.nn.functional import logsigmoid
from torch.nn.utils import clip_grad_norm_

from verifiable_grpo.part3.digits import policy as dp
from verifiable_grpo.part3.dpo_lab.dpo_bandit import check_beta
from verifiable_grpo.part3.dpo_lab.settings import DPOSettings


def dpo_loss(policy_chosen, policy_rejected, reference_chosen, reference_rejected, beta: float):
    """Mean of -log sigma(beta * (gain on the chosen reply - gain on the rejected one)),
    where a gain is log pi - log pi_ref of that reply (arguments: those log-probs)."""
    chosen_gain = policy_chosen - reference_chosen
    rejected_gain = policy_rejected - reference_rejected
    return -logsigmoid(beta * (chosen_gain - rejected_gain)).mean()


def check_pairs(prompts, chosen, rejected) -> None:
    """Refuse malformed preference data before any training: prompts (N, 2), chosen and
    rejected (N, MAXLEN) token ids, at least one pair, no pair without a difference."""
    if prompts.ndim != 2 or prompts.shape[1] != 2:
        raise ValueError(f"pair prompts must have shape (N, 2), got {tuple(prompts.shape)}")
    expected = (len(prompts), dp.MAXLEN)
    for role, ids in (("chosen", chosen), ("rejected", rejected)):
        if tuple(ids.shape) != expected:
            raise ValueError(
                f"{role} must have shape ({expected[0]}, {expected[1]}) to match "
                f"the prompts, got {tuple(ids.shape)}"
            )
    if len(prompts) == 0:
        raise ValueError("no preference pairs: collect at least one (chosen, rejected) pair")
    for role, ids in (("chosen", chosen), ("rejected", rejected)):
        if not bool(((ids >= 0) & (ids < dp.VOCAB)).all()):
            raise ValueError(f"{role} holds token ids outside 0..{dp.VOCAB - 1}")
    if bool((chosen == rejected).all(dim=1).any()):
        raise ValueError(
            "a preference pair has identical chosen and rejected responses; "
            "drop it (it carries no preference)"
        )


def on_policy_pairs(reference, per_prompt: int = 64, max_losses: int = 24, seed: int = 10):
    """Pairs from the reference's own samples: for every prompt, each of its first
    `max_losses` wrong samples is paired with a right one (taking the right ones in turn).
    A prompt whose samples are all right, or all wrong, yields no pair."""
    torch.manual_seed(seed)
    repeated = dp.ALL_PROMPTS.repeat_interleave(per_prompt, 0)
    samples = dp.sample(reference, repeated)
    texts = dp.decode(samples)
    rows = samples.tolist()
    prompt_rows, winners, losers = [], [], []
    for index, (prompt, truth) in enumerate(
        zip(dp.ALL_PROMPTS.tolist(), dp.answers(dp.ALL_PROMPTS))
    ):
        offset = index * per_prompt
        right = [offset + j for j in range(per_prompt) if texts[offset + j] == truth]
        wrong = [offset + j for j in range(per_prompt) if texts[offset + j] != truth]
        if right and wrong:
            for turn, loser in enumerate(wrong[:max_losses]):
                prompt_rows.append(prompt)
                winners.append(rows[right[turn % len(right)]])
                losers.append(rows[loser])
    return torch.tensor(prompt_rows), torch.tensor(winners), torch.tensor(losers)


def off_policy_rejected(count: int, seed: int = 12) -> torch.Tensor:
    """`count` random strings of 3 or 4 digits, far from anything the reference says."""
    rng = np.random.default_rng(seed)
    texts = []
    for _ in range(count):
        length = rng.integers(3, 5)  # drawn before the digits
        texts.append("".join(map(str, rng.integers(0, 10, length).tolist())))
    return dp.encode_responses(texts)


def _first_record(policy, reference) -> dict:
    """Step 0: the policy is the reference, so every ratio is 0 and the loss is log 2."""
    return {
        "step": 0,
        "loss": math.log(2),
        "chosen_ratio": 0.0,
        "rejected_ratio": 0.0,
        "pair_accuracy": 0.5,
        **dp.task_metrics(policy, reference),
    }


@torch.inference_mode()
def _fit_record(step, policy, reference, data, ref_scores, beta) -> dict:
    """How well the current policy orders all pairs, and how it behaves on the task."""
    policy.eval()
    prompts, chosen, rejected = data
    chosen_gain = dp.sequence_logprob(policy, prompts, chosen) - ref_scores[0]
    rejected_gain = dp.sequence_logprob(policy, prompts, rejected) - ref_scores[1]
    margins = beta * (chosen_gain - rejected_gain)
    return {
        "step": step,
        "loss": float(-logsigmoid(margins).mean()),
        "margin": float(margins.mean()),
        "chosen_ratio": float(chosen_gain.mean()),
        "rejected_ratio": float(rejected_gain.mean()),
        "pair_accuracy": float(torch.mean((margins > 0).float())),
        **dp.task_metrics(policy, reference),
    }


@dataclass(frozen=True)
class PairRun:
    """A preference run's settings: Adam on minibatches of `batch` pairs drawn with
    replacement, `steps` steps, a record every `log_every` steps."""

    beta: float = 0.1
    steps: int = 300
    batch: int = 64
    lr: float = 1e-3
    seed: int = 21
    log_every: int = 100


def train_pair_loss(reference, data, run: PairRun, record, pair_loss=dpo_loss, sft_weight=0.0):
    """The one preference loop of the digit labs: Adam on `pair_loss(policy chosen, policy
    rejected, reference chosen, reference rejected, beta)` of each minibatch (DPO's by
    default), plus `sft_weight` x the chosen replies' masked NLL, gradient norm clipped at
    1. data: (prompts, chosen, rejected); `record(step, policy, reference scores, beta)`
    makes the log row at step 0 and every `log_every` steps."""
    beta = check_beta(run.beta)
    prompts, chosen, rejected = data
    check_pairs(prompts, chosen, rejected)
    with torch.inference_mode():  # the reference's scores never change: once
        ref_scores = (
            dp.sequence_logprob(reference, prompts, chosen),
            dp.sequence_logprob(reference, prompts, rejected),
        )
    torch.manual_seed(run.seed)
    policy = dp.trainable_copy(reference)
    adam = torch.optim.Adam(policy.parameters(), run.lr)
    log = [record(0, policy, ref_scores, beta)]
    for step in range(1, run.steps + 1):
        picked = torch.randint(len(chosen), (run.batch,))
        policy.train()
        adam.zero_grad(set_to_none=True)
        # chosen before rejected: the order autograd accumulates the shared weights in
        chosen_logp = dp.sequence_logprob(policy, prompts[picked], chosen[picked])
        rejected_logp = dp.sequence_logprob(policy, prompts[picked], rejected[picked])
        loss = pair_loss(
            chosen_logp, rejected_logp, ref_scores[0][picked], ref_scores[1][picked], beta
        )
        if sft_weight:
            loss = loss + sft_weight * dp.masked_nll(policy, prompts[picked], chosen[picked])
        loss.backward()
        clip_grad_norm_(policy.parameters(), max_norm=1.0)
        adam.step()
        if step % run.log_every == 0:
            log.append(record(step, policy, ref_scores, beta))
    return log


def train_dpo(reference, prompts, chosen, rejected, run: PairRun = PairRun()) -> list[dict]:
    """DPO with Adam on minibatches sampled with replacement, gradient norm clipped at 1.

    Returns a record every `log_every` steps (pair statistics on all pairs and the task
    metrics); record 0 describes the reference itself."""
    data = (prompts, chosen, rejected)

    def record(step, policy, ref_scores, beta):
        if step == 0:
            return _first_record(policy, reference)
        return _fit_record(step, policy, reference, data, ref_scores, beta)

    return train_pair_loss(reference, data, run, record)


def run_digit_dpo(beta: float = 0.1, steps: int = 300, variant_beta: float | None = None) -> dict:
    """Part B whole: the reference, both kinds of pairs and a DPO run on each; with
    `variant_beta`, the on-policy run once more at that beta (the first "Try this")."""
    reference = dp.train_reference()
    prompts, winners, losers = on_policy_pairs(reference)
    random_losers = off_policy_rejected(len(winners))
    with torch.inference_mode():
        mean_logp = {
            role: float(dp.sequence_logprob(reference, prompts, ids).mean())
            for role, ids in (
                ("chosen", winners),
                ("on_policy_rejected", losers),
                ("off_policy_rejected", random_losers),
            )
        }
    report = {
        "policy_parameters": dp.parameter_count(reference),
        "reference": dp.task_metrics(reference, reference),
        "reference_greedy_accuracy": dp.greedy_accuracy(reference),
        "on_policy_pairs": len(winners),
        "example": [prompts[0].tolist(), dp.decode(winners[:1])[0], dp.decode(losers[:1])[0]],
        "reference_logp": mean_logp,
        "beta": beta,
    }

    def run(loser_ids, at_beta):
        return train_dpo(reference, prompts, winners, loser_ids, PairRun(beta=at_beta, steps=steps))

    report["on_policy"] = run(losers, beta)
    report["off_policy"] = run(random_losers, beta)
    report["on_policy_variant"] = (
        None
        if variant_beta is None
        else {"beta": variant_beta, "records": run(losers, variant_beta)}
    )
    return report


def run_lab(settings: DPOSettings) -> dict:
    """Lab 4 whole: the bandit (part A), then the digit policy (part B)."""
    from verifiable_grpo.part3.dpo_lab.dpo_bandit import run_bandit

    s = settings
    return {
        "bandit": run_bandit(s.betas, s.pairs, s.bandit_steps),
        "digits": run_digit_dpo(s.beta, s.steps, s.variant_beta),
    }
