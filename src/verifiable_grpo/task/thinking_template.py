"""Two prompt templates for the working families: answer-only, and think-then-answer.

- answer-only: the band's 2-shot chat prompt. Each worked example is a user turn and its
  answer, the canonical JSON {"final_stock": n}; the model answers the same way.
- think-then-answer: the same turns, with an instruction to write the working inside one
  <think>...</think> block first; each worked example's answer is its computed working
  in the block, then the JSON on its own line.

The FINAL ANSWER is what the strict verifier (task/verifier.py) judges: under answer-only
the whole response; under think-then-answer the text after the last closing tag, or the
whole response when no block was closed (a model that skips the working and answers in
JSON is still judged on its number; the format reward, training/reward_terms.py, is what
asks for the block). The answer reward therefore never depends on the working, and the
format reward never on the number: a reader can see the two apart.
"""

from __future__ import annotations

from verifiable_grpo.task import working_families
from verifiable_grpo.task.statements import canonical_response, json_instruction, user_message
from verifiable_grpo.task.verifier import score_generated_json

ANSWER_ONLY = "answer-only"
THINK_THEN_ANSWER = "think-then-answer"
TEMPLATES = (ANSWER_ONLY, THINK_THEN_ANSWER)
OPEN, CLOSE = "<think>", "</think>"


def instruction(template: str) -> str:
    """The formatting instruction of the user turn."""
    _check(template)
    if template == ANSWER_ONLY:
        return json_instruction()
    reply = json_instruction()  # 'Reply with JSON only: ...'
    return f"Write your working inside {OPEN}{CLOSE}, then {reply[0].lower()}{reply[1:]}"


def _check(template: str) -> None:
    if template not in TEMPLATES:
        raise ValueError(f"unknown template {template!r}; declared: {list(TEMPLATES)}")


def shown_response(problem: working_families.Problem, template: str) -> str:
    """A worked example's answer: the JSON, after the computed working when thinking."""
    _check(template)
    answer = canonical_response(working_families.value_of(problem))
    if template == ANSWER_ONLY:
        return answer
    return f"{OPEN}{working_families.working(problem)}{CLOSE}\n{answer}"


def messages(family: str, statement: str, template: str) -> list[dict[str, str]]:
    """The 2-shot conversation of `family` under `template`, ending on the problem's turn."""
    turns = []
    for shot in working_families.FAMILIES[family].shots:
        ask = user_message(working_families.statement_of(shot), instruction(template))
        turns.append({"role": "user", "content": ask})
        turns.append({"role": "assistant", "content": shown_response(shot, template)})
    return turns + [{"role": "user", "content": user_message(statement, instruction(template))}]


def final_answer(text: str, template: str) -> str:
    """The part of a response the verifier judges (see the module docstring)."""
    _check(template)
    if template == ANSWER_ONLY or CLOSE not in text:
        return text
    return text.rsplit(CLOSE, 1)[1]


def score(row: dict, problem: dict, template: str) -> dict:
    """The strict verifier's verdict on a response row's final answer (text,
    finish_reason, tokenization_valid): {"valid", "value", "reason", "reward", "expected"}."""
    return score_generated_json(
        final_answer(row["text"], template),
        row["finish_reason"],
        problem,
        tokenization_valid=row["tokenization_valid"],
    )
