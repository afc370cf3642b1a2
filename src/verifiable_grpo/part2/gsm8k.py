"""The GSM8K reward of the study card: 1 when the integer after the final `####` equals
the reference answer's, else 0.

GSM8K's reference solutions end in `#### 72`; a completion is read the same way. Only
the text after the LAST `####` counts (a model that writes `####` twice is judged by its
final word), thousands separators are dropped (`#### 1,200` is 1200), a leading minus is
kept, and the number must be an integer (`#### 3.5` or `#### seven` score 0). Exact match
only: no partial credit, no formatting bonus, so the reward cannot tell a formatting
failure from a reasoning failure.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

MARKER = "####"
# an optional minus, digits with optional thousands commas, then a word boundary
_INTEGER = re.compile(r"\s*(-?\d[\d,]*)(?![\d.]*\d)")


def final_integer(text: str) -> int | None:
    """The integer right after the last `####` of `text`, or None if there is none."""
    if MARKER not in text:
        return None
    tail = text.rsplit(MARKER, 1)[1]
    found = _INTEGER.match(tail)
    if found is None:
        return None
    digits = found.group(1).replace(",", "")
    if digits in ("", "-"):
        return None
    after = tail[found.end() :]
    if after[:1] == "." and after[1:2].isdigit():  # 3.5 is not an integer answer
        return None
    return int(digits)


def reward(completion: str, answer: str) -> float:
    """1.0 when the completion's final integer equals the reference solution's."""
    expected = final_integer(answer)
    if expected is None:
        raise ValueError(f"reference answer without an integer after '####': {answer[-40:]!r}")
    return 1.0 if final_integer(completion) == expected else 0.0


def _item(line: str, where: str) -> dict:
    """One line's item, or a one-line ValueError naming the file and the line."""
    try:
        item = json.loads(line)
    except ValueError as err:
        raise ValueError(f"{where}: not valid JSON ({err})") from None
    if not isinstance(item, dict):
        raise ValueError(f"{where}: a GSM8K item is a JSON object, got {type(item).__name__}")
    for key in ("question", "answer"):
        if key not in item:
            raise ValueError(f"{where}: a GSM8K item needs {key!r}")
        if not isinstance(item[key], str):
            raise ValueError(
                f"{where}: {key!r} must be a string (GSM8K's text; an answer ends in "
                f"'#### N'), got {type(item[key]).__name__}"
            )
    if final_integer(item["answer"]) is None:
        raise ValueError(f"{where}: the answer has no integer after '####'")
    return {"question": item["question"], "answer": item["answer"]}


def read_items(path) -> list[dict]:
    """GSM8K-format items ({"question", "answer"} per line) from a JSON-lines file."""
    items = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        items.append(_item(line, f"{path}:{number}"))
    return items
