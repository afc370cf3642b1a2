"""Records written when the zero-variance fraction was `zvf` read under its one name."""

from __future__ import annotations

import json

import pytest

from verifiable_grpo.core import files
from verifiable_grpo.core.config import resolve
from verifiable_grpo.core.record_names import RENAMED_KEYS, with_current_names

RECORDED_RUN = "data/recorded/part2/runs/on_policy/grpo-seed-11/run_manifest.json"


def test_a_recorded_manifest_reads_under_the_current_names():
    raw = files.read_json(resolve(RECORDED_RUN))
    assert "zvf" in raw["telemetry"][0] and "mean_zvf" in raw["summary"]  # as recorded
    read = with_current_names(raw)
    text = json.dumps(read)
    assert not any(f'"{old}"' in text for old in RENAMED_KEYS)
    # every value kept, under its new key; nothing else touched
    assert read["summary"]["mean_zero_variance_fraction"] == raw["summary"]["mean_zvf"]
    assert [t["zero_variance_fraction_drawn"] for t in read["telemetry"]] == [
        t["zvf_drawn"] for t in raw["telemetry"]
    ]
    assert read["telemetry"][3]["rewards"] == raw["telemetry"][3]["rewards"]
    assert read["identity"] == raw["identity"] and read["heldout"] == raw["heldout"]
    assert files.read_json(resolve(RECORDED_RUN)) == raw  # the file is not rewritten


def test_a_current_record_passes_unchanged():
    record = {"summary": {"mean_zero_variance_fraction": 0.5}, "rows": [{"gu": 0.5}], "n": 3}
    assert with_current_names(record) == record


def test_both_names_in_one_record_are_refused():
    with pytest.raises(ValueError, match="'zvf' and 'zero_variance_fraction'"):
        with_current_names({"steps": [{"zvf": 0.5, "zero_variance_fraction": 0.25}]})
