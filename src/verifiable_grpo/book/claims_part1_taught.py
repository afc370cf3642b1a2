"""Chapter I.13, "What taught it": its sentences tied to the band study's record, read
through part1/band_reading.py (the same functions the chapter's tables call)."""

from __future__ import annotations

from verifiable_grpo.book.claims import fixed, signed
from verifiable_grpo.part1 import (
    band_reading,
    control_declaration,
    control_reading,
    control_study,
    studies,
)

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


def _first_half():
    halves = control_reading.halves_recorded()
    first = halves["first"]
    runs = first["runs"]
    base = control_reading.instruct_rate(halves)
    out = [fixed(base)]
    for name in ("verifier-1234", "random-1234", "format-1234"):
        out += [fixed(runs[name]["per_draw"]), signed(runs[name]["per_draw"] - base)]
    instruct, shaped = first["instruct"]["failures"], runs["format-1234"]["failures"]
    total = sum(instruct.values())
    return [
        *out,
        str(instruct["format"]),
        str(shaped["format"]),
        f"{total:,}",
        str(instruct["right"]),
        str(shaped["right"]),
    ]


def _fifteen():
    halves = control_reading.halves_recorded()
    run = control_reading.fifteen_minute_run(halves, control_declaration.load())
    gain = run["gain"]
    iterations = control_declaration.load()["budget"]["iterations"]
    return [
        signed(gain["difference"]),
        signed(gain["low"]),
        signed(gain["high"]),
        f"{run['wall_seconds'] / 60:.1f}",
        f"{run['train_seconds'] / 60:.1f}",
        f"{run['score_seconds'] / 60:.1f}",
        f"{run['train_seconds'] / iterations:.1f}",
        f"{_band()['train_seconds'] / _band()['setting']['iterations']:.1f}",
    ]


def _both_halves():
    combined = control_study.recorded("controls")
    analysis = combined["analysis"]
    out = []
    for arm in analysis["arms"]:
        out += [fixed(arm["per_draw"]), fixed(arm["min"]), fixed(arm["max"])]
    out.append(fixed(analysis["instruct_per_draw"]))
    order = ("verifier - random", "verifier - format", "random - instruct", "format - instruct")
    for name in order:
        found = control_reading.contrast(combined, name)
        out += [signed(found["difference"]), signed(found["low"]), signed(found["high"])]
    return out


CLAIMS = {
    "I.13 headline": (TAUGHT_PAGE, "The previous chapter trained SmolLM2", _headline),
    "I.13 twins": (TAUGHT_PAGE, "**Twins.**", _twins),
    "I.13 pass@k": (TAUGHT_PAGE, "**pass@k.**", _pass_at_k),
    "I.13 format or arithmetic": (TAUGHT_PAGE, "**Format or arithmetic.**", _breakdown),
    "I.13 controls, first half": (TAUGHT_PAGE, "**First half.**", _first_half),
    "I.13 the 15-minute run": (TAUGHT_PAGE, "**The 15-minute run.**", _fifteen),
    "I.13 both halves": (TAUGHT_PAGE, "**Both halves.**", _both_halves),
}
