"""Exercise (Part III, fault-tree reward): the probability of a tree's top event.

The learner writes fn(top, events) -> float: events maps a name to a gate
{"type": "gate", "gate": "AND" | "OR", "children": [...]} or a basic event
{"type": "basic", "p": ...}; basic events fail independently. An AND gate fails with
the product of its children's probabilities, an OR gate with 1 - prod(1 - p). References
are written out by hand here.
"""

from __future__ import annotations

import json
import math

from verifiable_grpo.exercises.checking import Case, run_cases
from verifiable_grpo.part3.fault_tree_lab.fault_tree import fixtures

OR_AS_SUM = (
    "looks like OR as the sum of its children (the rare-event approximation): it counts "
    "coinciding failures twice; use 1 - prod(1 - p)"
)
AND_AS_MIN = "looks like AND as the smallest child: independent failures multiply"


def _probability(name, events, or_rule=None, and_rule=None):
    event = events[name]
    if event["type"] == "basic":
        return event["p"]
    kids = [_probability(k, events, or_rule, and_rule) for k in event["children"]]
    if event["gate"] == "AND":
        return (and_rule or math.prod)(kids)
    return (or_rule or (lambda ps: 1 - math.prod(1 - p for p in ps)))(kids)


def _case(label, top, events):
    return Case(
        f"{label}: top {top}, events {json.dumps(events)}",
        lambda fn: float(fn(top, json.loads(json.dumps(events)))),
        _probability(top, events),
        tolerance=1e-12,
        mistakes={
            OR_AS_SUM: _probability(top, events, or_rule=sum),
            AND_AS_MIN: _probability(top, events, and_rule=min),
        },
    )


def cases() -> list[Case]:
    basic = {"A": {"type": "basic", "p": 0.5}, "B": {"type": "basic", "p": 0.2}}
    genuine = json.loads(fixtures()["two_gate"])
    return [
        _case(
            "one OR", "T", {**basic, "T": {"type": "gate", "gate": "OR", "children": ["A", "B"]}}
        ),
        _case(
            "one AND", "T", {**basic, "T": {"type": "gate", "gate": "AND", "children": ["A", "B"]}}
        ),
        _case("the chapter's genuine tree", genuine["top"], genuine["events"]),
    ]


def check_top_event_probability(fn, verbose: bool = True):
    """Run the hidden cases against fn(top: str, events: dict) -> float."""
    return run_cases("top-event probability", fn, cases(), verbose)
