"""The recorded sweep (data/recorded/tiny-sweep): its settings are the declared ones, its
warm start scores exactly as Part I's record, and its summary (selection, intervals,
verdict) is recomputed bit for bit from the per-response results it holds."""

from __future__ import annotations

import json

import pytest

from verifiable_grpo.core.config import read_json, resolve
from verifiable_grpo.part1 import sweep

PATH = resolve(sweep.RECORDED) / "sweep.json"
pytestmark = pytest.mark.skipif(not PATH.is_file(), reason="no recorded sweep")


@pytest.fixture(scope="module")
def recorded():
    return sweep.load_recorded()


def test_the_recorded_settings_are_the_declared_ones(recorded):
    assert [r["setting"] for r in recorded["results"]] == [sweep.asdict(s) for s in sweep.SETTINGS]
    for res in recorded["results"]:
        s = res["setting"]
        grpo = res["config_grpo"]
        assert (
            grpo["learning_rate"],
            grpo["iterations"],
            grpo["updates_per_rollout"],
            grpo["group_size"],
        ) == (s["learning_rate"], s["iterations"], s["updates_per_rollout"], s["group_size"])
        assert len(res["history"]) == s["iterations"]
        assert len(res["test_sample"]) == 800 and len(res["validation_sample"]) == 800


def test_the_warm_start_scores_as_part_one_recorded_it(recorded):
    sweep.check_warm_start(recorded["warm_start"])  # raises on any difference


def test_the_summary_is_recomputed_exactly(recorded):
    again = sweep.summarise(recorded["warm_start"], recorded["results"])
    assert json.loads(json.dumps(again)) == recorded["summary"]
    rates = [r["validation_per_draw"]["rate"] for r in recorded["summary"]["settings"]]
    assert recorded["summary"]["selected"] == sweep.SETTINGS[rates.index(max(rates))].name


def test_the_histories_read_under_the_current_name():
    raw = read_json(PATH)  # recorded when a history said `zvf`
    loaded = sweep.load_recorded()
    for old, new in zip(raw["results"], loaded["results"]):
        assert [h["zvf"] for h in old["history"]] == [
            h["zero_variance_fraction"] for h in new["history"]
        ]
        assert all("zvf" not in h for h in new["history"])
