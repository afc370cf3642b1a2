"""The model labs' records against the same commands on one thread: the thread count changes
the time and nothing else, and the book's provenance appendix quotes the recorded times."""

import re

import pytest

from verifiable_grpo.core import files
from verifiable_grpo.core.config import repo_root, resolve
from verifiable_grpo.part3.smollm2 import records

ONE_THREAD = sorted(
    p.name.removesuffix("-metrics.json") for p in resolve(records.ONE_THREAD).glob("*-metrics.json")
)


def test_every_training_lab_has_its_one_thread_twin():
    assert {"sft", "lora", "sft-no-mask", "sft-no-row-init", "lora-no-row-init", "sft-full"} <= set(
        ONE_THREAD
    )


@pytest.mark.parametrize("name", ONE_THREAD)
def test_one_and_more_threads_give_the_same_record(name):
    comparison = records.thread_comparison(name)
    assert comparison["differ"] == []
    threads = {label: run["threads"] for label, run in comparison["runs"].items()}
    assert threads["1 thread"] == 1 and threads["recorded"] > 1


def test_a_changed_field_is_named(tmp_path, monkeypatch):
    record = records.load_recorded("lora")
    twin = tmp_path / "data" / "recorded" / "part3" / "one-thread"
    files.save_json(
        twin / "lora-metrics.json", {**record, "merged_parameters": 1, "training_seconds": 1.0}
    )
    files.save_json(twin.parent / "lora-metrics.json", record)
    monkeypatch.setenv("VERIFIABLE_GRPO_ROOT", str(tmp_path))
    assert records.thread_comparison("lora")["differ"] == ["merged_parameters"]


@pytest.mark.parametrize("page", ["book/provenance.md"])
def test_the_quick_paragraph_quotes_the_records(page):
    match = re.search(r"<!-- quick -->(.+?)<!-- /quick -->", (repo_root() / page).read_text(), re.S)
    assert match, "the QUICK timing paragraph lost its <!-- quick --> markers"
    sft, lora = (records.thread_comparison(n)["runs"] for n in ("sft", "lora"))
    expected = [
        sft["recorded"]["wall_seconds"],
        sft["recorded"]["training_seconds"],
        lora["recorded"]["wall_seconds"],
        lora["recorded"]["training_seconds"],
        sft["1 thread"]["wall_seconds"],
        lora["1 thread"]["wall_seconds"],
    ]
    assert re.findall(r"\d+\.\d+", match.group(1)) == [f"{x:.1f}" for x in expected]
    assert all(x <= 300 for x in expected[:4:2])  # the recorded QUICK runs met the 5 minutes
