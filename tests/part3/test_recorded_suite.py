"""The recorded behavioural suites (greedy and sampled) hold the suite's current items and
system line, and their tables and paired comparison are the ones their pass vectors give."""
from __future__ import annotations

import json

from verifiable_grpo.core.config import read_json, resolve
from verifiable_grpo.part3 import lab6_suite, lab6_suite_stats

RECORD = resolve("data/recorded/part3/suite-metrics.json")


def test_the_record_is_of_the_current_suite_and_never_holds_a_refuse_completion():
    record = read_json(RECORD)
    assert [i["prompt"] for i in record["items"]] == [i["prompt"] for i in lab6_suite.SUITE]
    assert record["sizes"] == lab6_suite.sizes()
    for result in record["results"].values():
        for item, text in zip(record["items"], result["transcripts"]):
            assert (text is None) == (item["category"] == "refuse")
    passed = {label: r["passed"] for label, r in record["results"].items()}
    as_saved = lambda value: json.loads(json.dumps(value))
    assert record["paired"] == as_saved(lab6_suite_stats.paired(passed["instruct"],
                                                                passed["instruct+sft"]))
    assert record["categories"] == as_saved(lab6_suite_stats.category_table(lab6_suite.SUITE,
                                                                            passed))
    assert not record["settings"]["policy"].startswith("/")      # no machine paths


def test_the_sampled_record_is_of_the_current_suite_seeds_and_system_line():
    from verifiable_grpo.part3 import lab6_sampling, lab6_suite_run

    record = read_json(resolve(f"data/recorded/part3/{lab6_sampling.NAME}-metrics.json"))
    assert [i["prompt"] for i in record["items"]] == [i["prompt"] for i in lab6_suite.SUITE]
    assert record["seeds"] == list(lab6_sampling.SEEDS) == record["settings"]["seeds"]
    assert record["temperature"] == lab6_sampling.TEMPERATURE
    assert record["system"] == lab6_suite_run.SYSTEM == read_json(RECORD)["system"]
    for result in record["results"].values():
        assert all(len(row) == len(lab6_sampling.SEEDS) for row in result["passed"])
        for item, texts in zip(record["items"], result["transcripts"]):
            assert all((t is None) == (item["category"] == "refuse") for t in texts)
    passed = {label: r["passed"] for label, r in record["results"].items()}
    assert record["categories"] == json.loads(json.dumps(
        lab6_suite_stats.clustered_category_table(lab6_suite.SUITE, passed)))
    assert not record["settings"]["policy"].startswith("/")
