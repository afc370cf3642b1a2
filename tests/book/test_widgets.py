"""The pure functions behind the book's widgets, their figures, and the widget builders."""

import math

import numpy as np
import pytest
import torch
from matplotlib.figure import Figure

from verifiable_grpo.book import widgets
from verifiable_grpo.training.losses import ClipRange, TokenLogProbs, clipped_group_surrogate


# --------------------------------------------------------------------------- advantages
def test_advantage_view_on_hand_cases():
    view = widgets.advantage_view([1, 0, 1, 0], correction=0, epsilon=1e-8)
    a = 0.5 / (0.5 + 1e-8)
    assert view["mean"] == 0.5 and view["std"] == 0.5 and not view["zero_variance"]
    assert view["advantages"] == [a, -a, a, -a]
    sample = widgets.advantage_view([1, 0], correction=1, epsilon=1e-8)
    assert sample["advantages"] == pytest.approx([math.sqrt(0.5), -math.sqrt(0.5)], rel=1e-7)
    constant = widgets.advantage_view([0.3] * 7, correction=0, epsilon=1e-8)
    assert (
        constant["zero_variance"] and constant["advantages"] == [0.0] * 7 and constant["std"] == 0.0
    )


@pytest.mark.parametrize(
    "rewards, correction, message",
    [
        ([], 0, "empty"),
        ([1.0], 1, "at least 2"),
        (["a", 1], 0, "numbers"),
        ([1.0, float("inf")], 0, "finite"),
    ],
)
def test_advantage_view_errors(rewards, correction, message):
    with pytest.raises(ValueError, match=message):
        widgets.advantage_view(rewards, correction=correction)


def test_parse_numbers():
    assert widgets.parse_numbers("1, 0 ,1 0") == [1.0, 0.0, 1.0, 0.0]
    with pytest.raises(ValueError, match="empty"):
        widgets.parse_numbers(" , ")
    with pytest.raises(ValueError, match="numbers"):
        widgets.parse_numbers("1, x")


# --------------------------------------------------------------------------- clipping
@pytest.mark.parametrize("advantage", [1.5, -0.7])
def test_clipping_gradient_is_zero_when_clipped_and_A_otherwise(advantage):
    curves = widgets.clipping_curves(advantage, 0.2, ratios=[0.5, 0.79, 0.81, 1.0, 1.19, 1.21, 1.5])
    clipped = curves["clipped_mask"]
    expected_clipped = (
        [True, True, False, False, False, False, False]
        if advantage < 0
        else [False, False, False, False, False, True, True]
    )
    assert clipped.tolist() == expected_clipped
    assert np.all(curves["gradient"][clipped] == 0)
    assert np.all(curves["gradient"][~clipped] == advantage)
    assert np.allclose(curves["unclipped"], curves["ratios"] * advantage)
    bound = 0.8 if advantage < 0 else 1.2
    assert np.allclose(curves["objective"][clipped], bound * advantage)


def test_clipping_curves_agree_with_the_loss_autograd():
    """d objective / d rho from the widget == -(d loss / d log rho) / rho from losses.py."""
    ratios = np.array([0.6, 0.9, 1.1, 1.25, 1.4])
    for advantage, high in [(1.0, None), (-2.0, None), (1.0, 0.28)]:
        curves = widgets.clipping_curves(advantage, 0.2, high, ratios=ratios)
        current = torch.tensor(np.log(ratios)[None], dtype=torch.float64, requires_grad=True)
        loss, _ = clipped_group_surrogate(
            TokenLogProbs(
                current, torch.zeros_like(current), torch.ones_like(current, dtype=torch.bool)
            ),
            torch.tensor([advantage], dtype=torch.float64),
            ClipRange(0.2, high),
        )
        loss.sum().backward()
        objective_grad = -current.grad[0].numpy() * len(ratios) / ratios
        assert np.allclose(curves["gradient"], objective_grad, atol=1e-12)
        assert np.isclose(curves["objective"].mean(), -loss.item())


def test_clipping_curves_defaults_and_errors():
    curves = widgets.clipping_curves(1.0)
    assert (
        curves["ratios"].shape == (201,)
        and curves["ratios"][0] == 0.5
        and curves["ratios"][-1] == 1.5
    )
    assert curves["interval"] == (0.8, 1.2)
    assert not widgets.clipping_curves(0.0)["clipped_mask"].any()
    with pytest.raises(ValueError, match="clip_epsilon"):
        widgets.clipping_curves(1.0, 0.0)
    with pytest.raises(ValueError, match="ratios"):
        widgets.clipping_curves(1.0, ratios=[-1.0, 1.0])
    with pytest.raises(ValueError, match="advantage"):
        widgets.clipping_curves(float("nan"))


# --------------------------------------------------------------------------- KL
def test_kl_view_exact_value_and_normalisation():
    view = widgets.kl_view([1, 1], [1, 3], samples=4000, seed=0)  # weights, normalised inside
    exact = 0.5 * math.log(0.5 / 0.25) + 0.5 * math.log(0.5 / 0.75)
    assert view["p"] == [0.5, 0.5] and view["q"] == [0.25, 0.75]
    assert view["exact"] == pytest.approx(exact, rel=1e-12)
    for name in ("k1", "k3"):  # unbiased: within 4 standard errors
        assert abs(view[f"{name}_mean"] - exact) < 4 * view[f"{name}_stderr"]
    assert view["running"]["k1"].shape == (4000,)
    assert view["running"]["k3"][-1] == pytest.approx(view["k3_mean"])


def test_kl_view_is_seeded_and_identical_distributions_give_zero():
    a = widgets.kl_view([0.2, 0.8], [0.5, 0.5], samples=100, seed=3)
    b = widgets.kl_view([0.2, 0.8], [0.5, 0.5], samples=100, seed=3)
    c = widgets.kl_view([0.2, 0.8], [0.5, 0.5], samples=100, seed=4)
    assert a["k1_mean"] == b["k1_mean"] and a["k1_mean"] != c["k1_mean"]
    same = widgets.kl_view([0.1, 0.0, 0.9], [0.1, 0.0, 0.9], samples=50, seed=0)
    assert abs(same["exact"]) < 1e-15 and same["k1_std"] == 0 and same["k3_mean"] == 0


@pytest.mark.parametrize(
    "p, q, samples, message",
    [
        ([0.5, -0.1, 0.6], [0.3, 0.3, 0.4], 10, "negative"),
        ([0.5, 0.5], [0.3, 0.3, 0.4], 10, "entries"),
        ([], [], 10, "empty"),
        ([0.0, 0.0], [0.5, 0.5], 10, "sums to zero"),
        ([0.5, 0.5], [1.0, 0.0], 10, "infinite"),
        ([0.5, 0.5], [0.5, 0.5], 1, "samples"),
    ],
)
def test_kl_view_errors(p, q, samples, message):
    with pytest.raises(ValueError, match=message):
        widgets.kl_view(p, q, samples=samples)


# --------------------------------------------------------------------------- figures
def test_figure_functions_return_two_panel_figures():
    figures = [
        widgets.plot_advantages(widgets.advantage_view([1, 0, 0, 0])),
        widgets.plot_advantages(widgets.advantage_view([1, 1, 1, 1])),
        widgets.plot_clipping(widgets.clipping_curves(-1.0, 0.2, 0.28)),
        widgets.plot_kl(widgets.kl_view([0.5, 0.3, 0.2], [0.2, 0.3, 0.5], samples=200)),
    ]
    for figure in figures:
        assert isinstance(figure, Figure) and len(figure.axes) == 2
    assert widgets.figure_png(figures[2]).startswith(b"\x89PNG")


# --------------------------------------------------------------------------- builders
def _html(box):
    return next(child for child in box.children if type(child).__name__ == "HTML")


def _image(box):
    return next(child for child in box.children if type(child).__name__ == "Image")


def test_advantage_widget_reacts_to_its_controls():
    box = widgets.make_advantage_widget()
    text, correction = box.children[0], box.children[1]
    # The default setting's figure is in the saved state (the static book shows it) ...
    first = bytes(_image(box).value)
    assert "0.5" in _html(box).value and first.startswith(b"\x89PNG")
    assert "these controls do nothing" in box.children[-1].value
    correction.value = 1
    # ... and a control redraws it.
    second = bytes(_image(box).value)
    assert "0.866" in _html(box).value and second.startswith(b"\x89PNG") and second != first
    text.value = "1, 1, 1"
    assert "True" in _html(box).value
    text.value = "1, banana"  # a typing mistake shows an error instead of raising
    assert "numbers" in _html(box).value


def test_clipping_and_kl_widgets_construct_and_update():
    clipping = widgets.make_clipping_widget()
    assert "[0.80, 1.20]" in _html(clipping).value
    clipping.children[2].value = 0.3
    assert "[0.80, 1.30]" in _html(clipping).value
    kl = widgets.make_kl_widget()
    exact = 0.5 * math.log(0.5 / 0.2) + 0.2 * math.log(0.2 / 0.5)
    assert f"{exact:.6f}" in _html(kl).value
    kl.children[1].value = "1, 0, 0"
    assert "infinite" in _html(kl).value


def test_the_kl_widget_and_the_kl_view_share_one_default():
    # Chapter 4 shows the widget's saved figure as "the default setting": the same draws as
    # kl_view's default, not another number of samples.
    box = widgets.make_kl_widget()
    slider = next(child for child in box.children if getattr(child, "description", "") == "samples")
    view = widgets.kl_view([0.5, 0.3, 0.2], [0.2, 0.3, 0.5])
    assert slider.value == view["samples"] == widgets.KL_DEFAULT_SAMPLES
    assert f"{view['k1_mean']:.6f}" in _html(box).value
