"""The bench's work rates: FLOPs counted as 2N per forwarded token and 6N per trained one,
medians over the timed sets, the share of a matmul peak; TRL at its defaults and at its
fastest CPU setting (gradient checkpointing off)."""

from __future__ import annotations

import pytest

from verifiable_grpo.part1 import band_bench, bench_throughput, bench_trl


def _arm():
    sets = [
        {
            "prompt_tokens": 100,
            "response_tokens": 20,
            "generation": 2.0,
            "optimisation": 4.0,
            "total": 8.0,
        },
        {
            "prompt_tokens": 100,
            "response_tokens": 40,
            "generation": 2.0,
            "optimisation": 7.0,
            "total": 10.0,
        },
        {
            "prompt_tokens": 100,
            "response_tokens": 30,
            "generation": 3.0,
            "optimisation": 5.0,
            "total": 9.0,
        },
    ]
    return {"per_set": sets}


def test_the_flops_of_a_set_count_sampling_reference_and_updates():
    flops = bench_throughput.set_flops(_arm()["per_set"][0], parameters=1000, updates=2)
    assert flops == {
        "generation": 2 * 1000 * 120,
        "training": (6 * 2 + 2) * 1000 * 120,
        "tokens": 120,
    }


def test_the_rates_are_medians_over_sets_and_the_share_divides_by_the_peak():
    peak = {"gflops": 0.004, "size": 8, "seconds": 1.0}
    rates = bench_throughput.throughput(_arm(), parameters=1000, updates=2, peak=peak)
    assert rates["generated_tokens_per_second"] == pytest.approx(10.0)  # 20/2, 20/2, 10/1
    assert rates["trained_tokens_per_second"] == pytest.approx(2 * 130 / 5.0)
    per_set = [(2 + 14) * 1000 * t / s / 1e9 for t, s in ((120, 8.0), (140, 10.0), (130, 9.0))]
    assert rates["gflops"] == pytest.approx(sorted(per_set)[1])
    assert rates["share_of_peak"] == pytest.approx(rates["gflops"] / 0.004)
    assert "matmul peak" in bench_throughput.throughput_line(rates)


def test_the_matmul_peak_is_a_positive_rate():
    peak = bench_throughput.matmul_peak(size=64, repeats=2)
    assert peak["gflops"] > 0 and peak["size"] == 64


def test_trl_runs_at_its_defaults_or_with_gradient_checkpointing_off(tmp_path):
    run = band_bench.band_run(sets=2, warmup=1)
    default = bench_trl.trl_arguments(run, str(tmp_path), "cpu")
    fastest = bench_trl.trl_arguments(run, str(tmp_path), "cpu", fastest=True)
    assert default.activation_checkpointing is True  # GRPOConfig's own default
    assert fastest.activation_checkpointing is False
    assert fastest.gradient_checkpointing is False  # the deprecated name reads the same
    changed = {k for k, v in vars(default).items() if vars(fastest).get(k) != v}
    assert changed - {"distributed_state"} == {"gradient_checkpointing", "activation_checkpointing"}


def test_the_band_bench_prints_both_trl_ratios_and_the_rates():
    arms = [
        {"arm": name, "median_seconds": {"total": total}}
        for name, total in (("ours, batched", 20.0), ("TRL", 100.0), ("TRL, fastest", 80.0))
    ]
    rates = bench_throughput.throughput(
        _arm(), 1000, 2, {"gflops": 0.004, "size": 8, "seconds": 1.0}
    )
    result = {
        "shape": band_bench.SHAPE,
        "sets": 3,
        "arms": arms,
        "seconds_per_response": {a["arm"]: band_bench.per_response(a) for a in arms},
        "ratio_ours_to_trl": 0.2,
        "ratio_ours_to_trl_fastest": 0.25,
        "throughput": rates,
        "recorded_sequential_seconds_per_response": 3.1,
        "speedup_over_recorded": 3.1 / band_bench.per_response(arms[0]),
    }
    text = band_bench.format_band_bench(result)
    assert "fastest CPU setting: 0.25" in text and "ours / TRL per rollout set: 0.20" in text
    assert "GFLOP/s achieved" in text
