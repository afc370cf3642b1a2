"""Part II's widget: every arm's per-token weights for a group the reader sets
(part2.demos computes them; the figure is also the static fallback)."""

from __future__ import annotations

from verifiable_grpo.book.widgets import figure_png, parse_numbers
from verifiable_grpo.part2.demos import STUDY_ARMS, TRL_REDUCTIONS, token_weights


def plot_token_weights(rewards, lengths, names=STUDY_ARMS + TRL_REDUCTIONS):
    """Bars: per-token weight of each response under each arm."""
    from matplotlib.figure import Figure

    table = token_weights(rewards, lengths, names)
    figure = Figure(figsize=(8, 3.2))
    ax = figure.subplots()
    width = 0.8 / len(lengths)
    for i, (r, n) in enumerate(zip(rewards, lengths)):
        ax.bar(
            [k + i * width for k in range(len(names))],
            [table[a][i] for a in names],
            width,
            label=f"response {i + 1}: reward {r:g}, {n} tokens",
        )
    ax.axhline(0, color="black", linewidth=0.6)
    ax.set_xticks([k + 0.4 - width / 2 for k in range(len(names))], names)
    ax.set_ylabel("weight per token")
    ax.legend(fontsize=7, loc="best")
    figure.tight_layout()
    return figure


def plot_ratio_weights(ratios, names=None):
    """Lines: a token's gradient weight against its ratio, one panel per sign of A."""
    from matplotlib.figure import Figure

    from verifiable_grpo.part2.newer_objectives import SURROGATE_ENTRIES, ratio_weights

    names = SURROGATE_ENTRIES if names is None else names
    figure = Figure(figsize=(8, 3.2))
    for ax, advantage in zip(figure.subplots(1, 2, sharey=True), (1.0, -1.0)):
        table = ratio_weights(ratios, advantage, names)
        for name in names:
            ax.plot(list(ratios), table[name], label=name, linewidth=1.4)
        ax.axhline(0, color="black", linewidth=0.6)
        ax.axvline(1, color="grey", linewidth=0.6, linestyle=":")
        ax.set_xlabel("ratio p_cur / p_old of the token")
        ax.set_title(f"A = {advantage:+g}", fontsize=9)
    figure.axes[0].set_ylabel("weight d(-loss)/d log p")
    figure.axes[1].legend(fontsize=7, loc="best")
    figure.tight_layout()
    return figure


def make_token_weight_widget(
    rewards: str = "1, 0, 1, 0", lengths: str = "3, 5, 2, 7", names=STUDY_ARMS + TRL_REDUCTIONS
):
    """Type a group's rewards and response lengths; see each entry's per-token weights
    (`names`: the registry entries shown, by default the study's arms and TRL's reductions)."""
    import ipywidgets as w

    reward_box = w.Text(value=rewards, description="rewards")
    length_box = w.Text(value=lengths, description="lengths")
    message, image = w.HTML(), w.Image(format="png")

    def render(*_):
        try:
            r = parse_numbers(reward_box.value, "rewards")
            n = [int(x) for x in parse_numbers(length_box.value, "lengths")]
            image.value = figure_png(plot_token_weights(r, n, names))
            message.value = ""
        except ValueError as error:
            message.value = f"<b style='color:#b00'>{error}</b>"

    for box in (reward_box, length_box):
        box.observe(render, names="value")
    render()
    return w.VBox([reward_box, length_box, message, image])
