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

from dataclasses import dataclass

import torch

from verifiable_grpo.part3.digits import policy as dp
from verifiable_grpo.part3.dpo_lab import dpo


def ipo_loss(policy_chosen, policy_rejected, reference_chosen, reference_rejected, beta: float):
    """Mean of (h - 1 / (2 beta))^2, h the chosen-minus-rejected gain over the reference."""
    gap = (policy_chosen - reference_chosen) - (policy_rejected - reference_rejected)
    return torch.mean((gap - 1 / (2 * beta)) ** 2)


# The pair losses Lab 4's loop can take, by the name the recorded variants use.
LOSSES = {"dpo": dpo.dpo_loss, "ipo": ipo_loss}


@dataclass(frozen=True)
class PairLoss:
    """A variant's minibatch loss: `kind` names the pair loss (LOSSES: "dpo" or "ipo");
    `sft_weight` > 0 adds that many times the chosen replies' masked NLL."""

    kind: str = "dpo"
    sft_weight: float = 0.0

    def __post_init__(self):
        if self.kind not in LOSSES:
            raise ValueError(f"kind must be one of {tuple(LOSSES)}, got {self.kind!r}")
        w = self.sft_weight
        if isinstance(w, bool) or not isinstance(w, (int, float)) or w < 0:
            raise ValueError(f"sft_weight must be a number >= 0, got {w!r}")


@dataclass(frozen=True)
class _Recorder:
    """The log row of a variant's run: pair statistics on all `data` pairs under the
    variant's loss `kind`, and the task metrics against `reference`."""

    reference: object
    data: tuple
    kind: str

    @torch.inference_mode()
    def __call__(self, step, policy, ref_scores, beta) -> dict:
        policy.eval()
        prompts, chosen, rejected = self.data
        chosen_gain = dp.sequence_logprob(policy, prompts, chosen) - ref_scores[0]
        rejected_gain = dp.sequence_logprob(policy, prompts, rejected) - ref_scores[1]
        gap = chosen_gain - rejected_gain
        zero = torch.zeros_like(gap)
        loss = LOSSES[self.kind](chosen_gain, rejected_gain, zero, zero, beta)
        return {
            "step": step,
            "loss": float(loss),
            "gap": float(gap.mean()),
            "chosen_ratio": float(chosen_gain.mean()),
            "rejected_ratio": float(rejected_gain.mean()),
            "pair_accuracy": float((gap > 0).float().mean()),
            **dp.task_metrics(policy, self.reference),
        }


LAB_4_RUN = dpo.PairRun()  # Lab 4's own settings (beta, steps, batch, lr, seed, log_every)


def train_pairs(
    reference,
    prompts,
    chosen,
    rejected,
    loss: PairLoss = PairLoss(),
    run: dpo.PairRun = LAB_4_RUN,
) -> list[dict]:
    """Lab 4's loop (dpo.train_pair_loss) with IPO's loss (`PairLoss("ipo")`) or an added
    SFT term on the chosen replies (`PairLoss(sft_weight=...)`); the default loss is
    train_dpo's run."""
    data = (prompts, chosen, rejected)
    record = _Recorder(reference, data, loss.kind)
    return dpo.train_pair_loss(reference, data, run, record, LOSSES[loss.kind], loss.sft_weight)


def run_variants(beta: float = 0.1, steps: int = 300, sft_weight: float = 1.0) -> dict:
    """Lab 4's pairs, then: off-policy DPO + SFT, and IPO on both kinds of pairs."""
    reference = dp.train_reference()
    prompts, winners, losers = dpo.on_policy_pairs(reference)
    random_losers = dpo.off_policy_rejected(len(winners))
    run = dpo.PairRun(beta=beta, steps=steps)
    ipo = PairLoss("ipo")
    return {
        "beta": beta,
        "sft_weight": sft_weight,
        "off_policy_dpo_sft": train_pairs(
            reference, prompts, winners, random_losers, PairLoss(sft_weight=sft_weight), run
        ),
        "on_policy_ipo": train_pairs(reference, prompts, winners, losers, ipo, run),
        "off_policy_ipo": train_pairs(reference, prompts, winners, random_losers, ipo, run),
    }
