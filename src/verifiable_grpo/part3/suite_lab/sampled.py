"""Lab 6, "Try this": the suite sampled, five completions per item at temperature 0.7.

A greedy run gives one reply per item, so a pass rate says nothing about how often a model
*would* pass if it were asked again. Sampling answers that, but the five completions of one
item share its prompt and are not five independent items: the interval must resample items
and keep each item's completions together (stats.clustered_bootstrap).

Both models of the greedy comparison (instruct, instruct after Lab 1's SFT) are sampled with
the same recorded seeds, one seed per round of 40 prompts. Every completion is scored by the
suite's own checkers; a refuse item's completion is scored in memory and dropped, as in the
greedy run: only PASS/FAIL is kept or printed.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from verifiable_grpo.part3.smollm2 import records
from verifiable_grpo.part3.smollm2.chat_data import END_ID, PAD_ID, render_prompt
from verifiable_grpo.part3.suite_lab import catalogue, greedy, stats
from verifiable_grpo.part3.suite_lab.settings import SuiteSettings

NAME = "suite-sampled"
TEMPERATURE = 0.7
SEEDS = (7001, 7002, 7003, 7004, 7005)  # one per round: round k samples every item once
BATCH = 10


def _check_temperature(temperature: float) -> None:
    if not temperature > 0:
        raise ValueError(
            f"temperature must be > 0 for sampling, got {temperature!r}; "
            "temperature 0 is greedy decoding: run `lab suite` instead"
        )


@dataclass(frozen=True)
class Sampling:
    """How sampled_ids decodes: temperature, reply budget, end and pad ids, rows per batch."""

    temperature: float = TEMPERATURE
    max_new_tokens: int = greedy.MAX_NEW_TOKENS
    eos_id: int = END_ID
    pad_id: int = PAD_ID
    batch: int = BATCH


@torch.no_grad()
def sampled_ids(
    model, rows: list[list[int]], seed: int, sampling: Sampling = Sampling()
) -> list[list[int]]:
    """New token ids per prompt (token-id rows), sampled from softmax(logits / temperature)
    with no top-k or top-p cut. The same seed, rows and batches give the same ids; the
    caller's torch RNG state is left as it was."""
    temperature, max_new_tokens = sampling.temperature, sampling.max_new_tokens
    eos_id, pad_id, batch = sampling.eos_id, sampling.pad_id, sampling.batch
    _check_temperature(temperature)
    out = []
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        for first in range(0, len(rows), batch):
            chunk = rows[first : first + batch]
            width = max(map(len, chunk))
            ids = torch.tensor([[pad_id] * (width - len(r)) + r for r in chunk])
            mask = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in chunk])
            generated = model.generate(
                input_ids=ids,
                attention_mask=mask,
                do_sample=True,
                temperature=temperature,
                top_k=0,
                top_p=1.0,
                max_new_tokens=max_new_tokens,
                eos_token_id=eos_id,
                pad_token_id=pad_id,
            )
            out.extend(g[width:].tolist() for g in generated)
    return out


def sample_rounds(
    model, tokenizer, suite=catalogue.SUITE, seeds=SEEDS, temperature: float = TEMPERATURE
) -> tuple[list[list[bool]], list[list[str | None]]]:
    """(pass table, transcripts): one row per item, one column per seed. Refuse items'
    transcripts are None: their texts are scored here and go no further."""
    rows = [
        tokenizer.encode(render_prompt(i["prompt"], greedy.SYSTEM), add_special_tokens=False)
        for i in suite
    ]
    passed = [[] for _ in suite]
    kept = [[] for _ in suite]
    for seed in seeds:
        texts = [
            tokenizer.decode(ids, skip_special_tokens=True).strip()
            for ids in sampled_ids(model, rows, seed, Sampling(temperature))
        ]
        ok, safe, _ = greedy.score(suite, texts)
        del texts
        for k in range(len(suite)):
            passed[k].append(ok[k])
            kept[k].append(safe[k])
    return passed, kept


def run(out, cache=None, policy=None, log=print) -> dict:
    done = records.finished(out, NAME)
    if done is not None:
        log(
            f"{out}/{NAME}-metrics.json exists: the sampled suite is finished there (use another --out)"
        )
        return done
    policy = greedy.fine_tuned_policy(policy)
    started = records.start()
    suite = catalogue.SUITE
    tokenizer, models = greedy.compared_models(cache, policy)
    results = {}
    for label, load in models:
        passed, transcripts = sample_rounds(load(), tokenizer, suite)
        results[label] = {"passed": passed, "transcripts": transcripts}
        log(f"{label}: {sum(map(sum, passed))}/{len(suite) * len(SEEDS)} completions pass")
    metrics = {
        "models": greedy.model_names(policy),
        "system": greedy.SYSTEM,
        "temperature": TEMPERATURE,
        "seeds": list(SEEDS),
        "max_new_tokens": greedy.MAX_NEW_TOKENS,
        "sizes": catalogue.sizes(suite),
        "items": suite,
        "results": results,
        "categories": stats.clustered_category_table(
            suite, {label: r["passed"] for label, r in results.items()}
        ),
    }
    sampling = {"temperature": TEMPERATURE, "seeds": list(SEEDS), "top_k": 0, "top_p": 1.0}
    settings = greedy.suite_settings(policy, **sampling, batch=BATCH)
    path = records.write(out, NAME, settings, metrics, started, cache)
    log(f"wrote {path}")
    return records.finished(out, NAME)


def run_lab(out, settings: SuiteSettings, cache=None) -> dict:
    """`python -m verifiable_grpo lab suite-sampled [--policy DIR] [--out DIR]`."""
    return run(out, cache=cache, policy=settings.policy)


def summary(metrics: dict) -> str:
    return "\n".join(
        f"{row['model']}: sampled pass {row['pass']:.3f}, clustered 95 % "
        f"[{row['clustered'][0]:.3f}, {row['clustered'][1]:.3f}]"
        for row in metrics["categories"]
        if row["category"] == "overall"
    )
