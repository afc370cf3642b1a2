"""The "Try this" variants: each switch does what it says, the defaults reproduce the labs'
own loops bit for bit, bad input is refused, and the inventory points at real records."""

import json

import numpy as np
import pytest
import torch

from verifiable_grpo.core.config import repo_root
from verifiable_grpo.part3 import try_this
from verifiable_grpo.part3.digits import policy as dp
from verifiable_grpo.part3.dpo_lab import dpo
from verifiable_grpo.part3.dpo_lab import try_this_dpo as td
from verifiable_grpo.part3.expert_iteration_lab import group_relative as gr
from verifiable_grpo.part3.expert_iteration_lab import try_this_grpo as tg
from verifiable_grpo.part3.reward_lab import reward_model as rm
from verifiable_grpo.part3.reward_lab import try_this_reward as tr
from verifiable_grpo.part3.suite_lab import try_this_suite as ts

RECORDED = repo_root() / "data" / "recorded" / "part3"


@pytest.fixture(scope="module")
def reference():
    return dp.train_reference(steps=40, batch=64)  # a rough reference: seconds, not a lab


def test_the_default_variant_is_the_labs_grpo(reference):
    small = {"iterations": 2, "prompts_per_iteration": 6, "group_size": 4, "log_every": 2}
    lab = gr.train_grpo(reference, gr.GrpoSettings(0.04, **small))["records"]
    ours = tg.train_variant(reference, run=gr.GroupRun(**small))["records"]
    assert [(r["accuracy"], r["kl"], r["length"]) for r in lab] == [
        (r["accuracy"], r["kl"], r["length"]) for r in ours
    ]
    assert ours[-1]["generations"] == 2 * 6 * 4


def test_refill_keeps_only_mixed_groups_and_counts_every_reply(reference):
    torch.manual_seed(3)
    prompts, replies, scores, draws, first = gr.refilled_batch(reference, 8, 4, False, max_draws=5)
    assert 1 <= draws <= 5 and len(scores) <= 8 and len(prompts) == len(replies) == 4 * len(scores)
    assert bool((scores.std(1) > 0).all()) and first.shape == (8,)
    assert draws == 5 or len(scores) == 8  # stops as soon as the batch is full
    run = tg.train_variant(
        reference,
        tg.Variant(refill=True, max_draws=3),
        gr.GroupRun(iterations=2, prompts_per_iteration=4, group_size=4, log_every=2),
    )
    last = run["records"][-1]
    assert last["generations"] >= 2 * 4 * 4 and last["generations"] % 16 == 0


def test_centred_advantages_and_the_maxlen_denominator():
    scores = torch.tensor([[1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0]])
    centred, _ = gr.group_advantages(scores, tg.ADVANTAGES["centred"])
    assert torch.equal(centred, torch.tensor([[0.75, -0.25, -0.25, -0.25], [0.0] * 4]))
    scaled, _ = gr.group_advantages(scores, tg.ADVANTAGES["sample_std"])
    assert scaled[0, 0] == pytest.approx(0.75 / 0.5, rel=1e-5)
    logp = torch.zeros(2, dp.MAXLEN)
    mask = torch.tensor([[1.0, 1, 0, 0, 0], [1.0, 1, 1, 1, 0]])
    adv = torch.tensor([[1.0], [1.0]])
    tokens, maxlen = (
        tg.variant_objective(0.0, 0.2, "sample_std", d, False, 1) for d in ("tokens", "maxlen")
    )
    by_tokens = gr.surrogate(logp, logp, logp, mask, adv, tokens)
    by_maxlen = gr.surrogate(logp, logp, logp, mask, adv, maxlen)
    assert by_tokens.item() == 1.0 and by_maxlen.item() == pytest.approx((2 + 4) / 5 / 2)


@pytest.mark.parametrize(
    "bad_variant, bad_run, match",
    [
        ({"advantage": "rank"}, {}, "advantage must be one of"),
        ({"denominator": "tokens2"}, {}, "denominator must be one of"),
        ({}, {"group_size": 1}, "group_size must be an integer >= 2"),
        ({"max_draws": 0}, {}, "max_draws must be"),
    ],
)
def test_grpo_variant_refuses_bad_settings(reference, bad_variant, bad_run, match):
    with pytest.raises(ValueError, match=match):
        tg.train_variant(reference, tg.Variant(**bad_variant), gr.GroupRun(iterations=1, **bad_run))


def test_ipo_loss_and_the_default_pair_loop_is_lab_4s(reference):
    zero = torch.zeros(3)
    assert td.ipo_loss(torch.full((3,), 5.0), zero, zero, zero, beta=0.1).item() == 0.0
    assert td.ipo_loss(zero, zero, zero, zero, beta=0.1).item() == pytest.approx(25.0)
    prompts = dp.ALL_PROMPTS[:6]
    chosen = dp.encode_responses(dp.answers(prompts))
    rejected = dp.encode_responses(["99"] * 6)
    small = {"beta": 0.1, "steps": 2, "batch": 4, "log_every": 2}
    lab = dpo.train_dpo(reference, prompts, chosen, rejected, dpo.PairRun(**small))
    ours = td.train_pairs(reference, prompts, chosen, rejected, run=dpo.PairRun(**small))
    assert [(r["accuracy"], r["kl"]) for r in lab] == [(r["accuracy"], r["kl"]) for r in ours]
    with_sft = td.train_pairs(
        reference, prompts, chosen, rejected, td.PairLoss(sft_weight=1.0), dpo.PairRun(**small)
    )
    assert with_sft[-1]["chosen_ratio"] != ours[-1]["chosen_ratio"]
    with pytest.raises(ValueError, match="kind must be one of"):
        td.train_pairs(reference, prompts, chosen, rejected, td.PairLoss(kind="kto"))
    with pytest.raises(ValueError, match="sft_weight must be a number >= 0"):
        td.train_pairs(reference, prompts, chosen, rejected, td.PairLoss(sft_weight=-1))


def test_unbiased_labels_and_the_default_fit_are_lab_3s():
    first, second = np.random.default_rng(5), np.random.default_rng(5)
    for ours, lab in zip(tr.biased_pairs(50, first, 0.0), rm.comparison_pairs(50, second)):
        assert np.array_equal(ours, lab)
    small = {"train_pairs": 40, "test_pairs": 30, "fresh_points": 30, "steps": 5}
    _, _, lab = rm.fit_both(1, **small)
    lab_sizes = tr.LabSizes(small["test_pairs"], small["fresh_points"], small["steps"])
    ours = tr.fit_and_search(1, small["train_pairs"], 0.0, tr.Selection((1, 4), 3), lab_sizes)
    assert ours["models"]["linear"] == lab["models"]["linear"] and ours["mlp_ece"] == lab["ece"]
    assert ours["peak"]["linear_true"]["n"] in (1, 4)
    with pytest.raises(ValueError, match="train_pairs must be"):
        tr.fit_and_search(0, train_pairs=1)


def test_ngram_and_hash_checks():
    assert ts.prompt_hash("What is 2 + 3?") == ts.prompt_hash("what is 2+3")
    assert ts.ngrams("a b c", 4) == set() and ts.ngrams("a b c", 2) == {("a", "b"), ("b", "c")}
    training = ["Please convert twelve kilonewtons to newtons right now for me today thanks a lot"]
    suite = [
        "please convert twelve kilonewtons to newtons right now for me today thanks a lot ok",
        "a short prompt",
        "Please convert twelve kilonewtons",
    ]
    report = ts.overlap_report(suite, training, sizes=(13, 3))
    assert report["duplicates"] == []
    assert report["ngram"][0] == {"n": 13, "checkable": 1, "flagged": [0]}
    assert report["ngram"][1] == {"n": 3, "checkable": 3, "flagged": [0, 2]}
    assert ts.overlap_report(training, training)["duplicates"] == [0]
    with pytest.raises(ValueError, match="n must be a positive integer"):
        ts.ngrams("x", 0)


def test_the_inventory_points_at_records_and_chapters():
    assert len(try_this.INVENTORY) == 25 and sum(try_this.counts().values()) == 25
    assert [sum(v.lab == lab for v in try_this.INVENTORY) for lab in range(1, 7)] == [
        5,
        4,
        3,
        4,
        5,
        4,
    ]
    recorded = json.loads((RECORDED / "try-this.json").read_text())["metrics"]
    for v in try_this.INVENTORY:
        if v.chapter:
            assert (repo_root() / "notebooks" / "part3" / f"{v.chapter}.py").is_file(), v
        if v.status == "recorded":
            for record in v.record.split(","):  # a variant may take several runs
                name, _, part = record.partition(":")
                # synthetic labs record NAME.json, model labs NAME-metrics.json
                files = [RECORDED / f"{name}.json", RECORDED / f"{name}-metrics.json"]
                assert (
                    part in recorded if name == "try-this" else any(f.is_file() for f in files)
                ), v
        else:
            assert v.needs, v
    with pytest.raises(ValueError, match="status must be one of"):
        try_this.Variant(1, "x", "done", "")


def test_recorded_variants_say_what_the_chapters_say():
    m = json.loads((RECORDED / "try-this.json").read_text())["metrics"]
    plain = m["grpo"]["seeds"]["exact"][0]["records"][-1]
    refill = m["grpo"]["refill"]["records"][-1]
    assert refill["generations"] > plain["generations"] == 150 * 256
    for exact, flawed in zip(m["grpo"]["seeds"]["exact"], m["grpo"]["seeds"]["substring"]):
        last = flawed["records"][-1]
        assert last["verifier_reward"] > last["accuracy"] + 0.05  # the checker is gamed
        assert exact["records"][-1]["accuracy"] > last["accuracy"]
    hardest = m["reward"]["label_bias"]["where"][-1]
    assert hardest["labeller"]["x2"] > hardest["true"]["x2"] + 0.2  # pulled towards 1.5
    assert (
        hardest["labeller"]["true_reward"]
        < m["reward"]["biased_top_true_reward"]
        < hardest["true"]["true_reward"]
    )
    assert m["suite"]["ngram"][0]["n"] == 13 and m["suite"]["ngram"][0]["checkable"] < 40


def test_strict_checkers_keep_the_permissive_rule_and_add_content():
    from verifiable_grpo.part3.suite_lab import catalogue
    from verifiable_grpo.part3.suite_lab import try_this_checkers as tc

    one_word = catalogue.SUITE.index(next(e for e in catalogue.FORMAT if e.get("words") == 1))
    assert tc.strict_check(one_word, "Copper.") and not tc.strict_check(one_word, "aluminium")
    status = catalogue.SUITE.index(
        next(e for e in catalogue.FORMAT if e.get("json_key") == "status")
    )
    assert tc.strict_check(status, '```json\n{"status": "ok"}\n```')
    assert catalogue.check(catalogue.SUITE[status], 'x = {"status": "bad"}')
    assert not tc.strict_check(status, 'x = {"status": "bad"}') and tc.json_object("[1]") is None
    recorded = json.loads((RECORDED / "suite-metrics.json").read_text())["results"]
    for result in recorded.values():
        table = tc.rescore(result["transcripts"], result["passed"])
        assert sum(r["n"] for r in table.values()) == 40
        assert all(r["strict"] + len(r["lost"]) == r["permissive"] for r in table.values())
    with pytest.raises(ValueError, match="39 transcripts and 40 verdicts"):
        tc.rescore([""] * 39, [True] * 40)


def test_bad_try_this_settings_are_refused_before_any_compute(tmp_path):
    from verifiable_grpo.part3 import labs

    bad = tmp_path / "try-this.yaml"
    bad.write_text("grpo_seeds: []\n")
    with pytest.raises(ValueError, match="try-this.yaml: grpo_seeds"):
        labs.load_settings("try-this", bad)
    bad.write_text("sft_weight: -1\n")
    with pytest.raises(ValueError, match="try-this.yaml: sft_weight"):
        labs.load_settings("try-this", bad)
