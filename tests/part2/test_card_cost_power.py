"""The step-power simulation: the exact sign-flip test keeps its level, gains power with the
effect, and loses it as the effective step shrinks; its inputs are read from recorded numbers."""

from __future__ import annotations

import math

import pytest

from verifiable_grpo.part2 import step_power as sp


def test_the_test_keeps_its_level_and_detects_a_large_effect():
    assert sp.sign_flip_power(0.0, 0.01, trials=2000) < 0.07  # exact level <= 0.05
    assert sp.sign_flip_power(0.03, 0.01, trials=2000) > 0.9


def test_power_falls_to_the_level_as_the_step_shrinks():
    rows = sp.power_table(
        [0.04], [1.0, 0.1, 0.02], sp.SeedSpread(train=0.036, floor=0.009), trials=2000
    )
    power = [row["power"] for row in rows]
    assert power[0] > 0.6 and power[2] < 0.1 and power[0] > power[1] > power[2]
    assert rows[1]["shrunken_effect"] == pytest.approx(0.004)
    assert rows[2]["spread"] == pytest.approx(math.hypot(0.02 * 0.036, 0.009))


def test_the_inputs_come_from_the_card_and_the_recorded_study():
    # a normal-theory 95 % interval of a mean of 8: width = 2 · 1.96 · sd / sqrt(8)
    assert sp.spread_from_interval(0.6, 0.6 + 2 * sp.Z_95 * 0.01 / math.sqrt(8)) == pytest.approx(
        0.01
    )
    assert 0.005 < sp.card_floor() < 0.015
    spread = sp.recorded_training_spread()
    assert "on_policy/gspo" not in spread["per_comparison"]  # a replicate of grpo: all zero
    assert len(spread["per_comparison"]) == 7 and 0.01 < spread["median"] < 0.05


@pytest.mark.parametrize(
    "call, named",
    [
        (lambda: sp.sign_flip_power(0.01, 0.0), "spread must be positive"),
        (lambda: sp.sign_flip_power(0.01, 0.01, seeds=40), "seeds must be an integer from 2 to 16"),
        (
            lambda: sp.power_table([0.01], [2.0], sp.SeedSpread(0.03, 0.01)),
            "step factor must be in (0, 1]",
        ),
        (lambda: sp.spread_from_interval(0.7, 0.6), "must not be below low"),
    ],
)
def test_bad_input_is_refused_by_name(call, named):
    with pytest.raises(
        ValueError,
        match=named.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[").replace("]", r"\]"),
    ):
        call()


def test_a_smaller_rate_moves_the_tiny_policys_adapters_less():
    from verifiable_grpo.part2 import step_demo

    rows = step_demo.lora_movement(rates=(3e-4, 6e-6), steps=3, problems=2)
    large, small = (row["mean_abs_change"] for row in rows)
    assert small > 0 and large > 20 * small  # 50x smaller rate: far less movement
    assert rows[0]["objective_change"] > 0  # the step goes up the objective
