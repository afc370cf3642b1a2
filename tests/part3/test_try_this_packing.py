"""Lab 1's packing variant: with the block-diagonal mask and restarted positions a packed
row gives each conversation the loss it gets when padded; naive packing does not."""

import json

import pytest

from verifiable_grpo.core.config import repo_root
from verifiable_grpo.part3.sft_lab import try_this_packing as tp
from verifiable_grpo.part3.smollm2 import chat_data


def test_block_packing_keeps_the_padded_loss_and_naive_packing_does_not(smollm2):
    model, tokenizer = smollm2
    _, held_out = chat_data.split(quick=True)
    result = tp.compare(model, tokenizer, held_out[:2], row_length=128, batch=2)
    padded, packed, naive = (result[k] for k in ("padded", "packed", "naive"))
    assert padded["targets"] == packed["targets"] == naive["targets"] > 0
    assert packed["rows"] == 1 and packed["slots"] == 128
    # same context for every target: equal up to float summation order
    assert packed["loss"] == pytest.approx(padded["loss"], rel=1e-4)
    # the second conversation now reads the first
    assert abs(naive["loss"] - padded["loss"]) > 1e-3
    with pytest.raises(ValueError, match="shorter than the longest conversation"):
        tp.compare(model, tokenizer, held_out[:2], row_length=8)


def test_the_recorded_run_agrees():
    record = json.loads((repo_root() / "data/recorded/part3/sft-packing.json").read_text())[
        "metrics"
    ]
    padded, packed, naive = (record[k] for k in ("padded", "packed", "naive"))
    assert record["conversations"] == 50 and packed["slots"] < padded["slots"]
    assert packed["loss"] == pytest.approx(padded["loss"], rel=1e-4)
    assert naive["loss"] < padded["loss"] - 0.1
