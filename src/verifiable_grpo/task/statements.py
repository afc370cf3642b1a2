"""The words the model reads: compact problem statements and the formatting instruction.

Statements are deliberately short. With a small vocabulary, the length of the user
message was the strongest lever on whether a few-million-parameter model could learn
the task at all (see book/tiny-base.md), so every template says the same four facts in
about a dozen words. Movements are listed in the order the solver applies them:
deliveries first, then withdrawals.
"""

from __future__ import annotations

TEMPLATES = (
    "Initial stock {initial}. Deliveries {d1} and {d2}. Withdrawals {w1} and {w2}.",
    "Stock starts at {initial}. Received {d1} and {d2}. Shipped {w1} and {w2}.",
    "Opening stock {initial}. In: {d1}, {d2}. Out: {w1}, {w2}.",
)

ANSWER_KEY = "final_stock"


def render_statement(problem: dict, template: int) -> str:
    """The statement of one problem with one of the shared templates."""
    if not 0 <= template < len(TEMPLATES):
        raise ValueError(f"template must be in 0..{len(TEMPLATES) - 1}, got {template}")
    d1, d2 = problem["deliveries"]
    w1, w2 = problem["withdrawals"]
    return TEMPLATES[template].format(initial=problem["initial"], d1=d1, d2=d2, w1=w1, w2=w2)


def json_instruction(key: str = ANSWER_KEY) -> str:
    """The formatting instruction; the tiny base is pretrained with other keys only."""
    return f'Reply with JSON only: {{"{key}": <integer>}}'


def number_instruction() -> str:
    return "Reply with the number only."


def user_message(statement: str, instruction: str | None = None) -> str:
    """What the user turn holds: the statement, then the instruction on its own line."""
    return f"{statement}\n{instruction if instruction is not None else json_instruction()}"


def canonical_response(final_stock: int, key: str = ANSWER_KEY) -> str:
    """The target response: the canonical JSON answer (computed, never typed)."""
    return f'{{"{key}": {int(final_stock)}}}'
