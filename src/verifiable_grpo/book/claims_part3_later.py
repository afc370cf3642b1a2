"""Part III's later chapters (III.5 to III.15): sentences that quote a recorded number,
tied to the records they quote."""

from __future__ import annotations

from verifiable_grpo.book.claims import fixed, keys, percent, record

CLAIMS: dict = {}

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
