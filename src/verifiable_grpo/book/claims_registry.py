"""Every claim of the book, by chapter: name -> (page, anchor, expected numbers)."""

from __future__ import annotations

from verifiable_grpo.book import (
    claims_findings,
    claims_part1,
    claims_part1_taught,
    claims_part1_working,
    claims_part2,
    claims_part3,
    claims_part3_later,
)

CLAIMS = {
    **claims_part1.CLAIMS,
    **claims_part1_taught.CLAIMS,
    **claims_part1_working.CLAIMS,
    **claims_part2.CLAIMS,
    **claims_part3.CLAIMS,
    **claims_part3_later.CLAIMS,
    **claims_findings.CLAIMS,
}

# Sentences that single out rows of a table, checked against every row (claims_rows.py).
ROW_CLAIMS = {**claims_part2.ROW_CLAIMS}

# Sentences that use a singling-out phrase without reading a table, with the reason.
SINGLING_DECLARED = {
    "notebooks/part2/02_placebos_and_cost.py": {
        "the one change that": "a mechanism (only DAPO's sampler acts on policy), not a table",
    },
    "book/how-to-extend.md": {
        "the only arm that moved": "the recipe's example of the phrase, not a reading",
    },
    "notebooks/part2/04_results.py": {
        "the two arms differ only by float noise": "a mechanism: one update, ratio 1",
    },
    "notebooks/part2/07_newer_objectives.py": {
        "as two runs of one objective differ": "a size of noise, not a reading of rows",
    },
}
