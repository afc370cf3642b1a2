"""The recorded behavioural suite holds the suite's current items, and its category table
and paired comparison are the ones its pass vectors give."""
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
