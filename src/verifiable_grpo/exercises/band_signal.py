"""Exercise (chapter "GRPO on a pretrained model"): how many groups will carry a signal?

Each problem i has its own per-draw success p_i. A group of G independent draws for it has
rewards that differ (a learning signal) with probability 1 - p_i^G - (1 - p_i)^G, so the
expected share over the problems is the MEAN of that quantity over i. The learner writes
fn(rates, group_size) -> that share, for a list of per-problem rates.
"""

from __future__ import annotations

from verifiable_grpo.exercises.checking import Case, run_cases

POOLED = (
    "you averaged the rates first and used one pooled p: the share is a mean over problems "
    "of 1 - p^G - (1 - p)^G, and it is not a linear function of p"
)
ALL_RIGHT_FORGOTTEN = (
    "only the all-wrong groups are removed: an all-right group (probability p^G) is constant "
    "too and carries no signal"
)
CONSTANT_SHARE = "that is the share of constant groups; the question asks for informative ones"


def _share(p: float, g: int) -> float:
    return 1.0 - p**g - (1.0 - p) ** g


def informative_share(rates, group_size: int) -> float:
    return sum(_share(p, group_size) for p in rates) / len(rates)


def cases() -> list[Case]:
    out = []
    for rates, g in (
        ([0.5, 0.5], 2),
        ([0.0, 0.0, 0.75, 0.25], 8),
        ([0.1] * 5, 4),
        ([0.0, 1.0, 0.5], 8),
        ([0.02, 0.2, 0.9, 0.05, 0.0, 0.4], 8),
    ):
        want = informative_share(rates, g)
        pooled = _share(sum(rates) / len(rates), g)
        mistakes = {
            POOLED: pooled,
            ALL_RIGHT_FORGOTTEN: sum(1.0 - (1.0 - p) ** g for p in rates) / len(rates),
            CONSTANT_SHARE: 1.0 - want,
        }
        out.append(
            Case(
                f"rates {rates}, G = {g}",
                lambda fn, rates=rates, g=g: fn(list(rates), g),
                want,
                tolerance=1e-12,
                mistakes={h: v for h, v in mistakes.items() if abs(v - want) > 1e-6},
            )
        )
    return out


def check_informative_share(fn, verbose: bool = True):
    """Run the hidden cases against fn(rates, group_size) -> expected share of groups with
    a learning signal."""
    return run_cases("groups with a signal", fn, cases(), verbose)
