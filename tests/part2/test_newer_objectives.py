"""Chapter II.7's computations: each surrogate's weight against the ratio, the baselines of
a two-group batch, the TIS / MIS table, TRL's rows, and the CISPO exercise's checker."""

from __future__ import annotations

import math

import pytest
import torch

from verifiable_grpo.exercises.cispo_loss import check_cispo_loss
from verifiable_grpo.part2 import newer_objectives

pytestmark = pytest.mark.usefixtures("one_thread")


def test_each_surrogate_weighs_a_moved_token_its_own_way():
    ratios = [0.5, 1.0, 1.25, 2.0, 6.0]
    up = newer_objectives.ratio_weights(ratios, 1.0)
    down = newer_objectives.ratio_weights(ratios, -1.0)
    assert up["grpo"] == pytest.approx([0.5, 1.0, 0.0, 0.0, 0.0])  # clip binds above 1.2
    assert down["grpo"] == pytest.approx([0.0, -1.0, -1.25, -2.0, -6.0])  # ... below 0.8
    assert up["cispo"] == pytest.approx([0.5, 1.0, 1.25, 2.0, 5.0])  # capped, never 0
    assert up["gmpo"] == pytest.approx([0.5, 1.0, 1.25, 0.0, 0.0])  # e^0.4 = 1.49
    assert up["reinforce"] == [1.0] * 5 and down["reinforce"] == [-1.0] * 5
    sigma = 1 / (1 + math.exp(-1.0))  # rho = 2, tau = 1
    assert up["sapo"][3] == pytest.approx(4 * sigma * (1 - sigma) * 2.0, rel=1e-12)
    assert up["sapo"][1] == pytest.approx(1.0, rel=1e-12)


def test_the_baselines_of_a_two_group_batch():
    table = newer_objectives.baseline_table([[1, 0, 0, 0], [1, 1, 0, 0]])
    assert table["rloo"][0] == pytest.approx([1.0, -1 / 3, -1 / 3, -1 / 3], rel=1e-12)
    assert table["reinforce_baseline"][1] == [0.5, 0.5, -0.5, -0.5]
    assert table["reinforce"] == [[1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0]]
    # REINFORCE++ keeps the groups' relative sizes, GRPO equalises their spread.
    pp, grpo = table["reinforce_pp"], table["grpo"]
    assert pp[0][0] / pp[1][0] == pytest.approx(0.75 / 0.5, rel=1e-9)
    assert grpo[1][0] == pytest.approx(0.86588, abs=1e-5)


def test_the_correction_table_and_trls_rows():
    table = newer_objectives.behaviour_weight_table([0.1, -0.3, 1.5, 0.2])
    assert table["token_truncate"][2] == 3.0 and table["token_mask"][2] == 0.0
    assert table["sequence_mask"] == [0.0] * 4 and table["sequence_truncate"] == [3.0] * 4
    head, rows = newer_objectives.trl_rows()
    rows = dict(rows)
    assert rows["cispo"] == "loss_type=cispo, epsilon_high=5.0"
    assert rows["gmpo"].startswith("refused: has no gmpo loss_type")
    head, rows = newer_objectives.entry_rows()
    assert [r[0] for r in rows] == list(newer_objectives.NEWER) and head[-1] == "paper"


def test_the_cispo_checker_passes_a_solution_and_names_a_missing_stop_gradient():
    def solution(current, old, advantages, cap):
        weight = torch.exp(current - old).clamp(max=cap).detach()
        return -weight * advantages[:, None] * current

    def no_stop_gradient(current, old, advantages, cap):
        return -torch.exp(current - old).clamp(max=cap) * advantages[:, None] * current

    def ppo(current, old, advantages, cap):
        ratio, a = torch.exp(current - old), advantages[:, None]
        return -torch.minimum(ratio * a, ratio.clamp(0.8, 1.2) * a)

    assert check_cispo_loss(solution, verbose=False).passed
    result = check_cispo_loss(no_stop_gradient, verbose=False)
    assert not result.passed and any("detach" in f for f in result.failures)
    result = check_cispo_loss(ppo, verbose=False)
    assert not result.passed and any("PPO's clipped surrogate" in f for f in result.failures)
