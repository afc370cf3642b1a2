"""The diagnostic table: every row points at a chapter that exists and is in the book, and
its evidence is the recorded runs' numbers."""

from verifiable_grpo.core.config import resolve
from verifiable_grpo.part3 import troubleshooting as ts


def test_rows_point_at_chapters_in_the_book():
    toc = resolve("_toc.yml").read_text()
    rows = ts.diagnostic_rows()
    assert len(rows) == len(ts.FAILURE_MODES) >= 5
    for row in rows:
        assert resolve(row["chapter"] + ".ipynb").is_file(), row["chapter"]
        assert f"file: {row['chapter']}\n" in toc, row["chapter"]


def test_evidence_is_read_from_the_records():
    evidence = {row["symptom"]: row["evidence"] for row in ts.diagnostic_rows()}
    assert "75% at 150" in evidence["flat reward, no learning"]
    assert (
        "accepts 0.976, exact 0.778" in evidence["reward rises, quality does not (reward hacking)"]
    )
    assert "1.264 after off-policy DPO" in evidence["length drifts (collapse or growth)"]
    assert "KL 2.375" in evidence["KL grows while the task does not improve"]
    assert "-0.926" in evidence["preferred answers become less likely"]
    assert "stops 0.62" in evidence["format failures: no stop, broken template"]
