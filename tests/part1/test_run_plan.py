"""`plan`: its counts are the pipeline's own (checked against the recorded tiny run), its cost
model predicts the stand-in's measured CPU steps, and the README and how-to-run quote it."""

from __future__ import annotations

import re

import pytest

from shared_helpers import run_cli
from verifiable_grpo.core.config import load_config, read_json, repo_root
from verifiable_grpo.core.config_schema import recorded_profile
from verifiable_grpo.core.runfolder import MODES
from verifiable_grpo.part1 import run_cost, run_plan

RECORDED = repo_root() / "data" / "recorded" / "tiny"


def _recorded_config():
    """The profile the recorded tiny run ran with (its crash checkpoints were more frequent
    than tiny.yaml's today)."""
    path = RECORDED / "provenance.json"
    return recorded_profile(read_json(path)["config"], str(path))


def test_crash_checkpoint_counts_are_the_recorded_runs():
    """Every branch and mode of the recorded tiny run saved as many crash checkpoints as the
    plan counts (SFT: every N updates and at epoch ends; GRPO: every N iterations)."""
    for branch in run_plan.branches(_recorded_config()):
        for mode in MODES:
            record = read_json(RECORDED / "learning" / f"{branch.name}-{mode}.json")
            saved = (
                record["timings"]["crash_checkpoints"]["saved"]
                if branch.kind == "sft"
                else record["costs"]["crash_checkpoints"]["saved"]
            )
            assert branch.crash_saves[mode] == saved, (branch.name, mode)


def test_generated_responses_are_the_recorded_runs():
    config = _recorded_config()
    responses = sum(
        read_json(RECORDED / "learning" / f"{b.name}-{m}.json")["costs"]["responses_generated"]
        for b in run_plan.branches(config)
        if b.kind == "grpo"
        for m in MODES
    )
    planned = run_plan.generated_tokens(config, 1.0)
    assert planned["grpo_responses"] == responses
    assert planned["evaluated_responses"] == 5 * 200 * 5
    assert run_plan.generated_tokens(config, 64.0)["tokens"] == 64 * planned["tokens"]


def test_qwen_keeps_no_state_and_writes_far_fewer_crash_checkpoints():
    qwen = load_config("qwen")
    parameters = run_cost.parameters(run_plan.model_shape(qwen))
    assert parameters == 494_032_768
    digest = run_plan.disk_plan(qwen, parameters, 0.93)
    qwen = qwen.replaced(
        storage={"keep_states": "all"},
        warmstart={"checkpoint_every_updates": 10},
        sft={"checkpoint_every_updates": 10},
        grpo={"checkpoint_every_iterations": 5},
    )
    before = run_plan.disk_plan(qwen, parameters, 0.93)
    assert before["states_at_end"] == 15 and digest["states_at_end"] == 0
    assert before["crash_checkpoints"] == 110 and digest["crash_checkpoints"] <= 40
    state, policy = digest["state_bytes"], digest["policy_bytes"]
    assert before["held_at_end_bytes"] == pytest.approx(15 * state + 5 * policy)
    assert digest["held_at_end_bytes"] == pytest.approx(5 * policy)
    # at most one branch's three states, a resume policy and two crash states at a save
    assert digest["peak_bytes"] <= 3 * state + 5 * policy + 2 * digest["crash_state_bytes"]
    assert digest["peak_bytes"] < 60e9 < before["peak_bytes"]


def test_no_cache_generation_counts_every_prefix():
    """R tokens after a P-token prompt without a cache: R forwards of P, P+1, ... tokens."""
    shape = dict(run_cost.QWEN_SHAPE, layers=2)
    device = run_cost.Device("flops only", 1.0, 1e30, 0.0)
    seconds = device.generate(shape, 60, 9, cached=False)
    assert seconds == pytest.approx(
        sum(run_cost.forward_flops(shape, 60 + t) for t in range(9)), rel=1e-12
    )
    body = run_cost.parameters(shape)
    assert run_cost.forward_flops(shape, 1) == 2 * body + 4 * 2 * 896


# Stated tolerance: the CPU device is fitted on two step kinds (the 256-token forward, the
# AdamW step); the others must come out within 25 % of their recorded medians.
TOLERANCE = 0.25


def test_the_cost_model_predicts_the_standin_steps():
    record = run_plan.standin_record()
    assert record["shape"]["vocabulary"] == 151_936 and record["shape"]["hidden"] == 896
    cpu = run_cost.calibrated_cpu(record)
    predicted = run_cost.predicted_steps(cpu, record["shape"])
    for step, measured in record["median_seconds"].items():
        assert abs(predicted[step] / measured - 1) <= TOLERANCE, (step, predicted[step], measured)


def _plan_lines(profile: str) -> list[str]:
    return run_plan.format_plan(run_plan.build_plan(load_config(profile))).splitlines()


@pytest.mark.parametrize("page", ["README.md", "book/how-to-run.md"])
def test_the_pages_quote_the_plan(page):
    text = (repo_root() / page).read_text()
    for profile in ("qwen", "qwen-fast"):
        for line in _plan_lines(profile):
            assert line in text, (page, profile, line)


def test_the_fast_profile_is_faster_and_otherwise_the_same():
    qwen, fast = (
        run_plan.build_plan(load_config("qwen")),
        run_plan.build_plan(load_config("qwen-fast")),
    )
    for gpu in qwen["hours"]:
        for case in ("typical", "worst case"):
            assert fast["hours"][gpu][case] < qwen["hours"][gpu][case]
    assert fast["generated"] == qwen["generated"] and fast["disk"] == qwen["disk"]


def test_plan_and_dry_run_print_the_same_and_start_nothing(tmp_path):
    planned = run_cli(["plan", "--config", "qwen"])
    assert planned.returncode == 0, planned.stderr
    dry = run_cli(["run", "--config", "qwen", "--dry-run", "--out", str(tmp_path / "run")])
    assert dry.returncode == 0 and dry.stdout == planned.stdout
    assert not (tmp_path / "run").exists()
    assert re.search(r"disk: peak [\d.]+ GB, written \d+ GB", planned.stdout)
    for gpu in run_cost.GPUS:
        assert gpu.name in planned.stdout


def test_a_model_of_unknown_shape_is_refused_with_its_key(tmp_path):
    import yaml

    from verifiable_grpo.core.config import profile_settings

    profile = profile_settings("qwen")
    profile["model"]["name"] = "someone/another-model"
    path = tmp_path / "other.yaml"
    path.write_text(yaml.safe_dump(profile))
    result = run_cli(["plan", "--config", str(path)])
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith("error: model: the plan knows no shape")
