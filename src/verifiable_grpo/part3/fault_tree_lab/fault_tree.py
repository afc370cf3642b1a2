"""The fault-tree reward exercise: score a model's tree by its structure, game it, repair it.

A reply is a JSON object with two keys. "top" names the top event; "events" maps each
name to an event, which is either a gate (type "gate", a "gate" kind of AND or OR and a
list of child names under "children") or a basic event (type "basic", a probability
under "p", a text "label", and optionally the "component" it models). A reply that does
not parse into that shape, or that loops back on itself, is malformed and earns 0.

First reward: the share of seven structural checks that hold. It is gamed by one OR gate
whose two children are the same basic event, labelled with every component's name.
Revised reward: the checks (now counting distinct children) weigh 60%, the share of
components that own a basic event through its "component" field weighs 40%, and 0.2 is
taken off when the tree has fewer basic events than there are components.
"""

from __future__ import annotations

import json

from verifiable_grpo.part3.fault_tree_lab.settings import FaultTreeSettings

CHECKS = (
    "top event is a gate",
    "every gate has two or more children",
    "every child exists",
    "the tree is acyclic",
    "every event is reachable from the top",
    "every probability lies in [0, 1]",
    "every component is named by a basic event",
)


class Malformed(ValueError):
    """The reply is not a well-formed fault tree."""


# --------------------------------------------------------------------------- parsing
def _validate_gate(name: str, spec: dict) -> None:
    if spec.get("gate") not in ("AND", "OR"):
        raise Malformed(f"gate {name!r} must be AND or OR")
    kids = spec.get("children")
    if not (isinstance(kids, list) and all(isinstance(kid, str) for kid in kids)):
        raise Malformed(f"gate {name!r} needs a list of child names")


def _validate_basic(name: str, spec: dict) -> None:
    probability = spec.get("p")
    # bool is an int subclass; True is not a probability
    if type(probability) is bool or not isinstance(probability, (int, float)):
        raise Malformed(f"basic event {name!r} needs a numeric 'p'")
    if not isinstance(spec.get("label"), str):
        raise Malformed(f"basic event {name!r} needs a text 'label'")


_VALIDATORS = {"gate": _validate_gate, "basic": _validate_basic}


def _validate(name: str, spec) -> None:
    if not isinstance(spec, dict):
        raise Malformed(f"event {name!r} must be an object")
    validator = _VALIDATORS.get(spec.get("type"))
    if validator is None:
        raise Malformed(f"event {name!r} has unknown type {spec.get('type')!r}")
    validator(name, spec)


def _kids(spec: dict) -> list[str]:
    """Child names of a gate; a basic event has none."""
    if spec["type"] != "gate":
        return []
    return spec.get("children", [])


def _find_cycle(events: dict) -> str | None:
    """A name on a directed cycle, or None. Depth-first with an explicit stack, started
    from every event so that loops away from the top are found too."""
    ON_PATH, FINISHED = 1, 2
    mark: dict[str, int] = {}
    for start in events:
        if start in mark:
            continue
        mark[start] = ON_PATH
        path = [(start, iter(_kids(events[start])))]
        while path:
            current, remaining = path[-1]
            nxt = next(remaining, None)
            if nxt is None:  # every child explored: leave the path
                mark[current] = FINISHED
                path.pop()
                continue
            if nxt not in events:  # a dangling name is a separate check
                continue
            seen = mark.get(nxt)
            if seen == ON_PATH:
                return nxt
            if seen is None:
                mark[nxt] = ON_PATH
                path.append((nxt, iter(_kids(events[nxt]))))
    return None


def parse_tree(reply: str) -> tuple[str, dict]:
    """(top name, events) of a well-formed reply; raises Malformed otherwise."""
    try:
        document = json.loads(reply)
    except (json.JSONDecodeError, TypeError) as err:
        raise Malformed(f"not JSON: {err}") from None
    if not isinstance(document, dict):
        raise Malformed("the reply must be a JSON object")
    events = document.get("events")
    if not (isinstance(events, dict) and events):
        raise Malformed("'events' must be a non-empty object")
    top = document.get("top")
    if not (isinstance(top, str) and top in events):
        raise Malformed("'top' must name one of the events")
    for name, spec in events.items():
        _validate(name, spec)
    looping = _find_cycle(events)
    if looping is not None:
        raise Malformed(f"cycle through {looping!r}")
    return top, events


# --------------------------------------------------------------------------- checks
def _reached_from(top: str, events: dict) -> set[str]:
    visited: set[str] = set()
    todo = [top]
    while todo:
        name = todo.pop()
        if name in events and name not in visited:
            visited.add(name)
            todo += _kids(events[name])
    return visited


def _by_kind(events: dict, kind: str) -> list[dict]:
    return [spec for spec in events.values() if spec["type"] == kind]


def _gate_is_wide_enough(gate: dict, distinct: bool) -> bool:
    kids = gate["children"]
    if distinct and len(set(kids)) != len(kids):
        return False
    return len(kids) >= 2


def _component_in_some_label(component: str, basics: list[dict]) -> bool:
    wanted = component.casefold()
    return any(wanted in spec["label"].casefold() for spec in basics)


def checks(components: list[str], reply: str, distinct_children: bool = False) -> list[bool]:
    """The seven structural checks, in the order of CHECKS (raises Malformed)."""
    top, events = parse_tree(reply)
    gates, basics = _by_kind(events, "gate"), _by_kind(events, "basic")
    names = set(events)
    return [
        events[top]["type"] == "gate",
        all(_gate_is_wide_enough(gate, distinct_children) for gate in gates),
        all(set(gate["children"]) <= names for gate in gates),
        True,  # acyclic: parse_tree refused every cycle already
        _reached_from(top, events) == names,
        all(0 <= spec["p"] <= 1 for spec in basics),
        all(_component_in_some_label(part, basics) for part in components),
    ]


# --------------------------------------------------------------------------- rewards
def initial_reward(components: list[str], reply: str) -> float:
    """The share of CHECKS that hold; 0 for a malformed reply."""
    try:
        results = checks(components, reply)
    except Malformed:
        return 0.0
    return sum(results) / len(results)


def revised_reward(components: list[str], reply: str) -> float:
    """max(0, 0.6 * share of checks (distinct children) + 0.4 * coverage - penalty), where
    coverage is the share of components with their own basic event ("component" field)
    and the penalty is 0.2 when basic events are fewer than components."""
    try:
        results = checks(components, reply, distinct_children=True)
    except Malformed:
        return 0.0
    basics = _by_kind(parse_tree(reply)[1], "basic")
    owned = [spec.get("component") for spec in basics]  # values need not be hashable
    coverage = sum(part in owned for part in components) / len(components) if components else 0.0
    too_few_events = len(basics) < len(components)
    score = 0.6 * sum(results) / len(results) + 0.4 * coverage - (0.2 if too_few_events else 0.0)
    return score if score > 0.0 else 0.0


# --------------------------------------------------------------------------- the exercise
COMPONENTS = "pump valve seal motor".split()


def _gate(kind: str, *kids: str) -> dict:
    return dict(type="gate", gate=kind, children=list(kids))


def _basic(probability: float, label: str, component: str | None = None) -> dict:
    event = {"type": "basic", "p": probability}
    if component is not None:
        event["component"] = component
    event["label"] = label
    return event


def _reply(top: str, events: dict) -> str:
    return json.dumps({"top": top, "events": events})


def fixtures() -> dict[str, str]:
    """The replies the exercise scores: the gamed tree, a genuine tree with two gates,
    and three malformed ones."""
    everything = " ".join(COMPONENTS) + " failure"
    gamed = {"G0": _gate("OR", "B1", "B1"), "B1": _basic(0.5, everything)}
    genuine = {"G0": _gate("OR", "G1", "B3", "B4"), "G1": _gate("AND", "B1", "B2")}
    for number, part in enumerate(COMPONENTS, start=1):
        genuine[f"B{number}"] = _basic(0.01 * number, f"{part} failure", part)
    return {
        "degenerate": _reply("G0", gamed),
        "two_gate": _reply("G0", genuine),
        "not_json": "not JSON",
        "empty": json.dumps({"top": "G0", "events": {}}, separators=(",", ":")),
        "cycle": _reply("G0", {"G0": _gate("OR", "G0", "G0")}),
    }


def run_exercise() -> dict:
    """Both rewards of every fixture."""
    replies = fixtures()
    scored = {"components": COMPONENTS, "initial": {}, "revised": {}}
    for name, text in replies.items():
        scored["initial"][name] = initial_reward(COMPONENTS, text)
        scored["revised"][name] = revised_reward(COMPONENTS, text)
    return scored


def run_lab(settings: FaultTreeSettings) -> dict:
    """The lab's entry point (part3/labs.py): the exercise, which has no settings."""
    return run_exercise()
