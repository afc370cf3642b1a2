"""Part III widgets: the views compute what the chapters say, the builders draw the default
setting's figure at once (the static book shows it) and redraw when a control moves."""

import pytest

from verifiable_grpo.book import lab_widgets as lw
from verifiable_grpo.part3.reward_lab.best_of_n import kl_bound

# three rows of a best-of-n grid; the proxy reward counts the rows so each is recognisable
SELECTION = [
    {
        "n": size,
        "kl_bound": kl_bound(size),
        "linear_proxy": float(row),
        "linear_true": 0.0,
        "mlp_true": 0.0,
        "oracle_true": 0.0,
    }
    for row, size in enumerate((1, 4, 16))
]


def test_best_of_n_view_and_bad_n():
    assert lw.best_of_n_view(SELECTION, 4)["row"]["linear_proxy"] == 1.0
    with pytest.raises(ValueError, match="not in the recorded grid"):
        lw.best_of_n_view(SELECTION, 5)


def test_dpo_beta_view_limits():
    # Large beta: the optimum stays at the reference; small beta: it concentrates on the
    # highest reward (response 7, reward 2.0).
    near = lw.dpo_beta_view(1e4)
    assert max(abs(a - b) for a, b in zip(near["optimum"], near["reference"])) < 1e-3
    sharp = lw.dpo_beta_view(0.01)
    assert sharp["optimum"][7] > 0.999
    with pytest.raises(ValueError, match="beta must be a positive number"):
        lw.dpo_beta_view(0.0)


def test_mixed_group_view_peak():
    view = lw.mixed_group_view((2,), points=3)
    assert view["curves"][2] == [0.0, 0.5, 0.0]


def test_builders_draw_at_once_and_redraw_when_a_control_moves():
    widget = lw.make_mixed_group_widget(0.5, 2)
    p_slider, _, table, image = widget.children
    first = bytes(image.value)
    assert "0.5000" in table.value and first.startswith(b"\x89PNG")
    p_slider.value = 0.9
    assert "0.1800" in table.value and bytes(image.value).startswith(b"\x89PNG")
    assert bytes(image.value) != first
    best = lw.make_best_of_n_widget(SELECTION, 4)
    assert bytes(best.children[2].value).startswith(b"\x89PNG")
    dpo = lw.make_dpo_beta_widget({}, 0.5)
    assert bytes(dpo.children[2].value).startswith(b"\x89PNG")
