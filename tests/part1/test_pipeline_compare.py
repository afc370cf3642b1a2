"""`bench pipeline`: a run folder against a record (here the smoke run against itself and a
doctored copy), and the committed comparison of the current code's tiny run with the
recorded one (data/recorded/tiny-side), which the README, the provenance appendix and
Part I quote."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from verifiable_grpo.core.config import read_json, repo_root
from verifiable_grpo.part1 import pipeline_compare

SIDE = repo_root() / "data" / "recorded" / "tiny-side"
TINY = repo_root() / "data" / "recorded" / "tiny"


def test_a_run_compared_with_itself_is_equal_everywhere(smoke_reference):
    result = pipeline_compare.compare_run(smoke_reference, smoke_reference, profile="smoke")
    assert result["counts_equal"] and all(result["resume_equal"].values())
    for name, entry in result["branches"].items():
        assert entry["final_digest_equal"], name
        assert all(v == 0.0 for k, v in entry.items() if k.startswith("largest")), name
        if "rewards_equal" in entry:
            assert entry["rewards_equal"] and entry["response_tokens_equal"], name
    elapsed = result["timings"]["elapsed_seconds"]
    assert result["speedup_against_record"] == result["recorded_total_seconds"] / elapsed


def test_a_changed_count_or_an_unfinished_run_is_reported(smoke_reference, tmp_path):
    copy = tmp_path / "run"
    shutil.copytree(smoke_reference, copy)
    results = read_json(copy / "results.json")
    results["policies"]["grpo"]["greedy_pass_at_1"]["ALL"]["correct"] += 1
    (copy / "results.json").write_text(json.dumps(results))
    assert not pipeline_compare.compare_run(copy, smoke_reference, "smoke")["counts_equal"]
    timings = read_json(copy / "timings.json")
    timings["finished_stages"] -= 1
    (copy / "timings.json").write_text(json.dumps(timings))
    with pytest.raises(ValueError, match="is not finished"):
        pipeline_compare.compare_run(copy, smoke_reference, "smoke")


@pytest.fixture(scope="module")
def side():
    return read_json(SIDE / "comparison.json")


def test_the_current_code_gives_the_recorded_counts_and_the_recorded_warm_start(side):
    assert side["counts"]["results.json"] == pipeline_compare._counts(
        read_json(TINY / "results.json")
    )
    assert side["counts"]["exercise/results.json"] == pipeline_compare._counts(
        read_json(TINY / "exercise" / "results.json")
    )
    assert side["counts_equal"] is True and all(side["resume_equal"].values())
    for mode in ("continuous", "interrupt", "resume"):  # bit for bit: Part II's lock holds
        recorded = read_json(TINY / "learning" / f"warmstart-{mode}.json")["final_model_digest"]
        assert side["branches"][f"warmstart-{mode}"]["final_digest"] == recorded
    grpo = [e for n, e in side["branches"].items() if "rewards_equal" in e]
    assert len(grpo) == 3 and all(e["rewards_equal"] for e in grpo)
    assert read_json(SIDE / "timings.json") == side["timings"]
    assert side["timings"]["finished_stages"] == side["timings"]["all_stages"]


def _quoted_speed(text: str) -> list[str]:
    match = re.search(r"<!-- speed -->(.+?)<!-- /speed -->", text, re.S)
    assert match, "the speed paragraph lost its <!-- speed --> markers"
    return re.findall(r"\d[\d,]*\.\d+", match.group(1))


@pytest.mark.parametrize("page", ["book/provenance.md"])
def test_the_speed_paragraph_quotes_the_recorded_comparison(side, page):
    elapsed = side["timings"]["elapsed_seconds"]
    first = side["first_recording"]["total_seconds"]
    expected = [
        f"{elapsed:.1f}",
        f"{side['timings']['total_seconds']:.1f}",
        f"{first:,.1f}",
        f"{first / elapsed:.1f}",
        f"{side['recorded_total_seconds']:.1f}",
        f"{side['speedup_against_record']:.1f}",
    ]
    assert _quoted_speed((repo_root() / page).read_text()) == expected


def test_the_readme_quotes_the_recorded_pipeline_time(side):
    match = re.search(
        r"<!-- main-job -->(.+?)<!-- /main-job -->", (repo_root() / "README.md").read_text(), re.S
    )
    assert match, "the README's main-job time lost its <!-- main-job --> markers"
    assert match.group(1) == f"{side['timings']['elapsed_seconds']:.1f} s"
