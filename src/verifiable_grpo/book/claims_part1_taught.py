"""Chapter I.13, "What taught it": its sentences tied to the band study's record, read
through part1/band_reading.py (the same functions the chapter's tables call)."""

from __future__ import annotations

from verifiable_grpo.book.claims import fixed, signed
from verifiable_grpo.part1 import band_reading, studies

TAUGHT_PAGE = "notebooks/part1/13_what_taught_it.py"


def _band() -> dict:
    return studies.recorded("band")


def _headline():
    sample = _band()["paired"]["sample"]
    return [fixed(sample["first_rate"]), fixed(sample["second_rate"])]


def _twins():
    out = []
    for row in band_reading.twin_table(_band()):
        out += [str(row["problems"]), fixed(row["before"]), fixed(row["after"])]
    return out


def _pass_at_k():
    table = band_reading.pass_at_k_table(_band())
    last = table["gain"][-1]
    return [
        *[fixed(r["value"]) for r in table["before"]],
        *[fixed(r["value"]) for r in table["after"]],
        signed(table["gain"][0]["difference"]),
        signed(last["difference"]),
        signed(last["low"]),
        signed(last["high"]),
    ]


def _breakdown():
    breakdown = band_reading.answer_breakdown(_band())
    before, after = breakdown["before"], breakdown["after"]
    extra, repairs = band_reading.format_repairs_bound(_band())
    return [
        str(before["malformed"]),
        str(after["malformed"]),
        f"{sum(before.values()):,}",
        f"{before['wrong number']:,}",
        str(after["wrong number"]),
        str(extra),
        str(repairs),
    ]


CLAIMS = {
    "I.13 headline": (TAUGHT_PAGE, "The previous chapter trained SmolLM2", _headline),
    "I.13 twins": (TAUGHT_PAGE, "**Twins.**", _twins),
    "I.13 pass@k": (TAUGHT_PAGE, "**pass@k.**", _pass_at_k),
    "I.13 format or arithmetic": (TAUGHT_PAGE, "**Format or arithmetic.**", _breakdown),
}
