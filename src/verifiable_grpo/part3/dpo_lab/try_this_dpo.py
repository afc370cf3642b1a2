"""Lab 4's "Try this" variants on the digit policy: IPO's loss, and DPO plus an SFT term.

Both run Lab 4's loop (dpo.train_pair_loss) with its pairs, seed, optimiser and budget, and
change only the loss of a minibatch:
- IPO (Azar et al.) regresses the log-ratio difference h = (log pi - log pi_ref)(chosen)
  - (log pi - log pi_ref)(rejected) onto a fixed target 1 / (2 beta) with a squared loss.
  DPO's -log sigma(beta h) keeps rewarding a larger h for ever; IPO stops at the target,
  so it cannot win by pushing an easy, off-policy rejected string to minus infinity.
- DPO + SFT adds `sft_weight` times the masked NLL of the chosen replies, which pulls the
  chosen replies' likelihood up however the margin is reached.
"""

from __future__ import annotations

import torch

from verifiable_grpo.part3.digits import policy as dp
from verifiable_grpo.part3.dpo_lab import dpo


def ipo_loss(policy_chosen, policy_rejected, reference_chosen, reference_rejected, beta: float):
    """Mean of (h - 1 / (2 beta))^2, h the chosen-minus-rejected gain over the reference."""
    gap = (policy_chosen - reference_chosen) - (policy_rejected - reference_rejected)
    return torch.mean((gap - 1 / (2 * beta)) ** 2)


# The pair losses Lab 4's loop can take, by the name the recorded variants use.
LOSSES = {"dpo": dpo.dpo_loss, "ipo": ipo_loss}


@torch.inference_mode()
def _record(step, policy, reference, data, ref_scores, beta, kind) -> dict:
    policy.eval()
    prompts, chosen, rejected = data
    chosen_gain = dp.sequence_logprob(policy, prompts, chosen) - ref_scores[0]
    rejected_gain = dp.sequence_logprob(policy, prompts, rejected) - ref_scores[1]
    gap = chosen_gain - rejected_gain
    zero = torch.zeros_like(gap)
    loss = LOSSES[kind](chosen_gain, rejected_gain, zero, zero, beta)
    return {
        "step": step,
        "loss": float(loss),
        "gap": float(gap.mean()),
        "chosen_ratio": float(chosen_gain.mean()),
        "rejected_ratio": float(rejected_gain.mean()),
        "pair_accuracy": float((gap > 0).float().mean()),
        **dp.task_metrics(policy, reference),
    }


def train_pairs(
    reference,
    prompts,
    chosen,
    rejected,
    kind: str = "dpo",
    sft_weight: float = 0.0,
    beta: float = 0.1,
    steps: int = 300,
    batch: int = 64,
    lr: float = 1e-3,
    seed: int = 21,
    log_every: int = 100,
) -> list[dict]:
    """Lab 4's loop (dpo.train_pair_loss) with IPO's loss (`kind="ipo"`) or an added SFT
    term on the chosen replies (`sft_weight` > 0). kind="dpo", sft_weight=0 is
    train_dpo's run."""
    if kind not in LOSSES:
        raise ValueError(f"kind must be one of {tuple(LOSSES)}, got {kind!r}")
    if isinstance(sft_weight, bool) or not isinstance(sft_weight, (int, float)) or sft_weight < 0:
        raise ValueError(f"sft_weight must be a number >= 0, got {sft_weight!r}")
    data = (prompts, chosen, rejected)

    def record(step, policy, ref_scores, beta):
        return _record(step, policy, reference, data, ref_scores, beta, kind)

    run = dpo.PairRun(beta, steps, batch, lr, seed, log_every)
    return dpo.train_pair_loss(reference, data, run, record, LOSSES[kind], sft_weight)


def run_variants(beta: float = 0.1, steps: int = 300, sft_weight: float = 1.0) -> dict:
    """Lab 4's pairs, then: off-policy DPO + SFT, and IPO on both kinds of pairs."""
    reference = dp.train_reference()
    prompts, winners, losers = dpo.on_policy_pairs(reference)
    random_losers = dpo.off_policy_rejected(len(winners))
    settings = {"beta": beta, "steps": steps}
    return {
        "beta": beta,
        "sft_weight": sft_weight,
        "off_policy_dpo_sft": train_pairs(
            reference, prompts, winners, random_losers, sft_weight=sft_weight, **settings
        ),
        "on_policy_ipo": train_pairs(reference, prompts, winners, losers, kind="ipo", **settings),
        "off_policy_ipo": train_pairs(
            reference, prompts, winners, random_losers, kind="ipo", **settings
        ),
    }
