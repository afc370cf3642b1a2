"""What the book's widgets show, as pure functions, plus figures and ipywidgets builders.

Three layers, so that every number a widget displays is testable without a browser:
- pure functions (advantage_view, clipping_curves, kl_view) return plain dicts;
- plot_* functions draw one of those dicts on a matplotlib Figure (no pyplot, so no global
  state and no backend to choose: the Figure renders itself with Agg when saved or shown);
- make_*_widget builders wire ipywidgets controls to the pure functions. ipywidgets is
  imported inside them, so importing this module needs no notebook machinery.
"""

from __future__ import annotations

import html
import io
import math

import numpy as np
import torch
from matplotlib.figure import Figure

from verifiable_grpo.training.losses import exact_prefix_kl, group_advantages, sampled_kl_estimators

ESTIMATORS = ("k1", "k2", "k3")
# One default for chapter 4's figure and its widget, so both show the same draws.
KL_DEFAULT_SAMPLES = 2000
FIGURE_DPI = 90  # of every figure a chapter shows (notebook.show) and every widget's image


# --------------------------------------------------------------------------- pure functions
def _finite_numbers(values, what: str) -> list[float]:
    try:
        numbers = [float(v) for v in values]
    except (TypeError, ValueError) as error:
        raise ValueError(f"{what} must be a list of numbers: {error}") from None
    if not numbers:
        raise ValueError(f"{what} is empty")
    if not all(math.isfinite(v) for v in numbers):
        raise ValueError(f"{what} must be finite numbers, got {numbers}")
    return numbers


def parse_numbers(text: str, what: str = "values") -> list[float]:
    """'1, 0, 1, 0' (commas or spaces) -> [1.0, 0.0, 1.0, 0.0], for the text boxes."""
    parts = [p for p in str(text).replace(",", " ").split() if p]
    return _finite_numbers(parts, what)


def advantage_view(rewards, correction: int = 0, epsilon: float = 1e-8) -> dict:
    """One group's rewards -> its mean, std, advantages and whether it has zero variance.

    Computed by losses.group_advantages in float64 (correction 0: population std, seed 000;
    1: sample std, as TRL and Part III's labs use)."""
    rewards = _finite_numbers(rewards, "rewards")
    advantages, mean, std = group_advantages(
        torch.tensor([rewards], dtype=torch.float64), epsilon=epsilon, correction=correction
    )
    return {
        "rewards": rewards,
        "mean": float(mean[0, 0]),
        "std": float(std[0, 0]),
        "advantages": advantages[0].tolist(),
        "zero_variance": all(r == rewards[0] for r in rewards),
        "correction": correction,
        "epsilon": epsilon,
    }


def clipping_curves(
    advantage: float, clip_epsilon: float = 0.2, clip_epsilon_high: float | None = None, ratios=None
) -> dict:
    """The per-token objective min(rho A, clip(rho, 1-eps, 1+eps_high) A) along rho.

    gradient is its derivative with respect to rho: A where the unclipped branch is the
    minimum, 0 where the clipped (constant) branch is strictly smaller; clipped_mask marks
    the latter. At the interval's edges both branches agree and the gradient is A.
    """
    advantage = float(advantage)
    if not math.isfinite(advantage):
        raise ValueError(f"advantage must be finite, got {advantage}")
    if not 0 < clip_epsilon < 1:
        raise ValueError(f"clip_epsilon must lie in (0, 1), got {clip_epsilon!r}")
    high = clip_epsilon if clip_epsilon_high is None else float(clip_epsilon_high)
    if not high > 0:
        raise ValueError(f"clip_epsilon_high must be positive, got {clip_epsilon_high!r}")
    ratios = np.linspace(0.5, 1.5, 201) if ratios is None else np.asarray(ratios, dtype=np.float64)
    if (
        ratios.ndim != 1
        or ratios.size == 0
        or not np.all(np.isfinite(ratios))
        or np.any(ratios <= 0)
    ):
        raise ValueError("ratios must be a non-empty 1-D array of positive finite numbers")
    low_bound, high_bound = 1.0 - clip_epsilon, 1.0 + high
    unclipped = ratios * advantage
    clipped = np.clip(ratios, low_bound, high_bound) * advantage
    clipped_mask = clipped < unclipped  # the min picks the constant branch
    return {
        "ratios": ratios,
        "objective": np.minimum(unclipped, clipped),
        "unclipped": unclipped,
        "gradient": np.where(clipped_mask, 0.0, advantage),
        "clipped_mask": clipped_mask,
        "advantage": advantage,
        "interval": (low_bound, high_bound),
    }


def _distribution(values, what: str) -> np.ndarray:
    numbers = np.array(_finite_numbers(values, what), dtype=np.float64)
    if np.any(numbers < 0):
        raise ValueError(f"{what} has negative probabilities: {numbers.tolist()}")
    if numbers.sum() <= 0:
        raise ValueError(f"{what} sums to zero")
    return numbers / numbers.sum()


def kl_view(p, q, samples: int = KL_DEFAULT_SAMPLES, seed: int = 0) -> dict:
    """Exact KL(p || q) next to the k1, k2, k3 estimates from `samples` tokens drawn from p.

    p and q are normalised (they may be given as weights). Returns the exact value (from
    losses.exact_prefix_kl), each estimator's mean, std and standard error, and its running
    mean over the draws (what the plot shows converging, or not)."""
    p_arr, q_arr = _distribution(p, "p"), _distribution(q, "q")
    if p_arr.shape != q_arr.shape:
        raise ValueError(f"p has {p_arr.size} entries but q has {q_arr.size}")
    if np.any((p_arr > 0) & (q_arr == 0)):
        raise ValueError("q is 0 where p is not: KL(p || q) is infinite")
    if int(samples) != samples or samples < 2:
        raise ValueError(f"samples must be an integer >= 2, got {samples!r}")
    samples = int(samples)
    with np.errstate(divide="ignore"):
        log_p, log_q = torch.from_numpy(np.log(p_arr)), torch.from_numpy(np.log(q_arr))
    exact = float(exact_prefix_kl(log_p, log_q, block_size=4096))
    tokens = np.random.default_rng(seed).choice(p_arr.size, size=samples, p=p_arr)
    index = torch.from_numpy(tokens)
    estimates = sampled_kl_estimators(log_p[index], log_q[index])
    view = {
        "p": p_arr.tolist(),
        "q": q_arr.tolist(),
        "exact": exact,
        "samples": samples,
        "seed": seed,
        "running": {},
    }
    counts = np.arange(1, samples + 1)
    for name in ESTIMATORS:
        values = estimates[name].numpy()
        view[f"{name}_mean"] = float(values.mean())
        view[f"{name}_std"] = float(values.std(ddof=1))
        view[f"{name}_stderr"] = view[f"{name}_std"] / math.sqrt(samples)
        view["running"][name] = np.cumsum(values) / counts
    return view


# --------------------------------------------------------------------------- figures
def plot_advantages(view: dict) -> Figure:
    """Two panels: the rewards with their mean and +-std, and the resulting advantages."""
    figure = Figure(figsize=(8, 3.2), layout="constrained")
    rewards_ax, advantages_ax = figure.subplots(1, 2)
    positions = np.arange(len(view["rewards"]))
    rewards_ax.bar(positions, view["rewards"], color="tab:blue")
    rewards_ax.axhline(view["mean"], color="black", label=f"mean {view['mean']:.3g}")
    rewards_ax.axhspan(
        view["mean"] - view["std"],
        view["mean"] + view["std"],
        color="grey",
        alpha=0.2,
        zorder=0,
        label=f"+-std {view['std']:.3g}",
    )
    rewards_ax.set(title="rewards of one group", xlabel="response", xticks=positions)
    rewards_ax.legend(loc="best", fontsize="small")
    colours = ["tab:green" if a > 0 else "tab:red" if a < 0 else "grey" for a in view["advantages"]]
    advantages_ax.bar(positions, view["advantages"], color=colours)
    advantages_ax.axhline(0, color="black", linewidth=0.8)
    std_name = "sample" if view["correction"] == 1 else "population"
    title = "advantages: all exactly 0" if view["zero_variance"] else f"advantages ({std_name} std)"
    advantages_ax.set(title=title, xlabel="response", xticks=positions)
    return figure


def _shade(ax, ratios, mask, label):
    """Shade each contiguous run of True in mask."""
    edges = np.flatnonzero(np.diff(np.concatenate([[0], mask.astype(int), [0]])))
    for start, stop in zip(edges[::2], edges[1::2]):
        ax.axvspan(ratios[start], ratios[stop - 1], color="orange", alpha=0.25, label=label)
        label = None


def plot_clipping(curves: dict) -> Figure:
    """Two panels along rho: the objective (with the unclipped line) and its gradient;
    regions where clipping removes the gradient are shaded."""
    figure = Figure(figsize=(8, 3.2), layout="constrained")
    objective_ax, gradient_ax = figure.subplots(1, 2, sharex=True)
    ratios, low, high = curves["ratios"], *curves["interval"]
    objective_ax.plot(ratios, curves["unclipped"], "--", color="grey", label="rho A (unclipped)")
    objective_ax.plot(
        ratios, curves["objective"], color="tab:blue", label="min(rho A, clip(rho) A)"
    )
    gradient_ax.plot(ratios, curves["gradient"], color="tab:purple")
    for ax in (objective_ax, gradient_ax):
        _shade(ax, ratios, curves["clipped_mask"], "clipped: no gradient")
        for bound in (low, high):
            ax.axvline(bound, color="black", linewidth=0.6, linestyle=":")
        ax.set_xlabel("ratio rho = pi / pi_old")
    objective_ax.set_title(f"objective, A = {curves['advantage']:.3g}")
    objective_ax.legend(loc="best", fontsize="small")
    gradient_ax.set_title("d objective / d rho")
    return figure


def plot_kl(view: dict) -> Figure:
    """Two panels: the two distributions, and the estimators' running means vs the exact KL."""
    figure = Figure(figsize=(8, 3.2), layout="constrained")
    dist_ax, running_ax = figure.subplots(1, 2)
    positions = np.arange(len(view["p"]))
    dist_ax.bar(positions - 0.2, view["p"], width=0.4, label="p (sampled)")
    dist_ax.bar(positions + 0.2, view["q"], width=0.4, label="q (reference)")
    dist_ax.set(title="distributions", xlabel="token", xticks=positions)
    dist_ax.legend(loc="best", fontsize="small")
    draws = np.arange(1, view["samples"] + 1)
    for name in ESTIMATORS:
        running_ax.plot(
            draws, view["running"][name], label=f"{name} mean {view[f'{name}_mean']:.4f}"
        )
    running_ax.axhline(
        view["exact"], color="black", linestyle="--", label=f"exact {view['exact']:.4f}"
    )
    running_ax.set(title="running means of the estimators", xlabel="draws", xscale="log")
    running_ax.legend(loc="best", fontsize="small")
    return figure


def figure_png(figure: Figure) -> bytes:
    """PNG bytes of a figure (what the builders put in an Image widget)."""
    from verifiable_grpo.book.figure_checks import SMALLEST_TEXT_KEY, smallest_text_points

    buffer = io.BytesIO()
    # The smallest text travels with the image: the browser gate checks it at its shown size.
    metadata = {SMALLEST_TEXT_KEY: f"{smallest_text_points(figure):g}"}
    figure.savefig(buffer, format="png", dpi=FIGURE_DPI, metadata=metadata)
    return buffer.getvalue()


# --------------------------------------------------------------------------- builders
def _table(rows) -> str:
    cells = "".join(
        f"<tr><td>{html.escape(str(k))}</td><td>{html.escape(str(v))}</td></tr>" for k, v in rows
    )
    return f"<table>{cells}</table>"


def _error(error: Exception) -> str:
    return f"<b style='color:#b00'>{html.escape(str(error))}</b>"


OFFLINE_NOTE = (
    "<i>In the static book these controls do nothing: the figure shows the default "
    "setting. In Jupyter or on Colab, move a control and the figure is redrawn.</i>"
)


def _wire(controls, render):
    """Render the table and the figure now, and again whenever a control moves. The saved
    widget state then holds the default setting's figure, which the static book shows."""
    for control in controls:
        control.observe(lambda change: render(), names="value")
    render()


def _box(w, children):
    return w.VBox([*children, w.HTML(OFFLINE_NOTE)])


def make_advantage_widget(rewards: str = "1, 0, 1, 0"):
    """Type a group's rewards, pick population or sample std and epsilon; see the advantages."""
    import ipywidgets as w

    text = w.Text(value=rewards, description="rewards")
    correction = w.ToggleButtons(options=[("population std", 0), ("sample std", 1)], value=0)
    epsilon = w.Dropdown(
        options=[("1e-8 (this practical)", 1e-8), ("1e-4 (TRL)", 1e-4), ("0.1", 0.1)],
        value=1e-8,
        description="δ (std)",
    )
    table, image = w.HTML(), w.Image(format="png")

    def render():
        try:
            view = advantage_view(
                parse_numbers(text.value, "rewards"), correction.value, epsilon.value
            )
        except ValueError as error:
            table.value = _error(error)
            return
        table.value = _table(
            [
                ("mean", f"{view['mean']:.6g}"),
                ("std", f"{view['std']:.6g}"),
                ("advantages", ", ".join(f"{a:.6g}" for a in view["advantages"])),
                ("zero variance", view["zero_variance"]),
            ]
        )
        image.value = figure_png(plot_advantages(view))

    _wire([text, correction, epsilon], render)
    return _box(w, [text, correction, epsilon, table, image])


def make_clipping_widget(advantage: float = 1.0, clip_epsilon: float = 0.2):
    """Move A, epsilon and the upper epsilon; see where the clip removes the gradient."""
    import ipywidgets as w

    adv = w.FloatSlider(value=advantage, min=-2.0, max=2.0, step=0.1, description="A")
    low = w.FloatSlider(value=clip_epsilon, min=0.05, max=0.5, step=0.01, description="epsilon")
    high = w.FloatSlider(
        value=clip_epsilon, min=0.05, max=0.5, step=0.01, description="epsilon high"
    )
    table, image = w.HTML(), w.Image(format="png")

    def render():
        try:
            curves = clipping_curves(adv.value, low.value, high.value)
        except ValueError as error:
            table.value = _error(error)
            return
        lo, hi = curves["interval"]
        table.value = _table(
            [
                ("interval", f"[{lo:.2f}, {hi:.2f}]"),
                (
                    "share of plotted ratios without gradient",
                    f"{curves['clipped_mask'].mean():.2f}",
                ),
            ]
        )
        image.value = figure_png(plot_clipping(curves))

    _wire([adv, low, high], render)
    return _box(w, [adv, low, high, table, image])


def make_kl_widget(
    p: str = "0.5, 0.3, 0.2", q: str = "0.2, 0.3, 0.5", samples: int = KL_DEFAULT_SAMPLES
):
    """Type two distributions, choose the number of draws and the seed; compare the
    sampled estimators with the exact KL."""
    import ipywidgets as w

    p_text = w.Text(value=p, description="p")
    q_text = w.Text(value=q, description="q")
    draws = w.IntSlider(value=samples, min=10, max=20000, step=10, description="samples")
    seed = w.IntText(value=0, description="seed")
    table, image = w.HTML(), w.Image(format="png")

    def render():
        try:
            view = kl_view(
                parse_numbers(p_text.value, "p"),
                parse_numbers(q_text.value, "q"),
                draws.value,
                seed.value,
            )
        except ValueError as error:
            table.value = _error(error)
            return
        rows = [("exact KL(p || q)", f"{view['exact']:.6f}")]
        rows += [
            (f"{n} mean +- stderr", f"{view[f'{n}_mean']:.6f} +- {view[f'{n}_stderr']:.6f}")
            for n in ESTIMATORS
        ]
        table.value = _table(rows)
        image.value = figure_png(plot_kl(view))

    _wire([p_text, q_text, draws, seed], render)
    return _box(w, [p_text, q_text, draws, seed, table, image])
