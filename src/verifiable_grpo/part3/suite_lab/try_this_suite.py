"""Lab 6's contamination "Try this": hash the suite's prompts and look for n-grams they share
with the prompts the fine-tuned model was trained on (Lab 1's SFT rows).

Two checks, as evaluation reports use them:
- an exact-duplicate check: SHA-256 of each prompt after normalisation (lower case, runs
  of non-alphanumeric characters collapsed to one space, trimmed);
- an n-gram check: the word n-grams of the normalised prompts; an item is flagged if it
  shares at least one n-gram with any training prompt. The GPT-3 report used n = 13.

Short prompts have no 13-gram at all, so a 13-gram check cannot flag them whatever the
training set holds; `overlap_report` therefore runs several n and says how many suite
items are long enough to be checked at each.
"""

from __future__ import annotations

import hashlib
import re

_NOT_WORD = re.compile(r"[^0-9a-z]+")


def normalise(text: str) -> str:
    """Lower case, every run of characters other than a-z and 0-9 -> one space, trimmed."""
    if not isinstance(text, str):
        raise ValueError(f"a prompt must be a string, got {type(text).__name__}")
    return _NOT_WORD.sub(" ", text.lower()).strip()


def prompt_hash(text: str) -> str:
    return hashlib.sha256(normalise(text).encode()).hexdigest()


def ngrams(text: str, n: int) -> set[tuple[str, ...]]:
    """The set of word n-grams of the normalised text (empty if it has fewer than n words)."""
    if type(n) is not int or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    words = normalise(text).split()
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def overlap(suite: list[str], training: list[str], n: int) -> dict:
    """Which suite prompts share a word n-gram with any training prompt."""
    seen = set().union(*(ngrams(t, n) for t in training)) if training else set()
    checkable = [i for i, p in enumerate(suite) if ngrams(p, n)]
    flagged = [i for i in checkable if ngrams(suite[i], n) & seen]
    return {"n": n, "checkable": len(checkable), "flagged": flagged}


def overlap_report(suite: list[str], training: list[str], sizes=(13, 8, 5, 3, 2)) -> dict:
    """Duplicate hashes, then the n-gram check at each n in `sizes`."""
    trained = {prompt_hash(t) for t in training}
    duplicates = [i for i, p in enumerate(suite) if prompt_hash(p) in trained]
    lengths = [len(normalise(p).split()) for p in suite]
    return {
        "suite_items": len(suite),
        "training_prompts": len(training),
        "duplicates": duplicates,
        "longest_suite_prompt_words": max(lengths, default=0),
        "ngram": [overlap(suite, training, n) for n in sizes],
    }


def run_suite_check(quick: bool = True, sizes=(13, 8, 5, 3, 2)) -> dict:
    """Lab 6's suite against the training prompts of Lab 1's fine-tune (QUICK: 240 rows)."""
    from verifiable_grpo.part3.smollm2 import chat_data
    from verifiable_grpo.part3.suite_lab import catalogue

    train, _ = chat_data.split(quick)
    suite = [item["prompt"] for item in catalogue.SUITE]
    report = overlap_report(suite, [row["user"] for row in train], sizes)
    report["flagged_prompts"] = {
        str(r["n"]): [suite[i] for i in r["flagged"]] for r in report["ngram"]
    }
    return report
