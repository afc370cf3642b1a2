import os
from pathlib import Path

import pytest

from verifiable_grpo.book.notebook import Table, fmt, round_numbers, rounded_prints, significant


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


def test_table_digits_per_column():
    table = Table(["lr", "loss", "n"], [[0.0002, 1.4434937, 69]], digits=[5, 3, 0])
    assert repr(table).splitlines()[2].split() == ["0.00020", "1.443", "69"]
    with pytest.raises(ValueError, match="2 digits for 3 columns"):
        Table(["a", "b", "c"], [[1, 2, 3]], digits=[1, 2])


def test_significant_spans_magnitudes():
    assert significant(0.29315185) == "0.29" and significant(0.0001259315) == "0.00013"
    assert significant(0.04448) == "0.044" and significant(0.30) == "0.30"
    assert significant(14.58, 3) == "14.6" and significant(14.58) == "15"
    assert significant(123.4) == "120" and significant(-0.2527) == "-0.25"
    assert significant(5.2e-5) == "5.2e-05" and significant(0.0) == "0"
    assert significant(0.0015320, 1) == "0.002" and significant(float("nan")) == "nan"


def test_significant_prints_rounding_noise_as_a_bound():
    # A KL that is zero up to float noise: the noise (and its sign) differs between CPUs.
    assert significant(1.05e-10, below=1e-6) == "<1e-6"
    assert significant(-5.0e-8, below=1e-6) == "<1e-6"
    assert significant(0.00012593, below=1e-6) == "0.00013"
    assert significant(3e-5, below=2.5e-4) == "<0.00025"


def test_round_numbers_rounds_live_decimals_only():
    line = "warmstart epoch 1/3: validation NLL 1.4231"
    assert round_numbers(line) == "warmstart epoch 1/3: validation NLL 1.423"
    assert (
        round_numbers("loss 1.44 after 6 updates, lr 2e-4") == "loss 1.44 after 6 updates, lr 2e-4"
    )
    assert round_numbers("NLL 1.3745 and 1.3755") == "NLL 1.374 and 1.376"  # half to even
    assert round_numbers("drift -0.00004") == "drift 0.000"  # no "-0.000"
    # versions, digests and words with digits are not numbers
    text = "torch 2.13.0, weights 1a43.81b25d87, v1.23456, file x1.5"
    assert round_numbers(text) == text


def test_round_numbers_scientific_notation():
    message = "max |difference| 3.000e-04 > tolerance 0.0002 (response r-00)"
    assert (
        round_numbers(message, decimals=4)
        == "max |difference| 3.0e-04 > tolerance 0.0002 (response r-00)"
    )
    assert round_numbers("9.996e-04", figures=2) == "1.0e-03"
    assert round_numbers("-1.234E+05", figures=3) == "-1.23e+05"


def test_rounded_prints_keeps_lines_visible(capsys):
    with rounded_prints(decimals=2):
        print("NLL 1.4231", end="")
        print(" then 1.3745\nnext 0.5")
        print("tail 2.345", end="")
    assert capsys.readouterr().out == "NLL 1.42 then 1.37\nnext 0.5\ntail 2.34"


def test_rounded_prints_flushes_when_the_block_raises(capsys):
    with pytest.raises(RuntimeError):
        with rounded_prints():
            print("epoch 1: 1.23456", end="")
            raise RuntimeError("stop")
    assert capsys.readouterr().out == "epoch 1: 1.235"


def test_live_profile_and_temporary_folders_go_with_the_kernel(tmp_path):
    """choose_profile: smoke on a CPU, the profile named in the environment when a test
    stands in for a GPU; every tempfile folder a chapter makes is removed at exit."""
    import subprocess
    import sys

    from verifiable_grpo.core.config import repo_root

    script = (
        "import tempfile, torch; from verifiable_grpo.book import notebook as n; "
        "print(n.choose_profile(), n.show_progress()); print(tempfile.mkdtemp(prefix='run-'))"
    )
    env = {**os.environ, "TMPDIR": str(tmp_path), "PYTHONPATH": str(repo_root() / "src")}
    env.pop("VERIFIABLE_GRPO_LIVE_PROFILE", None)
    plain = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    assert plain[:2] == ["smoke", "False"]
    made = Path(plain[2])
    assert made.parent.parent == tmp_path and made.parent.name.startswith("verifiable-grpo-")
    assert not made.exists() and not made.parent.exists()  # gone with the process
    env["VERIFIABLE_GRPO_LIVE_PROFILE"] = "qwen-live"
    chosen = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    assert chosen[:2] == ["qwen-live", "True"]
