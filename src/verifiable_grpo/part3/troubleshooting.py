"""A diagnostic table of post-training failures, each tied to a recorded run of the book
where it happened. The evidence is read from data/recorded/part3/, not restated, so the
table stays true if a lab is re-recorded.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from verifiable_grpo.part3 import labs
from verifiable_grpo.part3.smollm2 import records


def _grpo_runs() -> dict:
    runs = labs.recorded("expert-iteration")["metrics"]["grpo"]
    return {("substring" if r["substring"] else f"beta={r['beta']}"): r["records"] for r in runs}


def _dpo() -> dict:
    """Lab 4's digit policy: the reference and the last logged step of each DPO run."""
    digits = labs.recorded("dpo")["metrics"]["digits"]
    return {
        "reference": digits["reference"],
        "on_policy": digits["on_policy"][-1],
        "off_policy": digits["off_policy"][-1],
    }


def _flat_reward() -> str:
    records = _grpo_runs()["beta=0.04"]
    early, last = records[1], records[-1]
    return (
        f"GRPO, beta 0.04: groups with identical rewards {early['zero_variance']:.0%} at "
        f"iteration {early['iteration']}, {last['zero_variance']:.0%} at {last['iteration']}"
    )


def _kl_growth() -> str:
    digits = _dpo()
    return (
        f"DPO off-policy pairs: KL {digits['off_policy']['kl']:.3f} nats and task accuracy "
        f"{digits['off_policy']['accuracy']:.3f}; on-policy: KL {digits['on_policy']['kl']:.3f}, "
        f"accuracy {digits['on_policy']['accuracy']:.3f}"
    )


def _length() -> str:
    digits, substring = _dpo(), _grpo_runs()["substring"]
    return (
        f"mean length {digits['reference']['length']:.3f} at the reference; "
        f"{digits['off_policy']['length']:.3f} after off-policy DPO (shorter); "
        f"{substring[-1]['length']:.3f} after GRPO on the substring checker (longer)"
    )


def _hacking() -> str:
    last = _grpo_runs()["substring"][-1]
    top = labs.recorded("reward-model")["metrics"]["selection"][-1]
    return (
        f"substring checker accepts {last['verifier_reward']:.3f}, exact {last['accuracy']:.3f}; "
        f"best-of-{top['n']:,}: proxy {top['linear_proxy']:.2f}, true reward {top['linear_true']:.2f}"
    )


def _format() -> str:
    sft = records.load_recorded("sft")
    return (
        f"before SFT: stops {sft['before']['stop']:.2f} of held-out turns, exact "
        f"{sft['before']['exact']:.2f}; after 15 steps: stops {sft['after']['stop']:.2f}, "
        f"exact {sft['after']['exact']:.2f}"
    )


def _displacement() -> str:
    off = _dpo()["off_policy"]
    return (
        f"off-policy DPO: pair accuracy {off['pair_accuracy']:.3f}, yet the chosen answers' "
        f"log-ratio is {off['chosen_ratio']:+.3f} (less likely than before)"
    )


@dataclass(frozen=True)
class FailureMode:
    symptom: str
    causes: str
    diagnostic: str
    chapter: str  # the book page (a {doc} path) where the reader saw it
    evidence: Callable[[], str]  # the recorded numbers, read now


FAILURE_MODES = (
    FailureMode(
        "flat reward, no learning",
        "prompts too easy or too hard for the group: every "
        "response scores the same, so every advantage is 0",
        "log the fraction of zero-variance groups and the per-prompt success rate; "
        "adjust difficulty or G, or drop and refill such groups",
        "notebooks/part3/05_expert_iteration_vs_grpo",
        _flat_reward,
    ),
    FailureMode(
        "KL grows while the task does not improve",
        "training signal that does not match "
        "the behaviour (off-policy pairs, a proxy reward), beta too small, learning rate "
        "too high",
        "plot KL beside the task metric on held-out prompts; rerun with a "
        "larger beta or on-policy data",
        "notebooks/part3/04_dpo",
        _kl_growth,
    ),
    FailureMode(
        "length drifts (collapse or growth)",
        "the objective is cheaper to satisfy with "
        "shorter or longer outputs: per-token averaging, a checker that accepts padding",
        "track mean length per step; read the longest and shortest high-reward samples",
        "notebooks/part3/05_expert_iteration_vs_grpo",
        _length,
    ),
    FailureMode(
        "reward rises, quality does not (reward hacking)",
        "the checker or reward model accepts outputs that are wrong",
        "score a sample with an independent exact "
        "checker or by hand; look for accepted-but-wrong outputs",
        "notebooks/part3/03_reward_model",
        _hacking,
    ),
    FailureMode(
        "format failures: no stop, broken template",
        "the deployed template is not the "
        "trained one; end-of-turn rows never trained; loss on the wrong tokens",
        "render one conversation to token ids and compare with training; measure the "
        "stop rate separately from accuracy",
        "notebooks/part3/01_masked_sft",
        _format,
    ),
    FailureMode(
        "preferred answers become less likely",
        "DPO fits the margin; it can push both answers down if the rejected one falls faster",
        "log the chosen and rejected log-ratios, not only the loss and pair accuracy",
        "notebooks/part3/04_dpo",
        _displacement,
    ),
)


def diagnostic_rows() -> list[dict]:
    """One row per failure mode, with its evidence read from the recorded runs."""
    return [
        {
            "symptom": m.symptom,
            "causes": m.causes,
            "diagnostic": m.diagnostic,
            "chapter": m.chapter,
            "evidence": m.evidence(),
        }
        for m in FAILURE_MODES
    ]
