"""Every panel that draws a trailing mean says so in its title, with the window: a reader
who compares a quoted peak with a smoothed line must know the line is flattened. The
figures are built from the recorded runs the chapters display; the test spies on
moving_average to find which lines are smoothed, so a new smoothed panel is covered too."""

from __future__ import annotations

import numpy as np
import pytest

from verifiable_grpo.book import family_plots, learning_plots, objective_plots, plots
from verifiable_grpo.book.notebook import load_recorded
from verifiable_grpo.part1 import fixed_prompt_objectives, fixed_prompts, lift_study, sweep


def _figures():
    runs = fixed_prompts.recorded()
    objectives = fixed_prompt_objectives.recorded()["runs"]
    chosen = {n: objectives[n] for n in fixed_prompt_objectives.OBJECTIVES_RUN}
    rows = fixed_prompt_objectives.comparison(chosen, runs["ours"])
    curve = {"a": np.linspace(0, 1, 40), "b": np.linspace(1, 0, 40) ** 2}
    yield "fixed prompts", lambda: learning_plots.plot_fixed_prompt_run(runs["ours"], runs["trl"])
    yield "lift curves", lambda: learning_plots.plot_lift_curves(lift_study.recorded()["results"])
    yield "sweep", lambda: plots.plot_sweep_histories(sweep.load_recorded()["results"])
    yield "objectives", lambda: objective_plots.plot_objective_runs(runs["ours"], chosen, rows)
    yield (
        "telemetry",
        lambda: plots.plot_grpo_telemetry(load_recorded("learning/grpo-continuous.json")),
    )
    yield "family", lambda: family_plots.plot_curves({"r1": curve, "r2": curve}, "reward")


@pytest.mark.parametrize(
    "name,build", list(_figures()), ids=lambda v: v if isinstance(v, str) else ""
)
def test_every_smoothed_panel_names_its_window(name, build, monkeypatch):
    smoothed = []
    original = plots.moving_average

    def spy(values, window):
        out = original(values, window)
        smoothed.append((out, window))
        return out

    for module in (learning_plots, objective_plots, family_plots):
        monkeypatch.setattr(module, "moving_average", spy)
    monkeypatch.setattr(plots, "moving_average", spy, raising=True)
    # plots' own functions look the name up in their module at call time
    figure = build()
    assert smoothed, f"{name}: no smoothed line found; the spy missed the helper"
    found = 0
    for ax in figure.axes:
        for line in ax.get_lines():
            y = np.asarray(line.get_ydata(), dtype=float)
            for out, window in smoothed:
                if out.shape == y.shape and window > 1 and np.array_equal(out, y):
                    found += 1
                    assert f"mean of last {window}" in ax.get_title(), (
                        f"{name}: panel '{ax.get_title()}' draws a {window}-point trailing "
                        "mean without saying so in its title"
                    )
    assert found, f"{name}: the smoothed lines were not drawn"
