"""Part III's widgets: best-of-n against a learned reward, DPO's beta against the analytic
optimum, and the probability that a GRPO group carries a task gradient.

Same three layers as widgets.py: pure views (plain dicts), plot_* figures, make_* builders.
A builder draws its table and figure at once, so the saved widget state holds the default
setting's figure (what the static book shows); a control redraws both in a live kernel.
"""

from __future__ import annotations

import numpy as np
import torch
from matplotlib.figure import Figure

from verifiable_grpo.book.widgets import _error, _table, figure_png
from verifiable_grpo.part3.dpo_lab import dpo_bandit
from verifiable_grpo.part3.expert_iteration_lab.group_relative import mixed_group_probability


def _image():
    import ipywidgets as w

    return w.Image(format="png")


def _draw(image, figure) -> None:
    image.value = figure_png(figure)


# (result key, legend): what the kept candidate scores under the linear proxy, then its
# true reward under each way of choosing it.
SELECTION_SERIES = (("linear_proxy", "proxy score: linear selection"),) + tuple(
    (f"{selector}_true", f"true reward: {shown} selection")
    for selector, shown in (("linear", "linear"), ("mlp", "MLP"), ("oracle", "oracle"))
)


# --------------------------------------------------------------------------- best-of-n
def best_of_n_view(selection: list[dict], n: int) -> dict:
    sizes = [row["n"] for row in selection]
    if n not in sizes:
        raise ValueError(f"n={n} is not in the recorded grid {sizes}")
    return dict(selection=selection, n=n, row=selection[sizes.index(n)])


def plot_best_of_n(view: dict) -> Figure:
    figure = Figure(figsize=(7, 4))
    ax = figure.subplots()
    rows = view["selection"]
    kl = [row["kl_bound"] for row in rows]
    for key, label in SELECTION_SERIES:
        ax.plot(kl, [row[key] for row in rows], marker="o", linestyle="-", label=label)
    ax.axvline(view["row"]["kl_bound"], color="gray", linestyle=":", label=f"n = {view['n']}")
    ax.axhline(2.5, color="black", linewidth=0.8, linestyle="--", label="true maximum 2.5")
    ax.set(
        xlabel="KL bound log n - (n-1)/n (nats)",
        ylabel="mean reward of the kept candidate",
        title="Best-of-n: the proxy keeps rising, the true reward turns",
    )
    ax.grid(alpha=0.2)
    ax.title.set_fontsize(11)
    ax.legend(fontsize=9, loc="upper left")
    return figure


def make_best_of_n_widget(selection: list[dict], n: int = 64):
    import ipywidgets as w

    slider = w.SelectionSlider(options=[row["n"] for row in selection], value=n, description="n")
    table, image = w.HTML(), _image()

    def render():
        view = best_of_n_view(selection, slider.value)
        row = view["row"]
        table.value = _table(
            [("KL bound (nats)", f"{row['kl_bound']:.3f}")]
            + [(label, f"{row[key]:.3f}") for key, label in SELECTION_SERIES]
        )
        _draw(image, plot_best_of_n(view))

    slider.observe(lambda change: render(), names="value")
    render()
    return w.VBox([slider, table, image])


# --------------------------------------------------------------------------- DPO beta
def dpo_beta_view(beta: float, fitted: dict[float, list[float]] | None = None) -> dict:
    """The analytic optimum at `beta` beside pi_ref (and the recorded DPO fit, if any)."""
    beta = dpo_bandit.check_beta(beta)
    log_ref = torch.tensor(dpo_bandit.REFERENCE, dtype=torch.float64).log()
    reward = torch.tensor(dpo_bandit.REWARD, dtype=torch.float64)
    optimum = dpo_bandit.kl_regularised_optimum(log_ref, reward, beta)
    return dict(
        beta=beta,
        reference=list(dpo_bandit.REFERENCE),
        optimum=optimum.tolist(),
        kl=dpo_bandit.kl(optimum, log_ref),
        expected_reward=float((optimum * reward).sum()),
        fitted=(fitted or {}).get(beta),
    )


def _draw_dpo_beta(ax, view: dict) -> None:
    x = np.arange(8)
    ax.bar(x - 0.27, view["reference"], 0.27, label="reference pi_ref", color="lightgray")
    ax.bar(x, view["optimum"], 0.27, label="analytic optimum pi*", color="tab:blue")
    if view["fitted"] is not None:
        ax.bar(x + 0.27, view["fitted"], 0.27, label="DPO fit (recorded)", color="tab:orange")
    ax.set_xticks(x, [f"y{i}\nr={r:g}" for i, r in enumerate(dpo_bandit.REWARD)])
    ax.set_ylabel("probability")


def plot_dpo_beta(view: dict) -> Figure:
    figure = Figure(figsize=(7, 3.6))
    ax = figure.subplots()
    _draw_dpo_beta(ax, view)
    ax.set_title(
        f"beta = {view['beta']:g}: KL {view['kl']:.3f} nats, E[r] = {view['expected_reward']:.3f}"
    )
    ax.legend(fontsize="small")
    return figure


def plot_dpo_betas(fitted: dict[float, list[float]]) -> Figure:
    """The slider's figure at each recorded beta, one panel a beta: what the static book
    shows in place of the slider."""
    betas = sorted(fitted)
    rows = (len(betas) + 1) // 2
    figure = Figure(figsize=(7.5, 3.3 * rows), layout="constrained")
    axes = figure.subplots(rows, 2, squeeze=False).ravel()
    for ax, beta in zip(axes, betas):
        view = dpo_beta_view(beta, fitted)
        _draw_dpo_beta(ax, view)
        ax.set_title(f"beta = {beta:g}: KL {view['kl']:.3f}, E[r] = {view['expected_reward']:.3f}",
                     fontsize=10)  # fmt: skip
        ax.tick_params(labelsize=9)
    for ax in axes[len(betas) :]:
        ax.set_visible(False)
    axes[0].legend(fontsize=9)
    return figure


def make_dpo_beta_widget(fitted: dict[float, list[float]], beta: float = 0.5):
    import ipywidgets as w

    slider = w.FloatSlider(value=beta, min=0.05, max=5.0, step=0.05, description="beta")
    table, image = w.HTML(), _image()

    def render():
        try:
            view = dpo_beta_view(slider.value, fitted)
        except ValueError as error:
            table.value = _error(error)
            return
        table.value = _table(
            [
                ("KL(pi* || pi_ref)", f"{view['kl']:.4f}"),
                ("E_pi*[r]", f"{view['expected_reward']:.4f}"),
                ("pi*", ", ".join(f"{p:.3f}" for p in view["optimum"])),
            ]
        )
        _draw(image, plot_dpo_beta(view))

    slider.observe(lambda change: render(), names="value")
    render()
    return w.VBox([slider, table, image])


# --------------------------------------------------------------------------- mixed groups
def mixed_group_view(group_sizes=(2, 4, 8, 16), points: int = 101) -> dict:
    grid = np.linspace(0.0, 1.0, points)
    return dict(
        p=grid.tolist(),
        curves={g: [mixed_group_probability(float(p), g) for p in grid] for g in group_sizes},
    )


def plot_mixed_groups(view: dict, marker: tuple[float, int] | None = None) -> Figure:
    figure = Figure(figsize=(6.5, 3.6))
    ax = figure.subplots()
    for g, curve in view["curves"].items():
        ax.plot(view["p"], curve, label=f"G = {g}")
    if marker is not None:
        p, g = marker
        ax.plot([p], [mixed_group_probability(p, g)], "ko")
    ax.set(
        xlabel="success probability p of one sample",
        ylabel="P(group has a success and a failure)",
        title="1 - p^G - (1-p)^G",
    )
    ax.grid(alpha=0.2)
    ax.legend(fontsize="small")
    return figure


def make_mixed_group_widget(p: float = 0.9, group_size: int = 8):
    import ipywidgets as w

    p_slider = w.FloatSlider(value=p, min=0.0, max=1.0, step=0.01, description="p")
    g_slider = w.IntSlider(value=group_size, min=2, max=32, description="G")
    table, image = w.HTML(), _image()

    def render():
        value = mixed_group_probability(p_slider.value, g_slider.value)
        table.value = _table(
            [
                ("P(mixed group)", f"{value:.4f}"),
                ("P(all fail) = (1-p)^G", f"{(1 - p_slider.value) ** g_slider.value:.4f}"),
                ("P(all succeed) = p^G", f"{p_slider.value**g_slider.value:.4f}"),
            ]
        )
        view = mixed_group_view(sorted({2, 8, g_slider.value}))
        _draw(image, plot_mixed_groups(view, (p_slider.value, g_slider.value)))

    for control in (p_slider, g_slider):
        control.observe(lambda change: render(), names="value")
    render()
    return w.VBox([p_slider, g_slider, table, image])
