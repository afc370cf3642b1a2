import pytest

from verifiable_grpo.book.notebook import Table, fmt


def test_table_text_and_html_agree():
    table = Table(["policy", "rate"], [["sft", 0.08], ["grpo", 0.015]], title="pass@1")
    text = repr(table).splitlines()
    assert text[0] == "pass@1"
    assert text[1].split() == ["policy", "rate"]
    assert text[3].split() == ["sft", "0.080"] and text[4].split() == ["grpo", "0.015"]
    html = table._repr_html_()
    assert html.count("<tr>") == 3 and "<td>0.015</td>" in html and "<caption>pass@1" in html


def test_table_rejects_ragged_rows():
    with pytest.raises(ValueError, match="2 cells for 3 columns"):
        Table(["a", "b", "c"], [[1, 2]])


def test_fmt_rounds_floats_only():
    assert fmt(0.123456) == "0.123" and fmt(3) == "3" and fmt(True) == "True"
    assert fmt(None) == "None" and fmt(1.0, 1) == "1.0"
    assert fmt(-1e-9) == "0.000" and fmt(-0.0) == "0.000" and fmt(-0.5) == "-0.500"


def test_table_escapes_html():
    assert "&lt;b&gt;" in Table(["x"], [["<b>"]])._repr_html_()
