"""The case study's bill, serving memory and composite reward: the module's figures from the
accounting functions, and refusals of bad assumptions."""

import pytest

from verifiable_grpo.models import accounting as acc
from verifiable_grpo.part3 import case_study as cs


def test_bill_matches_the_module_within_its_rounding():
    result = cs.bill()
    assert result["sft"]["tokens"] == 100e6
    assert result["sft"]["flops"] == 100e6 * acc.flops_per_token(acc.CASE_STUDY, 8192, "lora")
    assert round(result["sft"]["usd"], 1) == 7.5
    assert round(result["grpo"]["usd"]) in (58, 59)
    assert result["grpo"]["responses"] == 3000 * 2 * 8 == 48_000
    assert result["grpo"]["tokens"] == 48_000 * 6000
    assert 195 < result["total_usd"] < 205
    assert result["total_usd"] == pytest.approx(3 * (result["sft"]["usd"] + result["grpo"]["usd"]))


def test_costs_scale_with_their_assumptions():
    base = cs.bill()
    double_price = cs.bill(prices=cs.Prices(usd_per_gpu_hour=5.0))
    assert double_price["total_usd"] == pytest.approx(2 * base["total_usd"])
    bigger_groups = cs.grpo_cost(
        acc.CASE_STUDY, cs.GrpoPlan(group_size=16), cs.Workload(), cs.Prices()
    )
    assert bigger_groups["usd"] == pytest.approx(2 * base["grpo"]["usd"])
    no_scoring = cs.grpo_cost(
        acc.CASE_STUDY, cs.GrpoPlan(scoring_passes=0), cs.Workload(), cs.Prices()
    )
    assert no_scoring["stage_hours"]["scoring"] == 0 and no_scoring["usd"] < base["grpo"]["usd"]


def test_serving_memory_is_the_module_figure():
    serving = cs.serving_memory()
    assert serving["block_bits"] == 4.125
    assert serving["block_bytes"] == 8_305_020_928 * 4.125 / 8 == 4_282_276_416
    assert serving["table_bytes"] == 1_245_708_288
    assert [
        f"{serving[k] / 1e9:.2f}" for k in ("block_bytes", "total_bytes", "uniform_4bit_bytes")
    ] == ["4.28", "5.53", "4.78"]
    assert f"{serving['table_bytes'] / 1e9:.3f}" == "1.246"


def test_composite_reward():
    assert cs.composite_reward(cs.Artifact(False, 1, 1)) == 0.0
    assert cs.composite_reward(cs.Artifact(True, 1, 1)) == 0.8  # non-edit maximum
    assert cs.composite_reward(cs.Artifact(True, 1, 1, preservation=1.0)) == 1.0
    assert cs.composite_reward(cs.Artifact(True, 1, 1), renormalise=True) == 1.0
    assert cs.composite_reward(cs.Artifact(True, 1, 1, preservation=0.0)) == 0.8
    assert cs.composite_reward(cs.Artifact(True, 0.2, 0.0, degenerate=True)) == 0.0  # floored
    assert cs.composite_reward(cs.Artifact(True, 1, 1, degenerate=True)) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="coverage must be a fraction"):
        cs.composite_reward(cs.Artifact(True, 1, 1.5))


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: cs.Prices(usd_per_gpu_hour=-1), "usd_per_gpu_hour must be positive"),
        (lambda: cs.Prices(training_utilisation=1.5), "fraction of the peak"),
        (lambda: cs.GrpoPlan(group_size=1), "at least 2"),
        (lambda: cs.GrpoPlan(prompts=2.5), "prompts must be a positive integer"),
        (lambda: cs.SftPlan(warmup_fraction=1.2), "warmup_fraction must lie in"),
        (lambda: cs.Workload(output_tokens=0), "output_tokens must be a positive integer"),
        (lambda: cs.bill(trials=0), "trials must be a positive integer"),
        (lambda: cs.serving_memory(scale_block=0), "block must be a positive integer"),
    ],
)
def test_bad_assumptions_are_refused(build, message):
    with pytest.raises(ValueError, match=message):
        build()


def test_bill_widget_view_and_builder():
    from verifiable_grpo.book import case_study_widgets as cw

    view = cw.bill_view(group_size=16, trials=1)
    assert view["grpo"]["responses"] == 96_000 and view["trials"] == 1
    assert dict(cw.bill_rows(cw.bill_view()))["serving memory"] == "5.53 GB"
    with pytest.raises(ValueError, match="unknown setting 'gpus'"):
        cw.bill_view(gpus=2)
    widget = cw.make_bill_widget()
    *sliders, table, image = widget.children
    # the default figure is drawn at once (the static book shows the saved image)
    assert "USD 7.54" in table.value and bytes(image.value).startswith(b"\x89PNG")
    first = image.value
    sliders[0].value = 5.0
    assert "USD 15.08" in table.value and bytes(image.value).startswith(b"\x89PNG")
    assert bytes(image.value) != bytes(first)
