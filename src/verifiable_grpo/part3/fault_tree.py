"""The fault-tree reward exercise: a structural checker, how it is gamed, and a repair.

A reply is JSON {"top": NAME, "events": {NAME: EVENT}}; an event is a gate
{"type": "gate", "gate": "AND" | "OR", "children": [NAME, ...]} or a basic event
{"type": "basic", "p": probability, "label": text, optionally "component": name}.
Malformed input (not JSON, wrong types, unknown event kinds, a cycle) scores 0.

The first reward is the fraction of seven structural checks that pass. A one-gate tree
with a duplicated child and a single basic event whose label names every component passes
all seven. The revised reward counts distinct children, gives 40% weight to components
that have their own basic event (an explicit `component` field, not a word in a label),
and subtracts 0.2 when there are fewer basic events than components.
"""
from __future__ import annotations

import json

CHECKS = ("top event is a gate", "every gate has two or more children",
          "every child exists", "the tree is acyclic", "every event is reachable from the top",
          "every probability lies in [0, 1]", "every component is named by a basic event")


class Malformed(ValueError):
    """The reply is not a well-formed fault tree."""


def parse_tree(reply: str) -> tuple[str, dict]:
    try:
        tree = json.loads(reply)
    except (json.JSONDecodeError, TypeError) as err:
        raise Malformed(f"not JSON: {err}") from None
    if not isinstance(tree, dict):
        raise Malformed("the reply must be a JSON object")
    events, top = tree.get("events"), tree.get("top")
    if not isinstance(events, dict) or not events:
        raise Malformed("'events' must be a non-empty object")
    if not isinstance(top, str) or top not in events:
        raise Malformed("'top' must name one of the events")
    for name, event in events.items():
        _check_event(name, event)
    _reject_cycles(events)
    return top, events


def _check_event(name: str, event) -> None:
    if not isinstance(event, dict):
        raise Malformed(f"event {name!r} must be an object")
    kind = event.get("type")
    if kind == "gate":
        children = event.get("children")
        if event.get("gate") not in ("AND", "OR"):
            raise Malformed(f"gate {name!r} must be AND or OR")
        if not isinstance(children, list) or not all(isinstance(c, str) for c in children):
            raise Malformed(f"gate {name!r} needs a list of child names")
    elif kind == "basic":
        p = event.get("p")
        if isinstance(p, bool) or not isinstance(p, (int, float)):
            raise Malformed(f"basic event {name!r} needs a numeric 'p'")
        if not isinstance(event.get("label"), str):
            raise Malformed(f"basic event {name!r} needs a text 'label'")
    else:
        raise Malformed(f"event {name!r} has unknown type {kind!r}")


def _children(event: dict) -> list[str]:
    return event.get("children", []) if event["type"] == "gate" else []


def _reject_cycles(events: dict) -> None:
    """Iterative depth-first search from every event (disconnected parts included)."""
    state: dict[str, str] = {}                    # "open" while on the path, then "done"
    for root in events:
        if root in state:
            continue
        stack = [(root, iter(_children(events[root])))]
        state[root] = "open"
        while stack:
            name, pending = stack[-1]
            child = next(pending, None)
            if child is None:
                state[name] = "done"
                stack.pop()
            elif child in events:
                if state.get(child) == "open":
                    raise Malformed(f"cycle through {child!r}")
                if child not in state:
                    state[child] = "open"
                    stack.append((child, iter(_children(events[child]))))


def _reachable(top: str, events: dict) -> set[str]:
    seen, frontier = set(), [top]
    while frontier:
        name = frontier.pop()
        if name in seen or name not in events:
            continue
        seen.add(name)
        frontier.extend(_children(events[name]))
    return seen


def checks(components: list[str], reply: str, distinct_children: bool = False) -> list[bool]:
    """The seven structural checks, in CHECKS order (raises Malformed)."""
    top, events = parse_tree(reply)
    gates = [e for e in events.values() if e["type"] == "gate"]
    basics = [e for e in events.values() if e["type"] == "basic"]
    if distinct_children:
        enough = all(len(set(g["children"])) == len(g["children"]) >= 2 for g in gates)
    else:
        enough = all(len(g["children"]) >= 2 for g in gates)
    return [events[top]["type"] == "gate", enough,
            all(c in events for g in gates for c in g["children"]),
            True,                                   # parse_tree already refused cycles
            _reachable(top, events) == set(events),
            all(0 <= b["p"] <= 1 for b in basics),
            all(any(c.casefold() in b["label"].casefold() for b in basics) for c in components)]


def initial_reward(components: list[str], reply: str) -> float:
    """Fraction of the seven checks that pass; 0 for a malformed reply."""
    try:
        passed = checks(components, reply)
    except Malformed:
        return 0.0
    return sum(passed) / len(passed)


def revised_reward(components: list[str], reply: str) -> float:
    """max(0, 0.6 * checks + 0.4 * coverage - 0.2 [fewer basic events than components])."""
    try:
        passed = checks(components, reply, distinct_children=True)
    except Malformed:
        return 0.0
    basics = [e for e in parse_tree(reply)[1].values() if e["type"] == "basic"]
    covered = sum(any(b.get("component") == c for b in basics) for c in components)
    coverage = covered / len(components) if components else 0.0
    penalty = 0.2 if len(basics) < len(components) else 0.0
    return max(0.0, 0.6 * sum(passed) / len(passed) + 0.4 * coverage - penalty)


# --------------------------------------------------------------------------- fixtures
COMPONENTS = ["pump", "valve", "seal", "motor"]


def fixtures() -> dict[str, str]:
    """The exercise's replies: a gamed tree, a genuine two-gate tree, and three failures."""
    gamed = {"top": "G0", "events": {
        "G0": {"type": "gate", "gate": "OR", "children": ["B1", "B1"]},
        "B1": {"type": "basic", "p": 0.5, "label": "pump valve seal motor failure"}}}
    events = {"G0": {"type": "gate", "gate": "OR", "children": ["G1", "B3", "B4"]},
              "G1": {"type": "gate", "gate": "AND", "children": ["B1", "B2"]}}
    for i, component in enumerate(COMPONENTS, 1):
        events[f"B{i}"] = {"type": "basic", "p": 0.01 * i, "component": component,
                           "label": f"{component} failure"}
    cycle = {"top": "G0", "events": {"G0": {"type": "gate", "gate": "OR",
                                            "children": ["G0", "G0"]}}}
    return {"degenerate": json.dumps(gamed), "two_gate": json.dumps({"top": "G0", "events": events}),
            "not_json": "not JSON", "empty": '{"top":"G0","events":{}}', "cycle": json.dumps(cycle)}


def run_exercise() -> dict:
    replies = fixtures()
    return {"components": COMPONENTS,
            "initial": {name: initial_reward(COMPONENTS, r) for name, r in replies.items()},
            "revised": {name: revised_reward(COMPONENTS, r) for name, r in replies.items()}}
