"""The thinking screen: does SmolLM2-135M-Instruct sit inside its band on a working family,
answering directly or writing its working first? Declared before it ran.

What it measures, per declared family (task/working_families.py) and template
(task/thinking_template.py): per-draw success of the instruct model as it is, on the first
SCREEN["problems"] of the family's screen split (in no other split), SCREEN["draws"]
sampled answers each at temperature 1 (the sampler's only temperature), a fixed seed per
(problem, draw).
The strict verifier judges the final answer (after the thinking block when there is one).
Responses stop at MAX_NEW_TOKENS (EOS included): 24 tokens answer-only (a right answer is
about 10), 96 with working (the worked examples' working is 25 to 50 tokens).

The rule, fixed before the screen: a family PASSES when both templates lie in the band,
low <= per-draw <= high, or the thinking template lies in the band where answer-only is
below it. The band is the band study's ([0.05, 0.5]): a group of 8 then has a learning
signal often enough, and there is room to learn. No greedy pass: the rule reads per-draw
success only, and the screen's time goes to the longer thinking traces.

Size: 2 families x 2 templates x the first 32 problems of the screen split x 4 draws = 512
responses (two padded batches of 64 per cell). Decided before declaring, from an
exploratory dry run of 16 problems of CarrySums-v1 on the shared, loaded 2-core machine:
77 s per 64 answer-only responses, 229 s per 64 thinking ones (a batch runs to the token
limit when one row does), so 32 problems per cell take about 20 minutes; 64 would take 40.
Every screen is recorded, failures included, with the start stamp (commit, clean tree,
UTC time) taken before any compute.
"""

from __future__ import annotations

import time
from pathlib import Path

from verifiable_grpo.core import files, preregistration
from verifiable_grpo.core import model as model_lib
from verifiable_grpo.core.config import provenance, resolve
from verifiable_grpo.core.config_schema import Profile
from verifiable_grpo.evaluation import responses
from verifiable_grpo.part1 import band_study, smollm2_candidate
from verifiable_grpo.task import prompts, thinking_template, working_families
from verifiable_grpo.task.thinking_template import ANSWER_ONLY, THINK_THEN_ANSWER
from verifiable_grpo.training import rollout

RECORDED = "data/recorded/thinking"
FAMILIES = ("CarrySums-v1", "ThreeSmall-v1")
TEMPLATES = (ANSWER_ONLY, THINK_THEN_ANSWER)
SCREEN = {"split": "screen", "problems": 32, "draws": 4, "seed_base": 960_000}
BAND = {"low": 0.05, "high": 0.5}
MAX_NEW_TOKENS = {ANSWER_ONLY: 24, THINK_THEN_ANSWER: 96}
MAX_PROMPT = 320  # the 2-shot thinking prompt is under 250 tokens (checked when rendered)
RULE = (
    "a family passes when both templates lie in the band (0.05 <= per-draw <= 0.5), or the "
    "think-then-answer template lies in the band where answer-only is below 0.05"
)


def screen_config(template: str) -> Profile:
    """The band study's SmolLM2 profile with this template's token limits."""
    limit = MAX_NEW_TOKENS[template]
    return band_study.band_config().replaced(
        profile=f"thinking-screen-{template}",
        tokens={"max_prompt": MAX_PROMPT, "max_response": limit, "max_total": MAX_PROMPT + limit},
    )


def prompt_rows(tokenizer, config: Profile, family: str, template: str, examples) -> list:
    """Each problem's rendered 2-shot prompt under `template` (refused over MAX_PROMPT)."""
    rows = []
    for e in examples:
        ids = prompts.render_ids(
            tokenizer,
            thinking_template.messages(family, e["statement"], template),
            add_generation_prompt=True,
        )
        if len(ids) > config.tokens.max_prompt:
            limit = config.tokens.max_prompt
            raise ValueError(f"{e['document_id']}: prompt of {len(ids)} tokens over {limit}")
        rows.append(ids)
    return rows


def in_band(p: float) -> bool:
    return BAND["low"] <= p <= BAND["high"]


def family_verdict(per_draw: dict[str, float]) -> bool:
    """RULE on {template: per-draw success}."""
    think, answer = per_draw[THINK_THEN_ANSWER], per_draw[ANSWER_ONLY]
    return (in_band(think) and in_band(answer)) or (in_band(think) and answer < BAND["low"])


def scored_rows(policy, tokenizer, config: Profile, family: str, template: str, sampled):
    """[document_id, draw, seed, reward, valid, finish_reason, response_tokens, text] for
    `sampled` = (examples, draws, seed_base): every answer judged on its final answer."""
    examples, draws, seed_base = sampled
    rows_ids = prompt_rows(tokenizer, config, family, template, examples)
    jobs = responses.response_jobs(list(enumerate(examples)), rows_ids, "sample", draws, seed_base)
    decoding = responses.Decoding(False, rollout.model_device(policy), True)
    answers = responses.generate_answers(policy, tokenizer, config, jobs, decoding)
    rows = []
    for job, a in zip(jobs, answers):
        verdict = thinking_template.score(a, job.page["problem"], template)
        rows.append(
            [job.page["document_id"], job.draw, job.seed, int(verdict["reward"])]
            + [int(verdict["valid"]), a["finish_reason"], a["response_tokens"], a["text"]]
        )
    return rows


def screen_cell(policy, tokenizer, family: str, template: str, problems: int) -> dict:
    """One family under one template: every response's row and the per-draw success."""
    config = screen_config(template)
    examples = working_families.splits(family)[SCREEN["split"]][:problems]
    started = time.perf_counter()
    sampled = (examples, SCREEN["draws"], SCREEN["seed_base"])
    rows = scored_rows(policy, tokenizer, config, family, template, sampled)
    return {
        "family": family,
        "template": template,
        "max_new_tokens": MAX_NEW_TOKENS[template],
        "problems": len(examples),
        "per_draw": sum(r[3] for r in rows) / len(rows),
        "valid": sum(r[4] for r in rows) / len(rows),
        "without_eos": sum(r[5] != "eos" for r in rows) / len(rows),
        "mean_response_tokens": sum(r[6] for r in rows) / len(rows),
        "seconds": time.perf_counter() - started,
        "rows": rows,
    }


def verdicts(cells: list[dict]) -> dict[str, dict]:
    """family -> {"per_draw": {template: p}, "passed"}."""
    out = {}
    for family in FAMILIES:
        per_draw = {c["template"]: c["per_draw"] for c in cells if c["family"] == family}
        if set(per_draw) == set(TEMPLATES):
            out[family] = {"per_draw": per_draw, "passed": family_verdict(per_draw)}
    return out


def run_screen(out: Path, exploratory: bool = False, problems: int | None = None) -> dict:
    """The declared screen (each cell computed once per folder, kept in its own file)."""
    out = Path(out)
    stamp = preregistration.stamp_folder(out, exploratory)
    config = screen_config(THINK_THEN_ANSWER)
    smollm2_candidate.check_weights(config)
    source = provenance(config)  # at the start: later edits of the tree change nothing here
    policy, tokenizer = model_lib.load_base(config)
    size = SCREEN["problems"] if problems is None else problems
    cells = []
    for family in FAMILIES:
        for template in TEMPLATES:
            path = out / f"cell-{family}-{template}.json"
            if not path.is_file():
                files.save_json(path, screen_cell(policy, tokenizer, family, template, size))
            cells.append(files.read_json(path))
    result = {
        "what": "thinking-screen",
        "rule": RULE,
        "screen": {**SCREEN, "problems": size},
        "band": BAND,
        "max_new_tokens": MAX_NEW_TOKENS,
        "started": stamp,
        "families": verdicts(cells),
        "cells": cells,
        "model_digest": model_lib.model_digest(policy),
        "provenance": source,
    }
    result["passed"] = sorted(f for f, v in result["families"].items() if v["passed"])
    files.save_json(out / "result.json", result, overwrite=True)
    return result


def screen_lines(result: dict) -> list[str]:
    lines = []
    for cell in result["cells"]:
        lines.append(
            f"{cell['family']} {cell['template']}: per-draw {cell['per_draw']:.3f}, valid "
            f"{cell['valid']:.3f}, without EOS {cell['without_eos']:.3f}, "
            f"{cell['mean_response_tokens']:.1f} tokens, {cell['seconds']:.0f} s"
        )
    for family, verdict in result["families"].items():
        lines.append(f"{family}: {'passes' if verdict['passed'] else 'fails'}")
    return lines


def export(out: Path, dest=None) -> Path:
    """data/recorded/thinking/screen.json from a finished folder."""
    result = files.read_json(Path(out) / "result.json")
    dest = resolve(RECORDED) if dest is None else Path(dest)
    return files.save_json(dest / "screen.json", result, overwrite=True)


def recorded(path: str | None = None) -> dict:
    return files.read_json(resolve(RECORDED if path is None else path) / "screen.json")
