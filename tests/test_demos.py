import math

import pytest

from verifiable_grpo.demos import clip_gradient_table, two_updates_on_one_rollout_set


def test_first_update_is_exactly_on_policy():
    report = two_updates_on_one_rollout_set(updates=2, seed=0)
    first, second = report
    assert first["min_ratio"] == first["max_ratio"] == 1.0
    assert first["outside_fraction"] == first["active_clip_fraction"] == 0.0
    # the parameters moved, so the second update sees ratios other than 1
    assert (second["min_ratio"], second["max_ratio"]) != (1.0, 1.0)


def test_large_steps_push_ratios_out_of_the_interval():
    # A group with mixed rewards (seed 0 gives one) and a large step: clipping acts.
    report = two_updates_on_one_rollout_set(updates=3, learning_rate=5.0, seed=0)
    assert len(set(report[0]["rewards"])) > 1
    assert report[-1]["outside_fraction"] > 0 and report[-1]["active_clip_fraction"] > 0


def test_gradient_table_matches_the_hand_derivation():
    rows = {(r["advantage"], r["ratio"]): r for r in clip_gradient_table()}
    # unclipped branch: d(rho A)/d logp = rho A
    assert rows[(1.0, 1.1)]["d_objective_d_logp"] == pytest.approx(1.1)
    assert rows[(-1.0, 0.9)]["d_objective_d_logp"] == pytest.approx(-0.9)
    # clipped branch selected: constant, zero gradient
    for key in [(1.0, 1.5), (-1.0, 0.5)]:
        assert rows[key]["branch"] == "clipped (constant)" and rows[key]["active_clip"]
        assert rows[key]["d_objective_d_logp"] == 0.0
    # outside the interval but on the side where min() keeps the unclipped term
    assert rows[(1.0, 0.5)]["branch"] == "unclipped"
    assert rows[(1.0, 0.5)]["d_objective_d_logp"] == pytest.approx(0.5)
    assert rows[(-1.0, 1.5)]["objective"] == pytest.approx(-1.5)
    assert math.isclose(rows[(1.0, 1.5)]["objective"], 1.2)


def test_updates_must_be_positive():
    with pytest.raises(ValueError, match="updates"):
        two_updates_on_one_rollout_set(updates=0)


def test_refreshing_old_logprobs_disables_the_clip():
    report = two_updates_on_one_rollout_set(updates=3, learning_rate=5.0, seed=0, refresh_old=True)
    assert all(r["min_ratio"] == r["max_ratio"] == 1.0 for r in report)
    assert all(r["active_clip_fraction"] == 0.0 for r in report)
