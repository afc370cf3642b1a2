"""The merging lab: a fine-tune learns its half, and the recorded run supports what the
chapter says about it."""

import torch

from verifiable_grpo.part3 import labs
from verifiable_grpo.part3.digits import policy as dp
from verifiable_grpo.part3.merge_lab import digit_merges


def test_fine_tune_raises_the_exact_answer_probability_on_its_half():
    torch.manual_seed(0)
    start = dp.DigitPolicy().eval()
    low = digit_merges.HALVES["low (a = 0-4)"]
    before = digit_merges.answer_probability(start, low)
    tuned = digit_merges.fine_tune(start, low, steps=30, batch=32)
    assert digit_merges.answer_probability(tuned, low) > before + 0.05
    state = {k: v.clone() for k, v in tuned.state_dict().items()}
    again = digit_merges.with_state(start, state)
    assert digit_merges.answer_probability(again, low) == digit_merges.answer_probability(
        tuned, low
    )


def test_recorded_run_supports_the_chapter():
    lab = labs.recorded("merging")["metrics"]
    rows = lab["rows"]
    ref, a, b = (
        rows["reference"],
        rows["A: tuned on low (a = 0-4)"],
        rows["B: tuned on high (a = 5-9)"],
    )
    assert a["low (a = 0-4)"] > 0.95 and b["high (a = 5-9)"] > 0.95
    assert a["high (a = 5-9)"] < ref["high (a = 5-9)"] and b["low (a = 0-4)"] < ref["low (a = 0-4)"]
    soup = rows["soup (average of A and B)"]
    assert soup["all 100"] > max(
        a["all 100"], b["all 100"], rows["task arithmetic, scale 1"]["all 100"]
    )
    assert rows["DARE drop 0.9 + task arithmetic"]["all 100"] < ref["all 100"]
    half = next(r for r in lab["scale_sweep"] if r["scale"] == 0.5)
    assert abs(half["all 100"] - soup["all 100"]) < 1e-6  # a soup is task arithmetic at 1/k
    best = max(lab["soup_weights"], key=lambda r: r["all 100"])
    assert best["weight_on_a"] == 0.5
    assert 0.2 < lab["cosine"] < 0.6
