"""The recorded behavioural suites (greedy and sampled) hold the suite's current items and
system line, and their tables and paired comparison are the ones their pass vectors give."""

from __future__ import annotations

import json

from verifiable_grpo.core.config import read_json, resolve
from verifiable_grpo.part3.suite_lab import catalogue, stats

RECORD = resolve("data/recorded/part3/suite-metrics.json")


def test_the_record_is_of_the_current_suite_and_never_holds_a_refuse_completion():
    record = read_json(RECORD)
    assert [i["prompt"] for i in record["items"]] == [i["prompt"] for i in catalogue.SUITE]
    assert record["sizes"] == catalogue.sizes()
    for result in record["results"].values():
        for item, text in zip(record["items"], result["transcripts"]):
            assert (text is None) == (item["category"] == "refuse")
    passed = {label: r["passed"] for label, r in record["results"].items()}
    as_saved = lambda value: json.loads(json.dumps(value))
    assert record["paired"] == as_saved(stats.paired(passed["instruct"], passed["instruct+sft"]))
    assert record["categories"] == as_saved(stats.category_table(catalogue.SUITE, passed))
    assert not record["settings"]["policy"].startswith("/")  # no machine paths


def test_the_sampled_record_is_of_the_current_suite_seeds_and_system_line():
    from verifiable_grpo.part3.suite_lab import greedy, sampled

    record = read_json(resolve(f"data/recorded/part3/{sampled.NAME}-metrics.json"))
    assert [i["prompt"] for i in record["items"]] == [i["prompt"] for i in catalogue.SUITE]
    assert record["seeds"] == list(sampled.SEEDS) == record["settings"]["seeds"]
    assert record["temperature"] == sampled.TEMPERATURE
    assert record["system"] == greedy.SYSTEM == read_json(RECORD)["system"]
    for result in record["results"].values():
        assert all(len(row) == len(sampled.SEEDS) for row in result["passed"])
        for item, texts in zip(record["items"], result["transcripts"]):
            assert all((t is None) == (item["category"] == "refuse") for t in texts)
    passed = {label: r["passed"] for label, r in record["results"].items()}
    assert record["categories"] == json.loads(
        json.dumps(stats.clustered_category_table(catalogue.SUITE, passed))
    )
    assert not record["settings"]["policy"].startswith("/")


def test_the_failure_family_record_holds_the_current_items_and_checkers():
    from verifiable_grpo.part3.suite_lab import failure_families, families_run

    record = read_json(resolve(f"data/recorded/part3/{families_run.NAME}-metrics.json"))
    assert record["items"] == json.loads(json.dumps(failure_families.ITEMS))
    assert record["sizes"] == failure_families.sizes()
    for result in record["results"].values():  # every verdict is the checker's on its reply
        assert result["passed"] == [
            failure_families.check(item, text)
            for item, text in zip(failure_families.ITEMS, result["transcripts"])
        ]
    passed = {label: r["passed"] for label, r in record["results"].items()}
    assert record["families"] == json.loads(
        json.dumps(
            stats.category_table(
                failure_families.ITEMS, passed, categories=failure_families.FAMILIES
            )
        )
    )
    assert record["system"] == read_json(RECORD)["system"]  # the suite's system line
    assert not record["settings"]["policy"].startswith("/")
