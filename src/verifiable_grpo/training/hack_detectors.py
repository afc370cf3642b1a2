"""Why isn't my run learning? Signals every GRPO iteration records beside its rewards.

A reward that can be earned without doing the task gets earned that way (reward hacking),
and a run that cannot learn often says so in its groups before its curve does. Each
detector below looks at one response (its text, how it ended, the question) and says yes
or no; an iteration records the SHARE of its responses each one flags, so a reader sees
the hacks rise or fall over training:

- empty_thinking: a closed <think></think> block with nothing but whitespace inside;
- copied_thinking: a block that copies the question instead of working on it;
- repeated_answer: the answer key written more than once outside the block (a second
  JSON answer after the first, hoping one of them is judged);
- unclosed_block: a <think> that never closes (the answer is then never reached);
- truncated: the response stopped at the token limit instead of on EOS.

And two signals of the batch itself:

- silent_group_share: groups whose G rewards are all equal. Their advantages are 0, so
  they teach nothing; at 1.0 nothing is learnt from this batch at all;
- loss_zero_by_construction: every advantage of the batch is exactly 0, so the policy
  term of the loss is 0 whatever the model does (only the KL term, if any, moves it).

The detectors read the text only (no model, no tokenizer), so they apply to every run:
an answer-only run simply never shows a thinking block.
"""

from __future__ import annotations

import re

from verifiable_grpo.task.thinking_template import CLOSE, OPEN
from verifiable_grpo.task.verifier import ANSWER_KEY

DETECTORS = ("empty_thinking", "copied_thinking", "repeated_answer", "unclosed_block", "truncated")
_SPACE = re.compile(r"\s+")


def _normal(text: str) -> str:
    return _SPACE.sub(" ", text).strip().lower()


def blocks(text: str) -> list[str]:
    """The contents of every closed thinking block, in order."""
    return re.findall(re.escape(OPEN) + r"(.*?)" + re.escape(CLOSE), text, flags=re.DOTALL)


def outside_blocks(text: str) -> str:
    """The text with every closed block removed."""
    return re.sub(re.escape(OPEN) + r".*?" + re.escape(CLOSE), "", text, flags=re.DOTALL)


def empty_thinking(text: str) -> bool:
    return any(not b.strip() for b in blocks(text))


def copied_thinking(text: str, question: str | None) -> bool:
    """A block holding the question word for word (whitespace and case aside), or a
    non-empty block that is only a piece of the question."""
    if not question:
        return False
    asked = _normal(question)
    for block in blocks(text):
        inside = _normal(block)
        if inside and (asked in inside or inside in asked):
            return True
    return False


def repeated_answer(text: str) -> bool:
    return outside_blocks(text).count(f'"{ANSWER_KEY}"') > 1


def unclosed_block(text: str) -> bool:
    last_open = text.rfind(OPEN)
    return last_open >= 0 and CLOSE not in text[last_open + len(OPEN) :]


def truncated(finish_reason: str) -> bool:
    return finish_reason != "eos"


def flags(text: str, finish_reason: str, question: str | None = None) -> dict[str, bool]:
    """Every detector's verdict on one response."""
    return {
        "empty_thinking": empty_thinking(text),
        "copied_thinking": copied_thinking(text, question),
        "repeated_answer": repeated_answer(text),
        "unclosed_block": unclosed_block(text),
        "truncated": truncated(finish_reason),
    }


def signals(groups: list[dict], questions: dict[str, str] | None = None) -> dict:
    """An iteration's signals: each detector's share of its responses, the share of silent
    groups, and whether the policy term of its loss is zero by construction. `groups` as
    the sampler gives them (responses with text and finish_reason), with advantages;
    `questions`: document_id -> statement (without it, copied_thinking stays 0)."""
    questions = questions or {}
    found = [
        flags(r.get("text", ""), r["finish_reason"], questions.get(g["document_id"]))
        for g in groups
        for r in g["responses"]
    ]
    count = max(len(found), 1)
    advantages = [a for g in groups for a in g.get("advantages", [])]
    return {
        "hack_shares": {name: sum(f[name] for f in found) / count for name in DETECTORS},
        "silent_group_share": sum(bool(g["zero_variance"]) for g in groups) / max(len(groups), 1),
        "loss_zero_by_construction": bool(advantages) and all(a == 0.0 for a in advantages),
    }
