"""Lab 6, Try this: the 25 failure-family items (failure_families.py) on both suite models.

The same two models, system line, greedy decoding and token limit as the recorded suite
(greedy.py): SmolLM2-135M-Instruct before and after Lab 1's SFT. No item asks for anything
harmful, so every transcript is kept, and the chapter can show why each verdict fell.
`python -m verifiable_grpo lab suite-families [--policy DIR] [--out DIR] --export`.
"""

from __future__ import annotations

from verifiable_grpo.part3.smollm2 import records
from verifiable_grpo.part3.suite_lab import failure_families, greedy, stats
from verifiable_grpo.part3.suite_lab.settings import SuiteSettings

NAME = "suite-families"


def run(out, cache=None, policy=None, log=print) -> dict:
    done = records.finished(out, NAME)
    if done is not None:
        log(f"{out}/{NAME}-metrics.json exists: this run is finished there (use another --out)")
        return done
    policy = greedy.fine_tuned_policy(policy)  # checked before the model loads
    started = records.start()
    items = failure_families.ITEMS
    tokenizer, models = greedy.compared_models(cache, policy)
    results = {}
    for label, load in models:
        texts = greedy.replies(load(), tokenizer, items)
        passed = [failure_families.check(item, text) for item, text in zip(items, texts)]
        results[label] = {"passed": passed, "transcripts": texts}
        log(f"{label}: {sum(passed)}/{len(passed)} items avoid their failure")
    passed = {label: r["passed"] for label, r in results.items()}
    metrics = {
        "models": greedy.model_names(policy),
        "system": greedy.SYSTEM,
        "max_new_tokens": greedy.MAX_NEW_TOKENS,
        "sizes": failure_families.sizes(items),
        "items": items,
        "results": results,
        "families": stats.category_table(items, passed, categories=failure_families.FAMILIES),
        "paired": stats.paired(passed["instruct"], passed["instruct+sft"]),
    }
    settings = greedy.suite_settings(policy)
    path = records.write(out, NAME, settings, metrics, started, cache)
    log(f"wrote {path}")
    return records.finished(out, NAME)


def run_lab(out, settings: SuiteSettings, cache=None) -> dict:
    """`python -m verifiable_grpo lab suite-families [--policy DIR] [--out DIR]`."""
    return run(out, cache=cache, policy=settings.policy)


def summary(metrics: dict) -> str:
    overall = {row["model"]: row for row in metrics["families"] if row["category"] == "overall"}
    return "; ".join(
        f"{model} avoids the failure on {row['pass']:.0%} of {row['n']} items"
        for model, row in overall.items()
    )
