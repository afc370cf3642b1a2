"""Part I cites the specific entry where it uses a source, and the book keeps one symbol
per quantity: epsilon is the clip's, delta the constant beside a standard deviation."""

from __future__ import annotations

import re

import pytest

from verifiable_grpo.core.config import repo_root

ROOT = repo_root()
REF = re.compile(r"\{ref\}`[^`<]*<([\w-]+)>`")
# chapter -> the references.md entries it must cite where it uses them
CITED_WHERE_USED = {
    "03_ratio_and_clipping": {"ref-ppo"},
    "04_exact_kl": {"ref-kl-approx", "ref-deepseekmath"},
    "06_grpo": {"ref-deepseekmath", "ref-drgrpo"},
    "08_evaluation": {"ref-wilson", "ref-mcnemar", "ref-bootstrap", "ref-bh"},
}


def _anchors() -> set[str]:
    text = "".join((ROOT / "book" / n).read_text() for n in ("references.md", "glossary.md"))
    return set(re.findall(r"^\(([\w-]+)\)=$", text, re.M))


@pytest.mark.parametrize("chapter", sorted(CITED_WHERE_USED))
def test_part1_cites_the_specific_entry(chapter):
    cited = set(REF.findall((ROOT / "notebooks" / "part1" / f"{chapter}.py").read_text()))
    assert CITED_WHERE_USED[chapter] <= cited, (
        f"part1/{chapter} does not cite {sorted(CITED_WHERE_USED[chapter] - cited)}"
    )


def test_no_chapter_links_the_top_of_the_references_page():
    for path in sorted(ROOT.glob("notebooks/part*/*.py")):
        assert "](../../book/references.md)" not in path.read_text(), (
            f"{path.name} links the top of references.md: cite the entry with {{ref}}"
        )


def test_every_cited_anchor_exists():
    anchors = _anchors()
    for path in sorted([*ROOT.glob("notebooks/part*/*.py"), *ROOT.glob("book/*.md")]):
        missing = set(REF.findall(path.read_text())) - anchors
        assert not missing, f"{path.name} cites {sorted(missing)}, which no page defines"


# epsilon (or varepsilon) beside a standard deviation, or at the std's 1e-8
STD_EPSILON = re.compile(
    r"(\\sigma|std\}?\(r\)|\\sqrt\{p\(1-p\)\})\s*\+\s*\\(var)?epsilon"
    r"|\\(var)?epsilon\s*=\s*10\^\{-8\}|epsilon \$10\^\{-8\}\$"
)


def test_epsilon_names_only_the_clip():
    pages = [*ROOT.glob("notebooks/part*/*.py"), *ROOT.glob("book/*.md"), ROOT / "README.md"]
    for path in sorted(pages):
        found = STD_EPSILON.search(path.read_text())
        assert found is None, f"{path.name}: '{found.group(0)}' uses epsilon for the std's delta"
    glossary = (ROOT / "book" / "glossary.md").read_text()
    assert (
        "(notation)=" in glossary and "| $\\delta$ |" in glossary and "| $\\epsilon$ |" in glossary
    )


def test_the_pattern_catches_the_old_spelling():
    assert STD_EPSILON.search(r"$A = (r - \bar r) / (\sigma + \epsilon)$")
    assert STD_EPSILON.search(r"(\mathrm{std}(r) + \epsilon)")
    assert not STD_EPSILON.search(r"\mathrm{clip}(\rho, 1-\epsilon, 1+\epsilon)")


def test_part3_teaches_on_its_own_terms():
    """Each Part III chapter cites its source once by entry and never narrates against
    "the course" (a reader of this book has not taken it)."""
    for path in sorted(ROOT.glob("notebooks/part3/*.py")):
        text = path.read_text()
        assert "the course" not in text.lower(), f"{path.name} still says 'the course'"
        assert "<ref-module>`" in text, f"{path.name} does not cite the post-training module"
