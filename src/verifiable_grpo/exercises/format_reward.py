"""Exercise (chapter "A model that shows its working"): write the format reward.

The learner writes fn(text, finish_reason) -> float: 1.0 when the response is exactly one
closed, non-empty <think>...</think> block at the start, then exactly one parseable JSON
answer {"final_stock": <integer>}, ended on EOS (finish_reason "eos"); 0.0 otherwise. The
number itself does not matter: the answer reward judges it. The classic mistake is a
regex that looks right and accepts an empty block, or a block that never closes; a policy
then earns the format reward without writing any working, and GRPO teaches exactly that.
The reference is training/reward_terms.well_formed.
"""

from __future__ import annotations

from verifiable_grpo.exercises.checking import Case, run_cases
from verifiable_grpo.training.reward_terms import well_formed

EMPTY = (
    "an empty (or whitespace-only) block was accepted: `.*` inside the block matches "
    "nothing; ask for working that is not blank"
)
UNCLOSED = (
    "a block that never closes was accepted: the closing </think> is optional in your "
    "pattern, so a policy can skip it and never reach its answer"
)
TWO_BLOCKS = "two thinking blocks were accepted: the shape is exactly one block, then the answer"
NOT_PARSED = (
    "the text after the block was not parsed as exactly one JSON answer: prose, a second "
    "answer or a float must earn nothing (parse it with json.loads, as the verifier does)"
)
NO_BLOCK = "a bare JSON answer with no block was rewarded: the format asks for the working"
EOS_IGNORED = "a response cut at the token limit was rewarded: only a response ended on EOS"
NUMBER_JUDGED = "the number was judged: the format reward ignores it (the answer reward judges)"
PREFIX = "text before the block was accepted: the block must open the response"

ANSWER = '{"final_stock": 12}'
WORKING = "<think>7 + 5 = 12.</think>\n"
CASES = (
    ("one block then the answer", WORKING + ANSWER, "eos", None),
    ("a wrong number, well formed", WORKING + '{"final_stock": 13}', "eos", NUMBER_JUDGED),
    ("an empty block", "<think></think>\n" + ANSWER, "eos", EMPTY),
    ("a whitespace-only block", "<think> \n </think>" + ANSWER, "eos", EMPTY),
    ("a block that never closes", "<think>7 + 5 = 12. " + ANSWER, "eos", UNCLOSED),
    ("two blocks", WORKING + "<think>check: 12</think>" + ANSWER, "eos", TWO_BLOCKS),
    ("prose after the block", WORKING + "The answer is 12.", "eos", NOT_PARSED),
    ("the answer written twice", WORKING + ANSWER + "\n" + ANSWER, "eos", NOT_PARSED),
    ("a bare answer", ANSWER, "eos", NO_BLOCK),
    ("cut at the token limit", WORKING + ANSWER, "length", EOS_IGNORED),
    ("text before the block", "Sure! " + WORKING + ANSWER, "eos", PREFIX),
)


def reference(text: str, finish_reason: str) -> float:
    return 1.0 if well_formed(text, finish_reason) else 0.0


def cases() -> list[Case]:
    out = []
    for label, text, finish, mistake in CASES:
        want = reference(text, finish)
        out.append(
            Case(
                f"{label}: {text!r} ({finish})",
                lambda fn, text=text, finish=finish: float(fn(text, finish)),
                want,
                tolerance=1e-12,
                mistakes={} if mistake is None else {mistake: 1.0 - want},
            )
        )
    return out


def check_format_reward(fn, verbose: bool = True):
    """Run the hidden cases against fn(text, finish_reason) -> 0.0 or 1.0."""
    return run_cases("format reward", fn, cases(), verbose)
