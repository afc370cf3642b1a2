"""Part III's sentences that quote a recorded number, tied to the records they quote."""

from __future__ import annotations

from verifiable_grpo.book.claims import fixed


def _group_size_bill():
    mixed = {g: 1 - 0.9**g - 0.1**g for g in (8, 4)}
    return [fixed(mixed[8], 2), fixed(mixed[4], 2), f"{100 * mixed[4] / mixed[8]:.0f}"]


CLAIMS = {
    "III.10 group size": (
        "notebooks/part3/10_case_study_bill.py",
        "Every GRPO stage is proportional to the number of responses",
        _group_size_bill,
    ),
}
