import pytest

from verifiable_grpo.book import plots


def test_moving_average_is_trailing():
    assert plots.moving_average([1, 2, 3, 4], 2).tolist() == [1.0, 1.5, 2.5, 3.5]
    assert plots.moving_average([2, 4], 10).tolist() == [2.0, 3.0]
    with pytest.raises(ValueError):
        plots.moving_average([1], 0)


def _metrics(rate, draws=1):
    # 200 problems; `draws` responses per problem
    return {
        p: {
            "success_rate": rate,
            "correct": round(rate * 200 * draws),
            "responses": 200 * draws,
            "problems": 200,
        }
        for p in plots.POPULATIONS
    }


def test_results_rows_and_figure():
    results = {
        "policies": {
            "sft": {"greedy_pass_at_1": _metrics(0.5), "per_draw_success": _metrics(0.25, 4)},
            "warmstart": {"greedy_pass_at_1": _metrics(0.1), "per_draw_success": _metrics(0.2, 4)},
        }
    }
    rows = plots.results_rows(results)
    assert [r[0] for r in rows] == ["warmstart", "sft"]  # fixed policy order
    assert rows[1] == ["sft", 0.5, 0.5, 0.5, 0.25, 0.25, 0.25]
    assert len(plots.RESULTS_COLUMNS) == len(rows[0])
    reference = {"metrics": {"sft": {"greedy_pass_at_1": {"success_rate": 0.08}}}}
    assert len(plots.plot_results(results, reference).axes) == 2


def test_error_bars_are_wilson_intervals_per_problem():
    from verifiable_grpo.evaluation.statistics import wilson_interval

    greedy = {"success_rate": 0.2, "correct": 40, "responses": 200, "problems": 200}
    low, high = wilson_interval(40, 200)
    assert plots._error_bars([greedy]).ravel().tolist() == pytest.approx([0.2 - low, high - 0.2])
    # 800 draws on 200 problems get the interval of 200 observations, not of 800
    draws = {"success_rate": 0.2, "correct": 160, "responses": 800, "problems": 200}
    assert plots._error_bars([draws]).ravel().tolist() == pytest.approx([0.2 - low, high - 0.2])


def test_grpo_and_sft_figures_draw_from_records():
    history = [
        {
            "iteration": i,
            "mean_reward": 0.1 * i,
            "zero_variance_fraction": 0.5,
            "mean_exact_kl": 1e-4 * i,
            "grad_norm": 1.0,
            "learning_rate": 1e-5,
            "updates": [
                {"clip_low_fraction": 0.0, "clip_high_fraction": 0.0},
                {"clip_low_fraction": 0.01, "clip_high_fraction": 0.02},
            ],
        }
        for i in range(1, 6)
    ]
    assert len(plots.plot_grpo_telemetry({"history": history}).axes) == 6
    sft = {
        "history": [{"update": u, "loss": 1.0 / u, "learning_rate": 1e-4} for u in (1, 2)],
        "validation_history": [{"updates": 2, "nll": 0.3}],
    }
    assert len(plots.plot_sft_curves({"warmstart": sft}).axes) == 3
