"""Chapter "GRPO on a pretrained model": the signal a group carries, the band study's
curves, its paired result and its completions before and after."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from verifiable_grpo.book.widgets import _box, _error, _table, _wire, figure_png


def signal_share(p: float, group_size: int) -> float:
    """Chance that a group of G independent draws with success p has rewards that differ
    (a learning signal): 1 - p^G - (1 - p)^G."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p must lie in [0, 1], got {p!r}")
    if type(group_size) is not int or group_size < 2:
        raise ValueError(f"a group needs at least 2 draws, got {group_size!r}")
    from verifiable_grpo.part1.band_study import group_signal

    return group_signal(p, group_size)


def band_marks() -> list[tuple[str, float]]:
    """Per-draw success of recorded starting policies (name, p), each read from its record."""
    from verifiable_grpo.part1 import band_study, lift_study

    smollm2 = lift_study.recorded_own_warm_start()["summaries"][0]["warm_start"]
    tiny = lift_study.recorded()["summary"]["warm_start"]
    return [
        ("SmolLM2, StockArithmetic (after its warm start)", smollm2["test_sample"]),
        ("SmolLM2, small sums (screen)", band_study.recorded("screen")["per_draw"]),
        ("tiny base, StockArithmetic (warm start)", tiny["test_sample"]),
    ]


LOWEST_P = 1e-3  # the signal figure's left edge (and the widget's lowest p)


def plot_signal(p: float = 0.1, group_size: int = 8, marks=None) -> Figure:
    """Share of groups with a signal against p, for G = 2, 4, 8, 16 and the chosen G."""
    figure = Figure(figsize=(7.5, 4.2), layout="constrained")
    ax = figure.subplots()
    # A plain log axis from p = 0.001: the small rates where the recorded starts sit get room,
    # and no kink (a symlog's switch to linear) pretends to be part of the formula.
    grid = np.geomspace(LOWEST_P, 1, 401)
    for g in sorted({2, 4, 8, 16, group_size}):
        ax.plot(
            grid,
            1 - grid**g - (1 - grid) ** g,
            lw=2.2 if g == group_size else 1,
            label=f"G = {g}",
            color="C3" if g == group_size else None,
        )
    for index, (name, rate) in enumerate(marks or []):
        ax.axvline(rate, color="0.4", ls=":", lw=1)
        ax.annotate(
            name,
            (rate, 0.05 + 0.12 * index),
            fontsize=9,
            rotation=0,
            xytext=(4, 0),
            textcoords="offset points",
        )
    ax.plot([p], [signal_share(p, group_size)], "o", color="C3")
    ax.set(
        xlabel="per-draw success p of the prompt",
        ylabel="groups with a signal",
        title="1 - p^G - (1 - p)^G: a group learns only when its rewards differ",
        xscale="log",
        xlim=(LOWEST_P, 1),
        ylim=(0, 1.02),
    )
    ticks = [0.001, 0.01, 0.1, 1]
    ax.set_xticks(ticks, [f"{t:g}" for t in ticks])  # plain numbers, not powers of ten
    ax.title.set_fontsize(11)
    ax.legend(fontsize=9, loc="upper left")
    return figure


def make_signal_widget(p: float = 0.1, group_size: int = 8, marks=None):
    """Move p and G; see the share of groups with a learning signal."""
    import ipywidgets as w

    rate = w.FloatLogSlider(value=p, base=10, min=-3, max=0, step=0.05, description="p")
    size = w.IntSlider(value=group_size, min=2, max=32, description="G")
    table, image = w.HTML(), w.Image(format="png")

    def render():
        try:
            share = signal_share(rate.value, size.value)
        except ValueError as error:
            table.value = _error(error)
            return
        table.value = _table(
            [
                ("all wrong, (1 - p)^G", f"{(1 - rate.value) ** size.value:.3f}"),
                ("groups with a signal", f"{share:.3f}"),
                ("draws per informative group", f"{size.value / max(share, 1e-12):.1f}"),
            ]
        )
        image.value = figure_png(plot_signal(rate.value, size.value, marks))

    _wire([rate, size], render)
    return _box(w, [rate, size, table, image])


def plot_band_curves(result: dict) -> Figure:
    """Training reward (10-iteration moving average, stated), held-out per-draw and greedy
    at the curve's iterations, exact KL, entropy and answer length."""
    history = result["history"]
    its = [h["iteration"] for h in history]
    figure = Figure(figsize=(7.5, 8.4), layout="constrained")  # two panels a row: the column
    axes = figure.subplots(3, 2).ravel()

    def smoothed(key):
        values = np.array([h[key] for h in history], dtype=float)
        window = min(10, len(values))
        return np.convolve(values, np.ones(window) / window, mode="valid"), its[window - 1 :]

    reward, at = smoothed("mean_reward")
    axes[0].plot(its, [h["mean_reward"] for h in history], color="0.8", lw=0.8)
    axes[0].plot(at, reward, color="C0")
    axes[0].set(title="training reward (grey: per iteration;\nblue: 10-iteration mean)")
    curve = result["curve"]
    axes[1].plot(
        [c["iteration"] for c in curve], [c["per_draw"] for c in curve], "o-", label="per draw"
    )
    axes[1].plot(
        [c["iteration"] for c in curve], [c["greedy"] for c in curve], "s--", label="greedy"
    )
    axes[1].set(title="validation (96 problems, held out)")
    axes[1].legend(fontsize=9)
    for ax, key, title in zip(
        axes[2:],
        ("mean_exact_kl", "mean_entropy", "mean_response_tokens", "zero_variance_fraction"),
        (
            "exact KL to the instruct model",
            "entropy per answer token",
            "answer length (tokens)",
            "groups without a signal",
        ),
    ):
        ax.plot(its, [h[key] for h in history], color="C2")
        ax.set(title=title)
    for ax in axes:
        ax.set_xlabel("iteration")
        ax.title.set_fontsize(11)
    return figure


def completions(result: dict, count: int = 6) -> list[list[str]]:
    """[problem, answer before, answer after] for the first test problems, draw 0."""
    from verifiable_grpo.task import small_sums

    statements = {e["document_id"]: e["statement"] for e in small_sums.splits()["test"]}
    before = {r[0]: r for r in result["before"]["sample"] if r[1] == 0}
    after = {r[0]: r for r in result["after"]["sample"] if r[1] == 0}
    changed = [d for d in before if before[d][3] != after[d][3]]
    mark = {0: "wrong", 1: "right"}
    rows = []
    for doc in (changed + [d for d in before if d not in changed])[:count]:
        rows.append(
            [
                statements[doc],
                f"{before[doc][5]!r} ({mark[before[doc][3]]})",
                f"{after[doc][5]!r} ({mark[after[doc][3]]})",
            ]
        )
    return rows


def wrong_numbers(result: dict) -> list[list]:
    """Valid answers with a wrong number, by how they were wrong: a worked example's answer
    copied, an operand repeated, within 2 of the truth, or further off (counts of draws)."""
    import json

    from verifiable_grpo.task import small_sums

    gold = {e["document_id"]: e for e in small_sums.splits()["test"]}
    shots = {small_sums.compute_final_stock(small_sums.problem_of(*s)) for s in small_sums.SHOTS}
    kinds = ("a worked example's answer", "an operand", "within 2 of the answer", "further off")
    counts = {side: dict.fromkeys(kinds, 0) for side in ("before", "after")}
    for side in counts:
        for doc, _, _, reward, valid, text in result[side]["sample"]:
            if reward or not valid:
                continue
            value, problem = json.loads(text)["final_stock"], gold[doc]["problem"]
            operands = {problem["initial"], *problem["deliveries"], *problem["withdrawals"]} - {0}
            if value in shots:
                kind = kinds[0]
            elif value in operands:
                kind = kinds[1]
            elif abs(value - gold[doc]["final_stock"]) <= 2:
                kind = kinds[2]
            else:
                kind = kinds[3]
            counts[side][kind] += 1
    return [[k, counts["before"][k], counts["after"][k]] for k in kinds]
