"""The independent verifier of StockArithmetic-v1: an exact solver and a strict JSON check.

The reward never depends on a model. The solver computes the answer from the structured
problem; the generated text is only ever parsed with `json.loads` (never executed), and it
earns reward 1 only when it is exactly one complete JSON object holding exactly the
integer field `final_stock`, equal to the solver's answer, and the generation ended on EOS.

Stated choices (each has a test):
- Whitespace that JSON itself allows (space, tab, LF, CR) may surround the object, as
  `json.loads` permits; any other character outside the object (prose, Markdown fences,
  a second object, a byte-order mark, a non-breaking space) makes the response invalid.
- `-0` is a JSON integer literal and reads as 0; `-0.0`, `15.0`, `1.5e1` are floats and
  are rejected, whatever their value.
- The 256-character limit counts Python characters of the decoded text, whitespace included.
"""

from __future__ import annotations

import json
import random

ANSWER_KEY = "final_stock"
MAX_RESPONSE_CHARS = 256
MAX_FINAL_STOCK = 300  # 100 + 100 + 100: the largest stock an OOD100 problem can reach
MAX_OPERAND = 100
PROBLEM_KEYS = ("initial", "deliveries", "withdrawals")
GENERATOR_MAXIMA = (50, 100)  # the ID50 and OOD100 operand ranges

# Reasons a response is invalid (None when valid).
COMPLETION_WITHOUT_EOS = "completion_without_eos"
OVERSIZED_OR_NONTEXT = "oversized_or_nontext"
INVALID_JSON_SCHEMA = "invalid_json_schema"
UNDECODABLE_TOKEN = "undecodable_token"


# ---------------------------------------------------------------------------------------
# The problem and its solver
# ---------------------------------------------------------------------------------------
def _check_operand(value, where: str) -> None:
    # bool is a subclass of int in Python; a problem with True in it is malformed.
    if type(value) is not int:
        raise ValueError(f"{where} must be an integer (not bool/float/str), got {value!r}")
    if not 0 <= value <= MAX_OPERAND:
        raise ValueError(f"{where} must be in 0..{MAX_OPERAND}, got {value}")


def _check_movements(problem: dict, key: str) -> list[int]:
    values = problem[key]
    if type(values) is not list:
        raise ValueError(f"{key} must be a list of two integers, got {type(values).__name__}")
    if len(values) != 2:
        raise ValueError(f"{key} must hold exactly two movements, got {len(values)}")
    for index, value in enumerate(values):
        _check_operand(value, f"{key}[{index}]")
    return values


def compute_final_stock(problem: dict) -> int:
    """Apply both deliveries, then both withdrawals, in order; no stock may go below zero."""
    if not isinstance(problem, dict):
        raise ValueError(f"a problem must be a dict, got {type(problem).__name__}")
    missing = [k for k in PROBLEM_KEYS if k not in problem]
    extra = sorted(str(k) for k in problem if k not in PROBLEM_KEYS)
    if missing or extra:
        raise ValueError(
            f"a problem holds exactly {list(PROBLEM_KEYS)}; "
            f"missing keys {missing}, extra keys {extra}"
        )
    _check_operand(problem["initial"], "initial")
    deliveries = _check_movements(problem, "deliveries")
    withdrawals = _check_movements(problem, "withdrawals")
    stock = problem["initial"]
    for value in deliveries:
        stock += value
    for index, value in enumerate(withdrawals):
        stock -= value
        if stock < 0:
            raise ValueError(
                f"negative intermediate stock: withdrawals[{index}]={value} leaves {stock}"
            )
    return stock


def normalized_problem(problem: dict) -> tuple[int, tuple[int, int], tuple[int, int]]:
    """The deduplication key: movements sorted within each kind, so permutations collide."""
    compute_final_stock(problem)  # validates; a malformed problem has no key
    deliveries, withdrawals = (
        tuple(sorted(problem[kind])) for kind in ("deliveries", "withdrawals")
    )
    return problem["initial"], deliveries, withdrawals


def generate_problem(rng: random.Random, maximum: int = 50) -> dict:
    """One valid problem with every operand in 0..maximum (50 for ID50, 100 for OOD100).

    Withdrawals are drawn within the stock available at their turn, so the result is valid
    by construction; the caller filters for population rules (OOD100 needs an operand > 50).
    """
    if type(maximum) is not int or maximum not in GENERATOR_MAXIMA:
        raise ValueError(f"maximum must be one of {GENERATOR_MAXIMA}, got {maximum!r}")
    initial = rng.randint(0, maximum)
    deliveries = [rng.randint(0, maximum), rng.randint(0, maximum)]
    stock = initial + sum(deliveries)
    withdrawals = []
    for _ in range(2):
        value = rng.randint(0, min(maximum, stock))
        withdrawals.append(value)
        stock -= value
    problem = {"initial": initial, "deliveries": deliveries, "withdrawals": withdrawals}
    compute_final_stock(problem)  # guard: the generator only yields valid problems
    return problem


# ---------------------------------------------------------------------------------------
# The generated text
# ---------------------------------------------------------------------------------------
def _object_without_duplicates(pairs: list[tuple[str, object]]) -> dict:
    keys = [key for key, _ in pairs]
    repeated = sorted({key for key in keys if keys.count(key) > 1})
    if repeated:
        raise ValueError(f"duplicate JSON field(s) {repeated}")
    return dict(pairs)


def _refuse_non_finite(name: str):
    raise ValueError(f"non-finite JSON number {name} is not allowed")


def _invalid(reason: str) -> dict:
    return {"valid": False, "value": None, "reason": reason}


def parse_generated_json(text, finish_reason: str) -> dict:
    """{"valid", "value", "reason"} for one generated response; never executes the text."""
    if finish_reason != "eos":
        # Stopped at the token limit (or any other cause): no reward, even for a good prefix.
        return _invalid(COMPLETION_WITHOUT_EOS)
    if not isinstance(text, str) or len(text) > MAX_RESPONSE_CHARS:
        return _invalid(OVERSIZED_OR_NONTEXT)
    try:
        # json.loads parses the whole string: a second object or any trailing text is an
        # "Extra data" error, so exactly one complete value is accepted.
        value = json.loads(
            text, object_pairs_hook=_object_without_duplicates, parse_constant=_refuse_non_finite
        )
    except (ValueError, RecursionError):  # JSONDecodeError is a ValueError
        return _invalid(INVALID_JSON_SCHEMA)
    if type(value) is not dict or list(value) != [ANSWER_KEY]:
        return _invalid(INVALID_JSON_SCHEMA)
    answer = value[ANSWER_KEY]
    if type(answer) is not int or not 0 <= answer <= MAX_FINAL_STOCK:
        return _invalid(INVALID_JSON_SCHEMA)
    return {"valid": True, "value": answer, "reason": None}


def score_generated_json(
    text, finish_reason: str, problem: dict, tokenization_valid: bool = True
) -> dict:
    """Reward 1 for a valid response equal to the solver's answer, 0 otherwise.

    A malformed problem or a non-bool `tokenization_valid` raises ValueError: both are
    errors of the caller, not of the model. A generated token id the tokenizer cannot decode
    invalidates the response whatever the text says.
    """
    expected = compute_final_stock(problem)
    if type(tokenization_valid) is not bool:
        raise ValueError(f"tokenization_valid must be True or False, got {tokenization_valid!r}")
    parsed = parse_generated_json(text, finish_reason)
    if not tokenization_valid:
        parsed = _invalid(UNDECODABLE_TOKEN)
    reward = 1 if parsed["valid"] and parsed["value"] == expected else 0
    return {**parsed, "reward": reward, "expected": expected}
