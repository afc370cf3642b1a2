"""Part III's sentences that quote a recorded number, tied to the records they quote."""

from __future__ import annotations

from verifiable_grpo.book.claims import SOURCES, fixed, keys, percent, record
from verifiable_grpo.part3.sft_lab import masked_sft


def _group_size_bill():
    mixed = {g: 1 - 0.9**g - 0.1**g for g in (8, 4)}
    return [fixed(mixed[8], 2), fixed(mixed[4], 2), f"{100 * mixed[4] / mixed[8]:.0f}"]


CLAIMS = {
    "III.10 group size": (
        "notebooks/part3/10_case_study_bill.py",
        "Every GRPO stage is proportional to the number of responses",
        _group_size_bill,
    ),
}


# Chapter III.1, masked SFT: QUICK (sft), its ablations and the published run's figures.
SFT = "notebooks/part3/01_masked_sft.py"
SOURCES["published:sft"] = masked_sft.MODULE_REPORTS
CLAIMS |= {
    "III.1 diagnosis": (
        SFT,
        "**What the diagnosis shows on the instruct model.**",
        keys("part3/sft-metrics.json", "chat_rows.before.cosine f3"),
    ),
    "III.1 FULL's held-out set": (
        SFT,
        "**Three ablations and a longer budget.**",
        keys(
            "part3/sft-full-metrics.json", "before.loss f4", "part3/sft-metrics.json:before.loss f4"
        ),
    ),
    "III.1 rows kept": (
        SFT,
        "Keeping the chat rows as loaded, the instruct model stops",
        keys(
            "part3/sft-no-row-init-metrics.json",
            "after.exact f2",
            "part3/sft-metrics.json:after.exact f2",
            "after.exact f2",
            "part3/sft-metrics.json:after.exact f2",
            "chat_rows.after.cosine f3",
        ),
    ),
    "III.1 no masking": (
        SFT,
        "Without masking, exact match falls by",
        keys(
            "part3/sft-no-mask-metrics.json",
            "after.exact f2",
            "part3/sft-metrics.json:after.exact f2",
            "after.loss f4",
            "part3/sft-metrics.json:after.loss f4",
        ),
    ),
    "III.1 FULL": (
        SFT,
        "FULL (50 updates over two epochs",
        keys(
            "part3/sft-full-metrics.json",
            "after.exact f2",
            "after.stop p0",
            "part3/sft-metrics.json:after.exact f2",
            "part3/sft-metrics.json:after.families.conversion f1",
            "after.families.conversion f1",
            "part3/sft-metrics.json:after.families.addition f1",
            "after.families.addition f1",
            "part3/sft-metrics.json:after.families.sorting f1",
            "after.families.sorting f1",
            "part3/sft-metrics.json:after.families.limit f1",
            "after.families.limit f1",
            "after.families.extraction f1",
        ),
    ),
    "III.1 twenty updates": (
        SFT,
        "The lab asks whether 20 updates",
        keys(
            "part3/sft-no-row-init-metrics.json",
            "after.loss f4",
            "part3/sft-no-row-init-20-metrics.json:after.loss f4",
            "after.exact f2",
            "part3/sft-no-row-init-20-metrics.json:after.exact f2",
            "after.families.conversion f1",
            "part3/sft-no-row-init-20-metrics.json:after.families.conversion f1",
            "part3/sft-no-row-init-20-metrics.json:history[14].loss f4",
            "history[14].loss f4",
        ),
    ),
    "III.1 beside: starting point": (
        SFT,
        "They differ for five reasons",
        keys("published:sft", "before.loss f2", "before.stop p0"),
    ),
    "III.1 beside: base model": (
        SFT,
        "On the base model the diagnosis is sharper",
        keys(
            "published:sft",
            "chat_rows.cosine_before f5",
            "ablations.no chat-row init[0] p0",
            "ablations.no chat-row init[1] p0",
            "ablations.no masking[0] f2",
            "ablations.default QUICK[0] f2",
            "ablations.FULL (50 updates)[0] f2",
            "part3/sft-full-metrics.json:after.exact f2",
        ),
    ),
}


# Chapter III.2, LoRA: the structure by hand, the target, rank and chat-row variants.
LORA = "notebooks/part3/02_lora.py"


def _lora(name: str = "lora") -> dict:
    return record(f"part3/{name}-metrics.json")


def _lora_by_hand():
    """Trainable share, and AdamW's two FP32 moments (decimal MB) for adapters and model."""
    run = _lora()
    return [
        percent(run["trainable"] / run["total"], 3),
        fixed(8 * run["trainable"] / 1e6, 2),
        f"{8 * run['base_parameters'] / 1e6:,.2f}",
    ]


def _lora_attention_only():
    run = _lora("lora-qkvo")
    return [percent(run["trainable"] / run["total"], 2)]


def _lora_targets():
    qkvo, default = _lora("lora-qkvo"), _lora()
    share = qkvo["trainable"] / default["trainable"]
    return [
        percent(share, 0),
        fixed(qkvo["adapted"]["loss"], 4),
        fixed(default["adapted"]["loss"], 4),
        fixed(qkvo["adapted"]["exact"], 2),
        fixed(default["adapted"]["exact"], 2),
        fixed(qkvo["adapted"]["families"]["conversion"], 1),
        fixed(default["adapted"]["families"]["conversion"], 1),
        percent(1 - share, 0),
    ]


CLAIMS |= {
    "III.2 by hand": (LORA, "By hand, one block:", _lora_by_hand),
    "III.2 attention only": (LORA, "Attention only: per block", _lora_attention_only),
    "III.2 rows as loaded": (
        LORA,
        "On this instruct model, yes: the run that keeps the rows",
        keys(
            "part3/lora-no-row-init-metrics.json",
            "adapted.exact f2",
            "part3/lora-metrics.json:adapted.exact f2",
            "adapted.loss f4",
            "part3/lora-metrics.json:adapted.loss f4",
        ),
    ),
    "III.2 targets": (LORA, "Wrapping only q, k, v and o trains", _lora_targets),
    "III.2 ranks": (
        LORA,
        "At a fixed scale (α = 2r), rank 2 is too narrow",
        keys(
            "part3/lora-r2-a4-metrics.json",
            "adapted.loss f4",
            "part3/lora-metrics.json:adapted.loss f4",
            "adapted.exact f2",
            "part3/lora-metrics.json:adapted.exact f2",
            "part3/lora-r32-a64-metrics.json:adapted.loss f4",
            "part3/lora-r32-a64-metrics.json:adapted.exact f2",
            "part3/lora-r2-a16-metrics.json:adapted.loss f4",
            "part3/lora-r2-a16-metrics.json:adapted.exact f2",
            "part3/lora-r32-a16-metrics.json:adapted.loss f4",
            "part3/lora-r32-a16-metrics.json:adapted.exact f2",
        ),
    ),
    "III.2 row delta": (
        LORA,
        "On this instruct model the delta changes little",
        keys(
            "part3/lora-row-delta-metrics.json",
            "adapted.exact f2",
            "part3/lora-metrics.json:adapted.exact f2",
            "part3/lora-no-row-init-metrics.json:adapted.exact f2",
            "chat_rows.after.cosine f3",
            "chat_rows.folded.cosine f3",
        ),
    ),
}


# Chapter III.3, reward model: the recorded lab, the seeds x data-size sweep, label bias.
REWARD = "notebooks/part3/03_reward_model.py"


def _reward_sweep():
    """Ranges over three seeds: MLP ECE, accuracy and correlation at 200 then 4,000 pairs,
    the linear model's accuracy, and seed 0's best selections with each data size."""
    pairs = record("part3/try-this.json")["metrics"]["reward"]["pairs"]

    def spread(size, get, digits):
        values = [get(p) for p in pairs if p["train_pairs"] == size]
        return [fixed(min(values), digits), fixed(max(values), digits)]

    ece = lambda p: p["mlp_ece"]  # noqa: E731
    accuracy = lambda p: p["models"]["mlp"]["accuracy"]  # noqa: E731
    correlation = lambda p: p["models"]["mlp"]["correlation"]  # noqa: E731
    linear = lambda p: p["models"]["linear"]["accuracy"]  # noqa: E731
    seed0 = {
        p["train_pairs"]: p["peak"]["mlp_true"]["true_reward"] for p in pairs if p["seed"] == 0
    }
    return [
        *spread(200, ece, 2),
        *spread(4000, ece, 3),
        *spread(4000, accuracy, 2),
        *spread(200, accuracy, 2),
        *spread(4000, correlation, 2),
        *spread(200, correlation, 2),
        *spread(200, linear, 2),
        *spread(4000, linear, 2),
        fixed(seed0[200], 2),
        fixed(seed0[4000], 2),
    ]


CLAIMS |= {
    "III.3 scores unidentified": (
        REWARD,
        "The mean scores below",
        keys(
            "part3/reward-model.json",
            "metrics.models.mlp.mean_reward f2",
            "metrics.models.linear.mean_reward f2",
        ),
    ),
    "III.3 oracle": (
        REWARD,
        "The oracle's *observed* accuracy",
        keys(
            "part3/reward-model.json",
            "metrics.oracle.accuracy f3",
            "metrics.oracle.expected_bayes_accuracy f3",
            "metrics.models.linear.accuracy f3",
            "metrics.models.linear.correlation f3",
        ),
    ),
    "III.3 over-optimisation": (
        REWARD,
        "**Reading.** The linear proxy's own score rises without end",
        keys(
            "part3/reward-model.json",
            "metrics.selection[7].linear_proxy f3",
            "metrics.selection[3].linear_true f3",
            "metrics.selection[7].linear_true f3",
            "metrics.models.linear.accuracy f3",
        ),
    ),
    "III.3 data and seeds": (REWARD, "With 200 pairs the MLP is badly calibrated", _reward_sweep),
    "III.3 label bias": (
        REWARD,
        "The labels still look good",
        keys(
            "part3/try-this.json",
            "metrics.reward.label_bias.models.mlp.accuracy f3",
            "metrics.reward.label_bias.models.mlp.correlation f3",
            "metrics.reward.label_bias.where[2].labeller.true_reward f3",
            "metrics.reward.biased_top_true_reward f3",
            "metrics.reward.label_bias.where[2].true.true_reward f3",
            "metrics.reward.label_bias.where[2].learned.true_reward f2",
        ),
    ),
    "III.3 soft selection": (
        REWARD,
        "The recorded run draws one candidate set after the published table",
        keys(
            "part3/reward-model.json",
            "metrics.softmax_selection.rows[0].linear_true f3",
            "metrics.selection[5].linear_true f3",
            "metrics.softmax_selection.rows[2].linear_true f2",
            "metrics.softmax_selection.rows[1].linear_true f2",
            "metrics.softmax_selection.rows[3].linear_true f2",
            "metrics.selection[5].oracle_true f3",
        ),
    ),
}


# Chapter III.4, DPO: the bandit's fit, the digit task on and off policy, SmolLM2's pairs.
DPO = "notebooks/part3/04_dpo.py"
DIGITS = "part3/dpo.json:metrics.digits"


def _dpo_overshoot_gap():
    row = record("part3/dpo.json")["metrics"]["bandit"]["rows"][0]
    return [fixed(row["fitted_kl"] - row["exact_kl"], 2)]


def _dpo_ipo():
    """Off-policy IPO's gap and rejected drop (in nats down, so unsigned), then KL,
    accuracy, and on-policy IPO against DPO."""
    dpo = record("part3/try-this.json")["metrics"]["dpo"]
    off, on = dpo["off_policy_ipo"][-1], dpo["on_policy_ipo"][-1]
    plain = record("part3/dpo.json")["metrics"]["digits"]
    return [
        fixed(off["gap"], 1),
        fixed(-off["rejected_ratio"], 1),
        f"{-plain['off_policy'][-1]['rejected_ratio']:.0f}",
        fixed(off["kl"], 3),
        fixed(off["accuracy"], 3),
        fixed(on["accuracy"], 3),
        fixed(plain["on_policy"][-1]["accuracy"], 3),
    ]


def _dpo_smollm2():
    """The pairs the chosen reply wins after 16 updates; the mean drop of the rejected and
    of the chosen replies (nats, unsigned); exact match before and after."""
    run = record("part3/dpo-smollm2-metrics.json")
    final = run["final"]
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    return [
        percent(final["accuracy"], 0),
        fixed(-mean(final["rejected_gain"]), 2),
        fixed(-mean(final["chosen_gain"]), 2),
        fixed(run["before"]["exact"], 2),
        fixed(run["after"]["exact"], 2),
    ]


def _dpo_small_beta():
    """The chapter's cell fits beta = 0.1 live (about a second); its sentence quotes it."""
    from verifiable_grpo.part3.dpo_lab import dpo_bandit

    counts, _ = dpo_bandit.preference_counts(20_000)
    row = dpo_bandit.compare(dpo_bandit.fit_dpo(counts, 0.1), 0.1)
    return [fixed(row["fitted_kl"]), fixed(row["exact_kl"]), fixed(row["max_error"])]


CLAIMS |= {
    "III.4 overshoot": (
        DPO,
        "The fit follows the analytic optimum closely",
        keys(
            "part3/dpo.json",
            "metrics.bandit.rows[0].fitted_kl f3",
            "metrics.bandit.rows[0].exact_kl f3",
        ),
    ),
    "III.4 on and off policy": (
        DPO,
        "**Reading.** On-policy DPO raises sampled accuracy",
        keys(
            DIGITS.split(":")[0],
            f"{DIGITS}.reference.accuracy f3",
            f"{DIGITS}.on_policy[3].accuracy f3",
            f"{DIGITS}.on_policy[3].chosen_ratio s3",
            f"{DIGITS}.off_policy[3].loss f3",
            f"{DIGITS}.off_policy[3].accuracy f3",
            f"{DIGITS}.off_policy[3].chosen_ratio f3",
        ),
    ),
    "III.4 SFT term": (
        DPO,
        "The SFT term rescues the off-policy condition",
        keys(
            "part3/try-this.json",
            "metrics.dpo.off_policy_dpo_sft[3].accuracy f3",
            f"{DIGITS}.off_policy[3].accuracy f3",
            "metrics.dpo.off_policy_dpo_sft[3].chosen_ratio s2",
            f"{DIGITS}.off_policy[3].chosen_ratio f2",
            "metrics.dpo.off_policy_dpo_sft[3].rejected_ratio f1",
        ),
    ),
    "III.4 IPO": (DPO, "IPO stops where its target says.", _dpo_ipo),
    "III.4 SmolLM2 pairs": (DPO, "The loss did its job on the pairs", _dpo_smollm2),
    "III.4 exercise 1": (DPO, "why do the fitted and exact KL agree", _dpo_overshoot_gap),
    "III.4 exercise 1 solution": (
        DPO,
        "The measured maximum probability error falls",
        keys(
            "part3/dpo.json",
            "metrics.bandit.rows[0].max_error f4",
            "metrics.bandit.rows[3].max_error f4",
        ),
    ),
    "III.4 variant beta": (
        DPO,
        "Here a larger beta *helps*.",
        keys(
            "part3/dpo.json",
            "metrics.digits.on_policy_variant.records[1].accuracy f3",
            "metrics.digits.on_policy_variant.records[3].accuracy f3",
            "metrics.digits.on_policy[1].accuracy f3",
            "metrics.digits.on_policy[3].accuracy f3",
            "metrics.digits.on_policy_variant.records[3].kl f3",
            "metrics.digits.on_policy[3].kl f3",
            "metrics.digits.on_policy_variant.records[3].rejected_ratio f1",
            "metrics.digits.on_policy[3].rejected_ratio f1",
        ),
    ),
    "III.4 small beta": (DPO, "The cell below runs the fit: the fitted KL", _dpo_small_beta),
}
