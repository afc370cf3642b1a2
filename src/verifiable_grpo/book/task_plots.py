"""Figures of the task itself (chapter I.1): how big the generated problems are, split by
split, drawn from data.generate_problem_set's problems and the exact solver."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from verifiable_grpo.task import data, verifier

LEARNING_LABEL = "warm start, train, validation"
# bins of 5 over 0..100 with an edge at the ID50 bound, 50.5: 0 has a bin of its own
OPERAND_EDGES = np.concatenate([[-0.5], np.arange(0.5, data.OOD_MAXIMUM + 1, 5)])
STOCK_EDGES = np.arange(0, verifier.MAX_FINAL_STOCK + 1, 10)  # bins of 10 over 0..300


def problem_populations(problems: dict[str, list[tuple[dict, str]]]) -> dict[str, list[dict]]:
    """The learning splits together, then the test set's two halves (ID50, OOD100)."""
    populations: dict[str, list[dict]] = {LEARNING_LABEL: []}
    populations.update({f"test {population}": [] for population in data.TEST_COUNTS})
    for split, rows in problems.items():
        for problem, population in rows:
            label = f"test {population}" if split == "test" else LEARNING_LABEL
            populations[label].append(problem)
    return populations


def largest_operand(problem: dict) -> int:
    return max([problem["initial"], *problem["deliveries"], *problem["withdrawals"]])


def shares(values: list[int], edges: np.ndarray) -> np.ndarray:
    """The share of the values in each bin: populations of different sizes side by side."""
    counts, _ = np.histogram(values, bins=edges)
    return counts / len(values)


def plot_problem_sizes(problems: dict[str, list[tuple[dict, str]]]) -> Figure:
    """Two panels: each problem's largest operand, and its final stock (the answer the
    model must write), as shares of each population; the learning splits never go past
    the ID50 bound, the OOD100 half of the test does."""
    figure = Figure(figsize=(7.5, 3.6), layout="constrained")
    operand_ax, stock_ax = figure.subplots(1, 2)
    for colour, (label, rows) in enumerate(problem_populations(problems).items()):
        style = {"color": f"C{colour}", "label": f"{label} ({len(rows)})", "lw": 1.8}
        operand_ax.stairs(
            shares([largest_operand(p) for p in rows], OPERAND_EDGES), OPERAND_EDGES, **style
        )
        stock_ax.stairs(
            shares([verifier.compute_final_stock(p) for p in rows], STOCK_EDGES),
            STOCK_EDGES,
            **style,
        )
    operand_ax.axvline(data.ID_MAXIMUM + 0.5, color="0.4", ls="--", lw=1)
    operand_ax.set(
        title=f"largest operand\n(dashed: the ID50 bound, {data.ID_MAXIMUM})",
        xlabel="operand",
        ylabel="share of the problems",
        xlim=(OPERAND_EDGES[0], OPERAND_EDGES[-1]),
    )
    stock_ax.set(
        title=f"final stock, the answer\n(the verifier accepts 0..{verifier.MAX_FINAL_STOCK})",
        xlabel="final stock",
        xlim=(0, verifier.MAX_FINAL_STOCK),
    )
    figure.legend(
        *operand_ax.get_legend_handles_labels(), loc="outside lower center", ncols=3, fontsize=10
    )
    return figure
