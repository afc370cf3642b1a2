"""The advantage scale of chapter II.7's objectives, and the declared scale-matched rerun
(declared, not run by the tests)."""

from __future__ import annotations

import math

import pytest

from verifiable_grpo.part1 import advantage_scale, fixed_prompt_objectives


def test_plain_reinforce_scale_is_the_success_rate():
    # A = r: the mean |A| of a group is its share of successes, whose expectation is p
    assert advantage_scale.scale("reinforce", [0.3, 0.1])["mean_abs"] == pytest.approx(0.2)


def test_grpo_scale_matches_the_formula_by_hand():
    # population std, G = 4, p = 0.5: a group with k successes has mean |A| =
    # 2 m (1 - m) / (sqrt(m (1 - m)) + delta) with m = k / 4, and 0 when k is 0 or 4
    def by_hand(k):
        m = k / 4
        return 0.0 if k in (0, 4) else 2 * m * (1 - m) / (math.sqrt(m * (1 - m)) + 1e-8)

    expected = sum(math.comb(4, k) / 16 * by_hand(k) for k in range(5))
    got = advantage_scale.scale("part1", [0.5], group_size=4)["mean_abs"]
    assert got == pytest.approx(expected, abs=1e-12)


def test_the_declared_rerun_scales_beta_only_for_declared_objectives():
    setting = advantage_scale.scale_matched_setting("reinforce", 0.5)
    base = fixed_prompt_objectives.SETTING
    assert setting.kl_coefficient == pytest.approx(base.kl_coefficient * 0.5)
    assert setting.learning_rate == base.learning_rate and setting.name != base.name
    with pytest.raises(ValueError):
        advantage_scale.scale_matched_setting("cispo", 1.0)
    with pytest.raises(ValueError):
        advantage_scale.scale_matched_setting("reinforce", 0.0)


def test_objectives_that_reuse_grpo_advantages_have_grpo_scale():
    rows = {r["objective"]: r for r in advantage_scale.scales(["cispo", "rloo"], _grpo_run())}
    assert rows["cispo"]["relative"] == pytest.approx(1.0)
    assert rows["rloo"]["relative"] < 1.0  # no division by the group's std


def _grpo_run():
    return {"setting": {"draws": 4}, "prompts": [{"before": 1}, {"before": 2}]}
