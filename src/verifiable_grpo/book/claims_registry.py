"""Every claim of the book, by chapter: name -> (page, anchor, expected numbers)."""

from __future__ import annotations

from verifiable_grpo.book import (
    claims_part1,
    claims_part1_taught,
    claims_part2,
    claims_part3,
    claims_part3_later,
)

CLAIMS = {
    **claims_part1.CLAIMS,
    **claims_part1_taught.CLAIMS,
    **claims_part2.CLAIMS,
    **claims_part3.CLAIMS,
    **claims_part3_later.CLAIMS,
}
