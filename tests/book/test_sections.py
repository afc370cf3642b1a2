"""No empty section on the book's pages: a heading is followed by what it announces, not by
one introductory sentence and the next heading (the intro's "What the recorded runs
found" once was)."""

from __future__ import annotations

import re

import pytest

from verifiable_grpo.core.config import repo_root

PAGES = sorted((repo_root() / "book").glob("*.md"))
HEADING = re.compile(r"^(#{1,6}) (.+)$", re.M)
MIN_WORDS = 40  # one short sentence that introduces what follows is not a section


def sections(text: str) -> list[tuple[str, str]]:
    """(heading, body up to the next heading of any level) for every heading outside code;
    a heading followed at once by its own subsection gets the subsection's words."""
    text = re.sub(r"```.*?```", lambda m: "x " * len(m.group(0).split()), text, flags=re.S)
    found = list(HEADING.finditer(text))
    out = []
    for i, m in enumerate(found):
        nxt = found[i + 1] if i + 1 < len(found) else None
        if nxt and len(nxt.group(1)) > len(m.group(1)):
            nxt = next((n for n in found[i + 1 :] if len(n.group(1)) <= len(m.group(1))), None)
        out.append((m.group(2), text[m.end() : nxt.start() if nxt else len(text)]))
    return out


def too_thin(body: str) -> bool:
    """A body with fewer than MIN_WORDS words and no list, table or directive."""
    rich = re.search(r"^\s*(?:[-*] |\d+\. |\||:::|<!--)", body, re.M)
    return not rich and len(re.findall(r"\w+", body)) < MIN_WORDS


def test_the_rule():
    page = "# T\n\n## Found\n\nThis is the short version.\n\n## Next\n\n" + "word " * 50
    assert [h for h, body in sections(page)[1:] if too_thin(body)] == ["Found"]
    assert not too_thin("\n- one finding\n")
    nested = "# T\n\n## Results\n\n### The recipe\n\n" + "word " * 50
    assert not [h for h, body in sections(nested)[1:] if too_thin(body)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_no_section_is_empty(page):
    found = sections(page.read_text())
    # a page's title heading may be followed directly by its first section
    thin = [h for i, (h, body) in enumerate(found) if i and too_thin(body)]
    assert not thin, f"{page.name}: sections with nothing in them: {thin}"
