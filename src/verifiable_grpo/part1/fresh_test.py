"""The tiny model's lift, decided once on a fresh held-out split.

The lift study (lift_study.py) selected candidate 4 by its validation rule, but its test
result was not decisive (per-draw +0.014, 95 % interval [-0.010, +0.037]) and the 200 test
problems had been looked at before: by the six-setting sweep, by candidate 1 (whose test
result shaped candidate 4's declaration) and by the SmolLM2 candidate. A test set that has
shaped a decision is no longer held out. So the decision is made again, once, on problems
no run has seen, declared here before the run:

- FRESH: 1,000 new StockArithmetic-v1 problems (500 ID50, 500 OOD100, the test set's two
  populations) from a new data seed, each different (as a normalised problem) from every
  problem of the dataset's four splits;
- the policies: the recorded warm start, and candidate 4's setting trained again from it
  (same code path, seeds and budget as its recorded run);
- primary metric: per-draw success, 8 draws per problem, paired problem by problem with
  the warm start (paired bootstrap over problems, 10,000 resamples, 95 %); greedy pass@1
  with an exact McNemar test beside it. GRPO "lifts held-out success" when the primary
  interval lies above zero.

At the recorded spread of per-problem differences (SD about 0.17-0.21), 1,000 problems x 8
draws give an interval of about +-0.010.
"""

from __future__ import annotations

import random
import time
from pathlib import Path

from verifiable_grpo.core import files, preregistration
from verifiable_grpo.core import model as model_lib
from verifiable_grpo.core.config import provenance, resolve
from verifiable_grpo.core.config_schema import Profile
from verifiable_grpo.evaluation import policy_scores
from verifiable_grpo.task import data
from verifiable_grpo.task.statements import TEMPLATES, canonical_response, render_statement
from verifiable_grpo.task.verifier import compute_final_stock, normalized_problem

RECORDED = "data/recorded/lift-study/fresh.json"
FRESH_SEED = 20261205
COUNTS = {"ID50": 500, "OOD100": 500}
DRAWS = 8
SEED_BASE = 910_000  # the draws' seeds: far from the evaluation's (480,000) and the sweep's
ANALYSIS_SEED = 20261205
CANDIDATE = "tiny-64x8-lr3e-5-200it"
RULE = (
    "primary: per-draw success on 1,000 fresh problems x 8 draws, paired with the warm "
    "start (bootstrap over problems, 95%); GRPO lifts held-out success when the interval "
    "lies above 0; greedy pass@1 and exact McNemar beside it; scored once"
)


def fresh_examples(data_seed: int, counts: dict[str, int] | None = None) -> list[dict]:
    """The fresh problems (pages merged with labels), none of them in the dataset of
    `data_seed`; the two populations mixed, as the test split's are."""
    counts = dict(COUNTS if counts is None else counts)
    seen = {
        normalized_problem(p)
        for rows in data.generate_problem_set(data_seed).values()
        for p, _ in rows
    }
    rng = random.Random(FRESH_SEED)
    in_range = data._draw_unique(rng, counts["ID50"], data.ID_MAXIMUM, seen, lambda p: True)
    beyond = data._draw_unique(
        rng,
        counts["OOD100"],
        data.OOD_MAXIMUM,
        seen,
        lambda p: max(data._operands(p)) > data.ID_MAXIMUM,
    )
    rows = [(p, "ID50") for p in in_range] + [(p, "OOD100") for p in beyond]
    rng.shuffle(rows)
    out = []
    for index, (problem, population) in enumerate(rows):
        final = compute_final_stock(problem)
        out.append(
            {
                "document_id": f"fresh-{index:04d}",
                "split": "fresh",
                "population": population,
                "statement": render_statement(problem, rng.randrange(len(TEMPLATES))),
                "problem": problem,
                "final_stock": final,
                "response": canonical_response(final),
            }
        )
    return out


def score(policy, tokenizer, config: Profile, examples: list[dict]) -> dict:
    """Greedy and DRAWS sampled answers per fresh problem, scored: compact rows per mode."""
    from verifiable_grpo.part1.sweep import _compact

    questions = policy_scores.Questions(
        list(enumerate(examples)), DRAWS, SEED_BASE, share_prompts=True
    )
    answers = policy_scores.answer(policy, tokenizer, config, questions)
    scored = policy_scores.score(answers, {e["document_id"]: e for e in examples})
    return {mode: _compact(rows) for mode, rows in scored.items()}


def compare(warm: dict, trained: dict) -> dict:
    """Trained minus warm start, paired by problem, for both modes."""
    from verifiable_grpo.part1.sweep import paired_modes

    return paired_modes(warm, trained, ANALYSIS_SEED)


def _scored_policy(folder: Path, name: str, policy, tokenizer, config, examples) -> dict:
    """A policy's fresh scores, cached in the run folder (computed once)."""
    path = folder / f"fresh-{name}.json"
    if path.is_file():
        return files.read_json(path)
    started = time.perf_counter()
    result = {
        "model_digest": model_lib.model_digest(policy),
        **score(policy, tokenizer, config, examples),
        "seconds": time.perf_counter() - started,
    }
    files.save_json(path, result)
    return result


def run(base: Profile, out: Path, exploratory: bool = False, progress: bool = True) -> dict:
    """Stamp, train candidate 4 (or continue it), score both policies once, compare."""
    from verifiable_grpo.part1 import lift_study, sweep

    out = Path(out)
    stamp = preregistration.stamp_folder(out, exploratory)
    candidate = next(c for c in lift_study.CANDIDATES if c.name == CANDIDATE)
    config = lift_study.candidate_config(base, candidate)
    folder = out / candidate.name
    record, policy, _ = sweep.train_only(config, folder, progress)
    tokenizer = model_lib.load_tokenizer(config)
    examples = fresh_examples(config.data.seed)
    warm_policy, _ = sweep.warm_policy(folder, config)
    warm = _scored_policy(out, "warmstart", warm_policy, tokenizer, config, examples)
    trained = _scored_policy(out, candidate.name, policy, tokenizer, config, examples)
    result = {
        "rule": RULE,
        "started": stamp,
        "candidate": candidate.name,
        "fresh": {"seed": FRESH_SEED, "counts": COUNTS, "draws": DRAWS, "seed_base": SEED_BASE},
        "train_seconds": record["timings"]["total_seconds"],
        "warm_start": warm,
        "trained": trained,
        "paired": compare(warm, trained),
        "provenance": provenance(config),
    }
    files.save_json(out / "result.json", result, overwrite=True)
    return result


def export(out: Path, dest=None) -> Path:
    result = files.read_json(Path(out) / "result.json")
    return files.save_json(
        resolve(RECORDED) if dest is None else Path(dest), result, overwrite=True
    )


def recorded(path: str = RECORDED) -> dict:
    return files.read_json(resolve(path))
