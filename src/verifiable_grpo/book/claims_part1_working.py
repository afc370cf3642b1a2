"""Chapter I.14, "A model that shows its working": its sentences tied to the recorded
thinking screen, read through part1/thinking_reading.py (the functions its tables call)."""

from __future__ import annotations

from verifiable_grpo.book.claims import fixed
from verifiable_grpo.part1 import thinking_reading, thinking_screen
from verifiable_grpo.task.thinking_template import ANSWER_ONLY, THINK_THEN_ANSWER
from verifiable_grpo.training import reward_terms

WORKING_PAGE = "notebooks/part1/14_shows_its_working.py"


def _screen() -> dict:
    return thinking_screen.recorded()


def _row(rows: list[dict], family: str, template: str) -> dict:
    return next(r for r in rows if r["family"] == family and r["template"] == template)


def _screen_verdict():
    rows = thinking_reading.screen_table(_screen())
    carry_answer = _row(rows, "CarrySums-v1", ANSWER_ONLY)
    carry_think = _row(rows, "CarrySums-v1", THINK_THEN_ANSWER)
    three = [_row(rows, "ThreeSmall-v1", t) for t in (ANSWER_ONLY, THINK_THEN_ANSWER)]
    return [
        fixed(carry_answer["per_draw"]),
        fixed(carry_think["per_draw"]),
        *[fixed(r["per_draw"]) for r in three],
        str(_screen()["screen"]["problems"]),
        fixed(carry_think["per_draw"]),
        fixed(carry_think["low"]),
        fixed(carry_think["high"]),
        f"{carry_think['tokens']:.1f}",
        f"{carry_answer['tokens']:.1f}",
        f"{carry_think['seconds']:.0f}",
        f"{carry_answer['seconds']:.0f}",
    ]


def _screen_size():
    screen = _screen()
    limits = screen["max_new_tokens"]
    return [
        str(screen["screen"]["problems"]),
        str(screen["screen"]["draws"]),
        str(limits[ANSWER_ONLY]),
        str(limits[THINK_THEN_ANSWER]),
    ]


def _weights():
    terms = reward_terms.REWARD_TERMS
    return [f"{terms['answer'].weight:g}", f"{terms['format'].weight:g}"]


def _hacks():
    rows = thinking_reading.detector_table(_screen())
    out = []
    for family in thinking_screen.FAMILIES:
        think = _row(rows, family, THINK_THEN_ANSWER)
        shares = think["shares"]
        out += [fixed(think["format"]), fixed(shares["unclosed_block"]), fixed(shares["truncated"])]
    return out


def _groups():
    out = []
    for row in thinking_reading.group_table(_screen()):
        out += [fixed(row["answer_silent"]), fixed(row["format_only"])]
    return out


CLAIMS = {
    "I.14 screen size": (WORKING_PAGE, "A family is worth training on only if", _screen_size),
    "I.14 screen": (WORKING_PAGE, "**The screen.**", _screen_verdict),
    "I.14 weights": (WORKING_PAGE, "The think-then-answer arm is paid by two", _weights),
    "I.14 hacks on the screen": (WORKING_PAGE, "**Hacks on the screen.**", _hacks),
    "I.14 groups": (WORKING_PAGE, "**Where the signal would come from.**", _groups),
}
