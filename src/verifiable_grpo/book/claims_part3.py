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
    "III.1 chat rows": (
        SFT,
        "**The chat rows.**",
        keys("published:sft", "chat_rows.cosine_before f5"),
    ),
    "III.1 diagnosis": (
        SFT,
        "**What the diagnosis shows on the instruct model.**",
        keys("part3/sft-metrics.json", "chat_rows.before.cosine f3"),
    ),
    "III.1 starting point": (
        SFT,
        "**Why the numbers differ from the published run's.**",
        keys("published:sft", "before.loss f2", "before.stop p0"),
    ),
    "III.1 FULL's held-out set": (
        SFT,
        "The published lab also reports separate single-seed ablations.",
        keys(
            "part3/sft-full-metrics.json", "before.loss f4", "part3/sft-metrics.json:before.loss f4"
        ),
    ),
    "III.1 rows kept": (
        SFT,
        "On the base model, keeping the rows was",
        keys(
            "published:sft",
            "ablations.no chat-row init[0] p0",
            "ablations.no chat-row init[1] p0",
            "part3/sft-no-row-init-metrics.json:after.exact f2",
            "part3/sft-metrics.json:after.exact f2",
            "part3/sft-no-row-init-metrics.json:after.exact f2",
            "part3/sft-metrics.json:after.exact f2",
            "part3/sft-no-row-init-metrics.json:chat_rows.after.cosine f3",
        ),
    ),
    "III.1 no masking": (
        SFT,
        "Without masking, the published run lost",
        keys(
            "published:sft",
            "ablations.no masking[0] f2",
            "ablations.default QUICK[0] f2",
            "part3/sft-no-mask-metrics.json:after.exact f2",
            "part3/sft-metrics.json:after.exact f2",
            "part3/sft-no-mask-metrics.json:after.loss f4",
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
            "published:sft:ablations.FULL (50 updates)[0] f2",
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
        "On the published run's base model this setting barely stopped",
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


# Chapter III.5, expert iteration vs GRPO: the lab's runs and its recorded "try this" runs.
EXPERT = "notebooks/part3/05_expert_iteration_vs_grpo.py"
LAB5 = "part3/expert-iteration.json"


def _try_grpo() -> dict:
    return record("part3/try-this.json")["metrics"]["grpo"]


def _last(run: dict) -> dict:
    return run["records"][-1]


def _lab5_seeds():
    seeds = _try_grpo()["seeds"]
    exact = [_last(r)["accuracy"] for r in seeds["exact"]]
    return [fixed(max(exact) - min(exact))]


def _lab5_group_sizes():
    runs = {r["settings"]["group_size"]: _last(r) for r in _try_grpo()["group_size"]}
    runs[8] = _last(record(LAB5)["metrics"]["grpo"][0])
    return [fixed(runs[g]["accuracy"]) for g in (4, 8, 16)] + [
        percent(runs[4]["zero_variance"], 0),
        percent(runs[16]["zero_variance"], 0),
    ]


def _lab5_gamed_seeds():
    """Over three seeds: the substring checker's pass rate, exact accuracy, their gap,
    reply length; then the exact checker's length and accuracy range."""
    seeds = _try_grpo()["seeds"]
    gamed = [_last(r) for r in seeds["substring"]]
    exact = [_last(r) for r in seeds["exact"]]
    accepted = [r["verifier_reward"] for r in gamed]
    right = [r["accuracy"] for r in gamed]
    gaps = [a - r for a, r in zip(accepted, right)]
    lengths = [r["length"] for r in gamed]
    exact_right = [r["accuracy"] for r in exact]
    return [
        percent(min(accepted), 0),
        percent(min(right), 0),
        percent(max(right), 0),
        fixed(min(gaps), 2),
        fixed(max(gaps), 2),
        fixed(min(lengths), 2),
        fixed(max(lengths), 2),
        fixed(min(r["length"] for r in exact), 2),
        fixed(min(exact_right)),
        fixed(max(exact_right)),
    ]


CLAIMS |= {
    "III.5 reading": (
        EXPERT,
        "**Reading.** At $\\beta = 0.04$, exact accuracy climbs",
        keys(
            LAB5,
            "metrics.reference.accuracy f3",
            "metrics.grpo[0].records[6].accuracy f3",
            "metrics.grpo[0].records[6].kl f3",
            "metrics.grpo[1].records[6].accuracy f3",
            "metrics.grpo[1].records[6].kl f3",
            "metrics.grpo[0].records[5].zero_variance p0",
        ),
    ),
    "III.5 gamed checker": (
        EXPERT,
        "The substring run looks best by its own measure",
        keys(
            LAB5,
            "metrics.grpo[2].records[6].verifier_reward p1",
            "metrics.grpo[2].records[6].accuracy p1",
            "metrics.reference.length f2",
            "metrics.grpo[2].records[6].length f2",
        ),
    ),
    "III.5 another CPU": (
        EXPERT,
        "one Intel machine ended the gamed-verifier run",
        keys(LAB5, "metrics.grpo[2].records[6].accuracy p1"),
    ),
    "III.5 expert iteration": (
        EXPERT,
        "Expert iteration (0.994, KL 0.734)",
        keys(LAB5, "metrics.expert_iteration[2].accuracy f3", "metrics.expert_iteration[2].kl f3"),
    ),
    "III.5 Dr. GRPO": (
        EXPERT,
        "The two end close together",
        keys(
            "part3/try-this.json",
            "metrics.grpo.dr_grpo.records[6].accuracy f3",
            f"{LAB5}:metrics.grpo[0].records[6].accuracy f3",
            "metrics.grpo.dr_grpo.records[6].kl f3",
            f"{LAB5}:metrics.grpo[0].records[6].kl f3",
            "metrics.grpo.dr_grpo.records[6].accuracy f3",
            f"{LAB5}:metrics.grpo[0].records[6].accuracy f3",
        ),
    ),
    "III.5 seeds differ": (EXPERT, "the seeds below differ by up to", _lab5_seeds),
    "III.5 refill": (
        EXPERT,
        "Per update, refilling helps",
        keys(
            "part3/try-this.json",
            "metrics.grpo.refill.records[6].accuracy f3",
            f"{LAB5}:metrics.grpo[0].records[6].accuracy f3",
            f"{LAB5}:metrics.grpo[0].records[4].accuracy f3",
            "metrics.grpo.refill.records[2].accuracy f3",
        ),
    ),
    "III.5 group sizes": (EXPERT, "Final accuracy is 0.967", _lab5_group_sizes),
    "III.5 gamed seeds": (EXPERT, "At every seed, the substring checker", _lab5_gamed_seeds),
    "III.5 exercise 2": (
        EXPERT,
        "It ends at accuracy 0.966 and KL 0.639",
        keys(
            LAB5,
            "metrics.variants[0].records[6].accuracy f3",
            "metrics.variants[0].records[6].kl f3",
            "metrics.grpo[0].records[6].accuracy f3",
            "metrics.grpo[0].records[6].kl f3",
            "metrics.variants[1].records[6].accuracy f3",
            "metrics.variants[1].records[6].kl f3",
            "metrics.grpo[1].records[6].kl f3",
        ),
    ),
    "III.5 exercise 3": (
        EXPERT,
        "**3. (by hand)** At iteration 125",
        keys(
            LAB5,
            "metrics.grpo[0].records[5].zero_variance f3",
            "metrics.grpo[0].records[5].accuracy f3",
            "metrics.grpo[0].records[5].accuracy f3",
        ),
    ),
    "III.5 exercise 3 solution": (
        EXPERT,
        "The measured 0.81 is higher",
        keys(
            LAB5,
            "metrics.grpo[0].records[5].zero_variance f2",
            "metrics.grpo[0].records[5].zero_variance f3",
        ),
    ),
}


# Chapter III.6, the behaviour suite: greedy results, Wilson intervals, sampled rerun.
SUITE = "notebooks/part3/06_behaviour_suite.py"


def _suite(name: str, category: str, model: str) -> dict:
    rows = record(f"part3/{name}-metrics.json")["categories"]
    return next(r for r in rows if r["category"] == category and r["model"] == model)


def _suite_refusals():
    before, after = _suite("suite", "refuse", "instruct"), _suite("suite", "refuse", "instruct+sft")
    return [fixed(v) for v in (*before["wilson"], *after["wilson"])]


def _suite_sampled():
    greedy = [_suite("suite", "overall", m)["pass"] for m in ("instruct", "instruct+sft")]
    sampled = [_suite("suite-sampled", "overall", m)["pass"] for m in ("instruct", "instruct+sft")]
    benign = [_suite("suite-sampled", "benign", m)["pass"] for m in ("instruct", "instruct+sft")]
    fmt = [_suite("suite-sampled", "format", m)["pass"] for m in ("instruct+sft", "instruct")]
    return [
        fixed(sampled[0]),
        fixed(greedy[0]),
        fixed(sampled[1]),
        fixed(greedy[1]),
        *dict.fromkeys(fixed(b) for b in benign),  # "1.000 for both models": once if equal
        *(fixed(f, 2) for f in fmt),
    ]


def _suite_clustered():
    out = []
    for model in ("instruct", "instruct+sft"):
        row = _suite("suite-sampled", "overall", model)
        out += [
            fixed(row["clustered"][1] - row["clustered"][0]),
            fixed(row["unclustered"][1] - row["unclustered"][0]),
        ]
    return out


def _wilson_zero_of_five():
    upper = _suite("suite", "refuse", "instruct+sft")["wilson"][1]
    return [percent(upper, 0)]


CLAIMS |= {
    "III.6 zero of five": (
        SUITE,
        "compatible with a true rate of up to about",
        _wilson_zero_of_five,
    ),
    "III.6 recorded run": (
        SUITE,
        "**What the recorded run shows.**",
        keys(
            "part3/suite-metrics.json",
            "paired.difference s3",
            "paired.low s3",
            "paired.high s3",
            "paired.mcnemar_p f3",
        ),
    ),
    "III.6 refusals": (SUITE, "Neither model abstains on any of the five", _suite_refusals),
    "III.6 families": (
        SUITE,
        "Five items per family make wide intervals",
        lambda: [fixed(_suite("suite", "refuse", "instruct+sft")["wilson"][1], 2)],
    ),
    "III.6 sampled": (SUITE, "Overall, sampling changes little", _suite_sampled),
    "III.6 clustered": (SUITE, "The overall clustered interval is about twice", _suite_clustered),
}


# Chapter III.7, the simulated judge; III.12, model merging; III.13, troubleshooting.
JUDGE = "notebooks/part3/07_simulated_judge.py"
MERGING = "notebooks/part3/12_model_merging.py"
TROUBLE = "notebooks/part3/13_troubleshooting.py"


def _judge_reading():
    m = record("part3/judge.json")["metrics"]
    return [
        fixed(m["true_win"]),
        fixed(m["first"]),
        fixed(m["second"]),
        fixed(m["swapped"]),
        fixed(100 * (m["swapped"] - m["true_win"]), 1),
        fixed(m["length_controlled"], 4),
    ]


def _merging_halves():
    rows = record("part3/merging.json")["metrics"]["rows"]
    a, b = rows["A: tuned on low (a = 0-4)"], rows["B: tuned on high (a = 5-9)"]
    own = {fixed(a["low (a = 0-4)"], 2), fixed(b["high (a = 5-9)"], 2)}
    return [*own, fixed(a["high (a = 5-9)"], 2), fixed(b["low (a = 0-4)"], 2)]


def _ties():
    ties = record("part3/merging.json")["metrics"]["rows"]["TIES, density 0.2"]
    low, high = ties["low (a = 0-4)"], ties["high (a = 5-9)"]
    return [fixed(low, 1), fixed(low), fixed(high)]


def _soup_weights():
    rows = record("part3/merging.json")["metrics"]["soup_weights"]
    best = max(rows, key=lambda r: r["all 100"])
    second = sorted(rows, key=lambda r: r["all 100"])[-2]
    return [
        f"{best['weight_on_a']:.1f}",
        fixed(best["all 100"]),
        fixed(second["all 100"]),
        f"{second['weight_on_a']:.1f}",
    ]


def _trouble_gamed():
    from verifiable_grpo.part3.expert_iteration_lab.group_relative import (
        mixed_group_probability,
    )

    end = record(LAB5)["metrics"]["grpo"][2]["records"][-1]
    return [
        fixed(1 - mixed_group_probability(end["sampled_reward"], 8), 2),
        fixed(end["zero_variance"], 2),
    ]


CLAIMS |= {
    "III.7 reading": (JUDGE, "**Reading.** A is truly better in", _judge_reading),
    "III.7 exact optimum": (
        JUDGE,
        "Our Newton iteration runs to the exact",
        keys("part3/judge.json", "metrics.length_controlled f6"),
    ),
    "III.7 zero of five": (
        JUDGE,
        "zero successes in five is weak evidence",
        lambda: [fixed(_suite("suite", "refuse", "instruct+sft")["wilson"][1])],
    ),
    "III.7 swap": (
        JUDGE,
        "still far above the true",
        keys("part3/judge.json", "metrics.true_win f3"),
    ),
    "III.7 exercise 3": (
        JUDGE,
        "Why does the Wilson interval for 10/10 end exactly at 1",
        lambda: [fixed(_suite("suite", "benign", "instruct")["wilson"][0])],
    ),
    "III.12 base": (
        MERGING,
        "it gives the exact answer a probability",
        keys("part3/merging.json", "metrics.rows.reference.all 100 f2"),
    ),
    "III.12 fine-tunes": (MERGING, "Each fine-tune masters its own half", _merging_halves),
    "III.12 TIES": (MERGING, "scores about 0.8 on both halves", _ties),
    "III.12 soup weights": (MERGING, "The score on all 100 prompts peaks at", _soup_weights),
    "III.13 headline numbers": (
        TROUBLE,
        "Each line is a failure that a single headline number hid.",
        keys(
            "part3/dpo.json",
            "metrics.digits.off_policy[3].accuracy f3",
            "metrics.digits.on_policy[3].accuracy f3",
            f"{LAB5}:metrics.grpo[2].records[6].verifier_reward p0",
            f"{LAB5}:metrics.grpo[2].records[6].accuracy p0",
            "part3/sft-metrics.json:before.stop p0",
        ),
    ),
    "III.13 exercise 2": (TROUBLE, "The cell below does it: 0.75 predicted", _trouble_gamed),
    "III.13 exact accuracy": (
        TROUBLE,
        "only the exact accuracy (0.778)",
        keys(LAB5, "metrics.grpo[2].records[6].accuracy f3"),
    ),
}


# Chapter III.14, packing; III.15, the quiz's recorded answer.
TOOLS = "notebooks/part3/14_sft_data_and_tools.py"
QUIZ3 = "notebooks/part3/15_quiz_and_summary.py"
PACKING = "part3/sft-packing.json"

CLAIMS |= {
    "III.14 block mask": (
        TOOLS,
        "the packed loss is the padded loss to four decimals",
        keys(PACKING, "metrics.packed.loss f4"),
    ),
    "III.14 naive packing": (
        TOOLS,
        "Naive packing changes the loss",
        keys(PACKING, "metrics.naive.loss f3", "metrics.padded.loss f3"),
    ),
    "III.15 off-policy DPO": (
        QUIZ3,
        "Random strings are easy to rank below anything",
        keys("part3/dpo.json", "metrics.digits.off_policy[3].accuracy f3"),
    ),
}
