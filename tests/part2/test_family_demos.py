"""The chapters' computations: per-token weights per arm (the notes' T1 table), the
placebo arms on and off policy, dynamic sampling's cost on a fake Bernoulli source, and
the E1 card's per-seed rows."""

from __future__ import annotations

import pytest

from verifiable_grpo.part2 import demos


def test_token_weights_reproduce_the_reference_table():
    weights = demos.token_weights([1, 0, 1, 0], [3, 5, 2, 7], max_length=8)
    assert weights["grpo"] == pytest.approx([0.072156, -0.043294, 0.108234, -0.030924], abs=1e-6)
    assert weights["gspo"] == weights["dapo"] == weights["aero"] == weights["grpo"]
    assert weights["drgrpo"] == pytest.approx([1 / 24, -1 / 40, 1 / 16, -1 / 56], rel=1e-12)
    assert weights["dr_grpo"] == pytest.approx([1 / 64, -1 / 64, 1 / 64, -1 / 64], rel=1e-12)
    assert weights["bnpo"] == weights["dapo_token"]
    with pytest.raises(ValueError, match="one length per reward"):
        demos.token_weights([1, 0], [3])
    with pytest.raises(ValueError, match="at least one token"):
        demos.token_weights([1, 0], [3, 0])


def test_placebos_are_exact_on_policy_only():
    on = demos.placebo_gradients(2, shift=0.0)
    off = demos.placebo_gradients(2, shift=0.3)
    assert on["dapo"] == 0.0 and on["gspo"] < 1e-12
    assert off["gspo"] > 1e-3 and off["dapo"] > 1e-3


def test_dynamic_sampling_cost_counts_discards_and_failures():
    easy = demos.dynamic_sampling_cost([0.5], steps=20)
    assert easy["plain_rollouts_per_step"] == 16 and easy["failed_steps"] == 0
    assert easy["rollouts_per_step"] == 16 + easy["discarded_per_step"]
    assert easy["rollouts_per_step"] % 16 == 0 or easy["rollouts_per_step"] > 16
    never = demos.dynamic_sampling_cost([0.0], steps=3)
    assert never["failed_steps"] == 3


def test_the_e1_rows_hold_every_arm_and_seed():
    rows = demos.e1_runs()
    assert len(rows) == 40 and {r["regime"] for r in rows} == {"on_policy"}
    seed_107 = [r for r in rows if r["arm"] == "drgrpo" and r["seed"] == 107]
    assert seed_107[0]["heldout_greedy_all"] == 0.628  # the card's own run
