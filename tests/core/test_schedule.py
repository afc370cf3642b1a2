"""The shared learning-rate schedule: 10 % linear warm-up, linear decay to 10 % of the peak."""

from __future__ import annotations

import pytest
import torch

from verifiable_grpo.core.schedule import learning_rate, make_scheduler, warmup_steps


def test_warmup_rounds_half_up():
    assert [warmup_steps(n, 0.1) for n in (48, 218, 200, 40, 4, 5, 1)] == [5, 22, 20, 4, 1, 1, 1]
    assert warmup_steps(45, 0.1) == 5  # 4.5 rounds up, not to the even 4


def test_hand_values_for_48_updates():
    rates = [learning_rate(s, 48, 1.0, 0.1, 0.1) for s in range(48)]
    assert rates[:6] == pytest.approx([0.2, 0.4, 0.6, 0.8, 1.0, 1.0], abs=1e-15)
    assert rates[26] == pytest.approx(0.55, abs=1e-15)  # halfway through the 42-step decay
    assert rates[47] == pytest.approx(0.1, abs=1e-15)  # last update at 10 % of the peak
    assert all(a >= b for a, b in zip(rates[4:], rates[5:]))
    assert max(rates) == 1.0


def test_seed_peaks_scale_linearly():
    assert learning_rate(0, 218, 2e-5, 0.1, 0.1) == pytest.approx(2e-5 / 22, rel=1e-14)
    assert learning_rate(217, 218, 2e-5, 0.1, 0.1) == pytest.approx(2e-6, rel=1e-14)
    assert learning_rate(199, 200, 1e-6, 0.1, 0.1) == pytest.approx(1e-7, rel=1e-14)


def test_degenerate_lengths():
    assert [learning_rate(s, 2, 1.0, 0.1, 0.1) for s in range(2)] == [1.0, 0.1]
    assert learning_rate(0, 1, 1.0, 0.1, 0.1) == 1.0  # a single update: warm-up only


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="outside 0..47"):
        learning_rate(48, 48, 1.0, 0.1, 0.1)
    with pytest.raises(ValueError, match="total_steps"):
        learning_rate(0, 0, 1.0, 0.1, 0.1)
    with pytest.raises(ValueError, match="fraction"):
        learning_rate(0, 10, 1.0, 1.5, 0.1)


def test_torch_scheduler_follows_the_formula_and_keeps_its_settings():
    parameter = torch.nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.AdamW([parameter], lr=3e-4)
    scheduler = make_scheduler(optimizer, 48, 0.1, 0.1)
    used = []
    for _ in range(48):
        used.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    expected = [learning_rate(s, 48, 3e-4, 0.1, 0.1) for s in range(48)]
    assert used == pytest.approx(expected, rel=1e-12)
    state = scheduler.state_dict()
    assert state["lr_lambdas"][0] == {
        "total_steps": 48,
        "warmup_fraction": 0.1,
        "final_fraction": 0.1,
    }
    assert state["last_epoch"] == 48
