"""Exercise (chapter 1): the strict reward of StockArithmetic-v1.

The learner writes fn(text, finish_reason, expected) -> 1 or 0: 1 only when generation ended
on EOS and the text is exactly one JSON object (JSON whitespace around it allowed, at most
256 characters) holding exactly the integer field final_stock, equal to `expected`. The
expected rewards come from the package's verifier, whose rules have their own tests.
"""

from __future__ import annotations

from verifiable_grpo.exercises.checking import Case, compare_exact, exact_distance, run_cases
from verifiable_grpo.task.verifier import parse_generated_json

RIGHT = '{"final_stock": 17}'
# (text, finish_reason, expected answer, the hint shown when the reward is wrong)
CASES = [
    (RIGHT, "eos", 17, "the canonical answer earns 1"),
    (' {"final_stock":17}\n', "eos", 17, "JSON whitespace around the object is allowed"),
    ('{"final_stock": 18}', "eos", 17, "a wrong number earns 0"),
    (RIGHT, "length", 17, "no EOS, no reward: the generation hit the token limit"),
    ("```json\n" + RIGHT + "\n```", "eos", 17, "a Markdown fence is text outside the object"),
    ("The answer is " + RIGHT, "eos", 17, "prose outside the object makes it invalid"),
    (
        RIGHT + " " + RIGHT,
        "eos",
        17,
        "two objects are not one JSON object (json.loads refuses extra data)",
    ),
    ('{"final_stock": 17.0}', "eos", 17, "17.0 is a JSON float, not an integer"),
    ('{"final_stock": "17"}', "eos", 17, "a string is not an integer"),
    (
        '{"final_stock": true}',
        "eos",
        1,
        "true is not an integer (in Python, bool is a subclass of int)",
    ),
    ('{"final_stock": 17, "note": 1}', "eos", 17, "exactly one field"),
    (
        '{"final_stock": 16, "final_stock": 17}',
        "eos",
        17,
        "a repeated key is refused (json.loads would silently keep the last one)",
    ),
    ('{"final_stock": -0}', "eos", 0, "-0 is a JSON integer literal equal to 0"),
    ('{"final_stock": NaN}', "eos", 17, "NaN is not JSON, although json.loads accepts it"),
    ("\ufeff" + RIGHT, "eos", 17, "a byte-order mark is a character outside the object"),
    (RIGHT + " " * 240, "eos", 17, "more than 256 characters, whitespace included"),
]


def expected_reward(text: str, finish_reason: str, expected: int) -> int:
    parsed = parse_generated_json(text, finish_reason)
    return int(parsed["valid"] and parsed["value"] == expected)


def cases() -> list[Case]:
    out = []
    for text, finish, expected, hint in CASES:
        want = expected_reward(text, finish, expected)
        shown = text if len(text) < 60 else text[:40] + f"... ({len(text)} characters)"
        out.append(
            Case(
                f"text {shown!r}, finish {finish!r}, expected {expected}",
                lambda fn, t=text, f=finish, e=expected: fn(t, f, e),
                want,
                compare=_compare_reward,
                distance=exact_distance,
                mistakes={hint: 1 - want},
            )
        )
    return out


def _compare_reward(got, expected, tolerance):
    if type(got) not in (int, bool) and not (hasattr(got, "item") and got.numel() == 1):
        return f"returned {got!r}; return the integer 1 or 0"
    return compare_exact(int(got), expected, tolerance)


def check_reward(fn, verbose: bool = True):
    """Run the hidden cases against fn(text, finish_reason, expected) -> 1 or 0."""
    return run_cases("strict reward", fn, cases(), verbose)
