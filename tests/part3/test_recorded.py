"""The recorded results the chapters display: each was produced by its lab with the
committed settings, and carries the module's printed figures (a cheap guard against an
export from other code or other settings)."""

import pytest

from verifiable_grpo.core.config import canonical_json, sha256_bytes
from verifiable_grpo.part3 import labs


@pytest.mark.parametrize("name", sorted(labs.SETTINGS_LABS))
def test_recorded_with_the_committed_settings(name):
    record = labs.recorded(name)
    settings, _ = labs.load_settings(name)
    assert record["lab"] == name and record["settings"] == settings
    assert record["provenance"]["config_sha256"] == sha256_bytes(canonical_json(settings))
    assert record["provenance"]["config_path"] == f"configs/part3/{name}.yaml"
    assert record["provenance"]["git_commit"] and record["provenance"]["packages"]["torch"]


def test_recorded_figures_are_the_module_figures():
    dpo = labs.recorded("dpo")["metrics"]
    assert [f"{r['fitted_kl']:.4f}" for r in dpo["bandit"]["rows"]] == [
        "2.4992",
        "0.9261",
        "0.2162",
        "0.0489",
    ]
    assert f"{dpo['digits']['off_policy'][-1]['accuracy']:.3f}" == "0.229"
    lab5 = labs.recorded("expert-iteration")["metrics"]
    assert [f"{run['records'][-1]['accuracy']:.3f}" for run in lab5["grpo"]] == [
        "0.963",
        "0.870",
        "0.778",
    ]
    assert lab5["expert_iteration"][-1]["accepted"] == 788
    reward = labs.recorded("reward-model")["metrics"]
    assert [f"{r['linear_true']:.3f}" for r in reward["selection"]][-1] == "0.389"
    judge = labs.recorded("judge")["metrics"]
    assert judge["counts"] == {"true_win": 201, "first": 302, "second": 168}
    assert f"{labs.recorded('fault-tree')['metrics']['revised']['degenerate']:.3f}" == "0.314"
