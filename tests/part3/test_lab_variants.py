"""The recorded Try-this runs of Labs 1 and 2: each is its lab's default command with only
the option its name says changed (same data, seed, steps and learning rate: the same
budget), and its counts are the ones the architecture gives."""

import pytest

from verifiable_grpo.part3 import lab_variants as lv
from verifiable_grpo.part3.lora_lab import lora as lora_lab
from verifiable_grpo.part3.sft_lab import masked_sft
from verifiable_grpo.part3.smollm2 import records
from verifiable_grpo.training.lora import BLOCK_PROJECTIONS


def _only_changed(settings: dict, defaults: dict) -> dict:
    assert set(settings) >= set(defaults)
    return {k: v for k, v in settings.items() if defaults.get(k, object()) != v}


@pytest.mark.parametrize("rank, alpha", sorted(lv.LORA_RANKS))
def test_a_rank_variant_changes_rank_and_alpha_only(rank, alpha):
    record = records.load_recorded(lv.LORA_RANKS[rank, alpha])
    changed = _only_changed(record["settings"], lora_lab.DEFAULTS)
    assert changed == {
        k: v for k, v in {"rank": rank, "alpha": float(alpha)}.items() if lora_lab.DEFAULTS[k] != v
    }
    assert record["trainable"] == lora_lab.structure(rank=rank)["trainable"]
    assert len(record["history"]) == lora_lab.DEFAULTS["steps"]
    rows = [r for r in lv.rank_rows() if (r["rank"], r["alpha"]) == (rank, alpha)]
    assert len(rows) == (2 if (rank, alpha) == (8, 16) else 1)  # the default is in both series
    assert rows[0]["scale"] == alpha / rank and rows[0]["exact"] == record["adapted"]["exact"]


def test_the_attention_only_variant():
    record = records.load_recorded("lora-qkvo")
    assert _only_changed(record["settings"], lora_lab.DEFAULTS) == {"targets": list(lv.ATTENTION)}
    expected = lora_lab.structure(rank=8, targets=lv.ATTENTION)
    assert (record["wrapped"], record["trainable"]) == (expected["wrapped"], expected["trainable"])
    assert record["wrapped"] == 30 * 4 and record["trainable"] == 921_600  # the chapter's count
    rows = lv.target_rows()
    assert rows["q, k, v, o only"]["trainable"] < rows["all seven projections"]["trainable"]


def test_the_twenty_update_variant():
    record = records.load_recorded("sft-no-row-init-20")
    assert _only_changed(record["settings"], masked_sft.DEFAULTS) == {
        "init_rows": False,
        "steps": 20,
    }
    assert record["steps"] == 20 and len(record["history"]) == 20 and record["warmup"] == 1
    fifteen = records.load_recorded("sft-no-row-init")
    assert record["chat_rows"] == fifteen["chat_rows"]  # rows kept as loaded in both
    assert set(lv.sft_rows()) == {15, 20}


def test_the_variants_are_named_consistently():
    assert lv.LORA_RANKS[8, 16] == lv.LORA_TARGETS["all seven projections"][0] == "lora"
    assert set(lv.ATTENTION) < set(BLOCK_PROJECTIONS)
    assert {key for keys in lv.RANK_SERIES.values() for key in keys} == set(lv.LORA_RANKS)
    assert all(alpha == 2 * rank for rank, alpha in lv.RANK_SERIES["alpha = 2r"])
    assert lv.missing() == []  # every variant the chapters show is recorded


def test_the_letters_variant_adds_the_sixth_family_only():
    from verifiable_grpo.part3.smollm2 import chat_data

    record = records.load_recorded("sft-letters")
    assert _only_changed(record["settings"], masked_sft.DEFAULTS) == {"letters": True}
    _, held_out = chat_data.split_with_letters(quick=True)
    assert record["held_out"] == held_out  # the generator as it is now
    assert record["train_rows"] == 288 and len(record["history"]) == record["steps"] == 18
    assert list(record["after"]["families"]) == [*chat_data.FAMILIES, "letters"]
    letters = [r for r in held_out if r["family"] == "letters"]
    assert (
        len(letters) == 10
        and record["after"]["families"]["letters"]
        == sum(
            reply == row["reply"]
            for row, reply in zip(held_out, record["after"]["replies"])
            if row["family"] == "letters"
        )
        / 10
    )


def test_the_row_delta_variant_keeps_the_rows_and_adds_1152_trainable_values():
    record = records.load_recorded("lora-row-delta")
    assert _only_changed(record["settings"], lora_lab.DEFAULTS) == {
        "init_rows": False,
        "row_delta": True,
    }
    assert record["trainable"] == lora_lab.structure()["trainable"] + 2 * 576
    as_loaded = records.load_recorded("lora-no-row-init")["chat_rows"]["after"]["cosine"]
    assert record["chat_rows"]["after"]["cosine"] == pytest.approx(as_loaded, abs=1e-6)
    assert (
        len(record["chat_rows"]["delta_norms"]) == 2 and min(record["chat_rows"]["delta_norms"]) > 0
    )
    assert record["merge_max_logit_difference"] < lora_lab.MERGE_TOLERANCE
    assert record["identical_decoded_outputs"] and record["initial_logit_difference"] == 0.0


def test_the_letters_chapter_prose():
    """Chapter III.1: every letters reply a bare number, the two six-letter words right."""
    record = records.load_recorded("sft-letters")
    asked = [
        (row, reply)
        for row, reply in zip(record["held_out"], record["after"]["replies"])
        if row["family"] == "letters"
    ]
    assert all(reply.isdigit() for _, reply in asked)
    right = [row["reply"] for row, reply in asked if reply == row["reply"]]
    assert right == ["6", "6"] and record["after"]["families"]["letters"] == 0.2
    assert [reply for _, reply in asked].count("6") > len(asked) / 2
    five = lambda r: round(10 * sum(v for f, v in r["after"]["families"].items() if f != "letters"))
    assert (five(record), five(records.load_recorded("sft"))) == (34, 35)


def test_the_row_delta_chapter_prose():
    """Chapter III.2: exact 0.74 / 0.76 / 0.78, every run stops, cosine 0.990 -> 0.986."""
    delta, default, kept = (
        records.load_recorded(n) for n in ("lora-row-delta", "lora", "lora-no-row-init")
    )
    assert [r["adapted"]["exact"] for r in (delta, default, kept)] == [0.74, 0.76, 0.78]
    assert all(r["adapted"]["stop"] == 1.0 for r in (delta, default, kept))
    rows = delta["chat_rows"]
    assert (round(rows["after"]["cosine"], 3), round(rows["folded"]["cosine"], 3)) == (0.990, 0.986)
    low, high = sorted(rows["delta_norms"])
    assert high < 1.2 * low  # "by about the same amount"


def test_the_dpo_on_smollm2_record_and_its_prose():
    """Chapter III.4: 64 pairs checked by Lab 1's rule; the numbers its prose quotes."""
    from verifiable_grpo.part3.dpo_lab import dpo_smollm2
    from verifiable_grpo.part3.smollm2 import preference

    record = records.load_recorded("dpo-smollm2")
    assert {k: v for k, v in record["settings"].items() if k != "policy"} == dpo_smollm2.DEFAULTS
    assert len(record["pairs"]) == 64 and len(record["history"]) == 16
    for pair in record["pairs"]:
        assert preference.exact_answer(pair["expected"], pair["chosen"], True)
        assert (
            not preference.exact_answer(pair["expected"], pair["rejected"], True)
            or pair["rejected"] == pair["expected"]
        )  # same text, cut by the token limit
    assert record["before"]["exact"] == records.load_recorded("sft")["after"]["exact"] == 0.7
    assert (record["after"]["exact"], record["after"]["stop"]) == (0.64, 1.0)
    final = record["final"]
    mean = lambda values: sum(values) / len(values)
    assert round(100 * final["accuracy"]) == 80  # 51 of 64
    assert (round(mean(final["rejected_gain"]), 2), round(mean(final["chosen_gain"]), 2)) == (
        -3.28,
        -0.04,
    )
    conversion = [p for p in record["pairs"] if p["family"] == "conversion"]
    too_many = [p for p in conversion if p["rejected"].split()[0] == p["expected"].split()[0] + "0"]
    assert 2 * len(too_many) > len(conversion)  # "most"
    lost_a_zero = [
        row
        for row, before, after in zip(
            record["held_out"], record["before"]["replies"], record["after"]["replies"]
        )
        if before == row["reply"] and after.split()[0] + "0" == row["reply"].split()[0]
    ]
    assert len(lost_a_zero) >= 2 and any(r["reply"] == "24500 mL" for r in lost_a_zero)
