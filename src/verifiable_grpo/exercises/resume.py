"""Exercise (chapter 7): do two saved states match bit for bit?

The learner writes fn(state_a, state_b) -> bool for nested dicts/lists of tensors, floats,
ints and strings: True only when every value is identical to the bit (tensor dtype, shape
and bytes; floats by their bits), ignoring any key named "timings" at any depth. The
expected answers come from the package's compare_states, whose rules have their own tests.
"""

from __future__ import annotations

import copy
import math

import torch

from verifiable_grpo.core.checkpoint import compare_states
from verifiable_grpo.exercises.checking import Case, compare_exact, exact_distance, run_cases


def _state() -> dict:
    generator = torch.Generator().manual_seed(0)
    return {
        "model": {
            "layer.weight": torch.randn(3, 4, generator=generator),
            "layer.bias": torch.zeros(4),
        },
        "optimizer": {
            "step": 12,
            "exp_avg": torch.randn(4, generator=generator, dtype=torch.float64),
        },
        "schedule": {"learning_rate": 1e-5, "update": 12},
        "rng": {"torch": torch.Generator().manual_seed(1).get_state()},
        "consumed": ["r-0001", "r-0002"],
        "timings": {"seconds": 1.25},
    }


def _changed(edit) -> dict:
    state = _state()
    edit(state)
    return state


def _set(path, value):
    def edit(state):
        target = state
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value(target[path[-1]]) if callable(value) else value

    return edit


def _ulp(tensor):
    out = tensor.clone()
    flat = out.view(-1)
    flat[0] = torch.nextafter(flat[0], torch.tensor(math.inf, dtype=flat.dtype))
    return out


def _flip_byte(rng_state):
    out = rng_state.clone()
    out[100] = (int(out[100]) + 1) % 256
    return out


PAIRS = [
    ("an exact copy", lambda s: None, "an identical state must match"),
    (
        "a weight one ulp larger",
        _set(("model", "layer.weight"), _ulp),
        "allclose/isclose hide a one-ulp difference: compare the bytes",
    ),
    (
        "a bias of -0.0 instead of 0.0",
        _set(("model", "layer.bias"), lambda t: -t),
        "0.0 == -0.0 is True but the bits differ: compare the bytes",
    ),
    (
        "the same weights in float64",
        _set(("model", "layer.weight"), lambda t: t.double()),
        "equal values of another dtype are another state",
    ),
    (
        "only the timings differ",
        _set(("timings", "seconds"), 9.0),
        "wall-clock timings can never match across processes: ignore the key 'timings'",
    ),
    (
        "a timing nested in another section",
        _set(("schedule", "timings"), {"seconds": 3.0}),
        "ignore 'timings' at any depth",
    ),
    (
        "one more optimiser key",
        _set(("optimizer", "exp_avg_sq"), torch.ones(4)),
        "a key present in one state only is a difference",
    ),
    (
        "one byte of the RNG state",
        _set(("rng", "torch"), _flip_byte),
        "the RNG state decides every later sample: it must match too",
    ),
    (
        "a learning rate one ulp larger",
        _set(("schedule", "learning_rate"), lambda v: math.nextafter(v, 1.0)),
        "python floats are compared by their bits too",
    ),
    (
        "one consumed rollout more",
        _set(("consumed",), lambda v: v + ["r-0003"]),
        "a rollout consumed twice (or lost) is a difference",
    ),
]


def _nan_pair():
    a, b = _state(), _state()
    a["model"]["layer.bias"] = torch.tensor([float("nan"), 1.0])
    b["model"]["layer.bias"] = torch.tensor([float("nan"), 1.0])
    return a, b


def cases() -> list[Case]:
    out = []
    for label, edit, hint in PAIRS:
        a, b = _state(), _changed(edit)
        want = compare_states(a, b) == []
        out.append(
            Case(
                f"{label}: should match = {want}",
                lambda fn, a=a, b=b: bool(fn(copy.deepcopy(a), copy.deepcopy(b))),
                want,
                compare=compare_exact,
                distance=exact_distance,
                mistakes={hint: not want},
            )
        )
    a, b = _nan_pair()
    out.append(
        Case(
            "the same NaN in both: should match = True",
            lambda fn: bool(fn(copy.deepcopy(a), copy.deepcopy(b))),
            compare_states(a, b) == [],
            compare=compare_exact,
            distance=exact_distance,
            mistakes={"NaN != NaN as values, but the bits are the same: compare bytes": False},
        )
    )
    return out


def check_resume(fn, verbose: bool = True):
    """Run the hidden cases against fn(state_a, state_b) -> True when they match bit for bit."""
    return run_cases("resume check", fn, cases(), verbose)
