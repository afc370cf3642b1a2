"""Readings of the recorded thinking screen, for chapter "A model that shows its working".

Everything here reads data/recorded/thinking/screen.json (part1/thinking_screen.py) and
the declaration configs/thinking/comparison.yaml; nothing samples or trains. The rules
that pick what the chapter shows are fixed here, before reading:

- the completions shown: the first SHOWN_PROBLEMS screen problems of each family, draw
  SHOWN_DRAW, under each template (never chosen by hand);
- the interval beside each per-draw success: a percentile bootstrap over the screen's
  problems (each problem's mean over its draws), seeded with READING_SEED;
- the groups: a problem's screen draws read as one GRPO group of that size, to see how
  often the answer reward alone would be silent and how often the format term alone
  would speak.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np

from verifiable_grpo.core.config import resolve
from verifiable_grpo.evaluation.statistics import percentile_bootstrap
from verifiable_grpo.part1 import thinking_screen
from verifiable_grpo.task import thinking_template, working_families
from verifiable_grpo.task.thinking_template import THINK_THEN_ANSWER
from verifiable_grpo.training import hack_detectors, reward_terms

SHOWN_PROBLEMS = 2
SHOWN_DRAW = 0
READING_SEED = 20261208
# Where each profile's comparison record lands when it has run (`--export`); until the
# file exists, the chapter prints "not run" and no number of it.
COMPARISON_RECORDS = {
    "SmolLM2-135M-Instruct on a 2-core CPU (declared above)": "comparison.json",
    "Qwen2.5-0.5B-Instruct on a GPU (the qwen profile)": "comparison-qwen.json",
}
# A screen row: [document_id, draw, seed, reward, valid, finish_reason, tokens, text]
ID, DRAW, REWARD, FINISH, TEXT = 0, 1, 3, 5, 7


def cell(screen: dict, family: str, template: str) -> dict:
    for found in screen["cells"]:
        if found["family"] == family and found["template"] == template:
            return found
    raise KeyError(f"the screen has no cell {family} / {template}")


def _screen_examples(family: str) -> dict[str, dict]:
    return {e["document_id"]: e for e in working_families.splits(family)["screen"]}


def per_problem(found: dict) -> list[float]:
    """Each problem's share of right answers over its draws, in the screen's order."""
    by_problem = defaultdict(list)
    for row in found["rows"]:
        by_problem[row[ID]].append(row[REWARD])
    return [float(np.mean(rewards)) for rewards in by_problem.values()]


def screen_table(screen: dict) -> list[dict]:
    """One row per family and template: per-draw success with its interval over problems,
    the share of valid final answers, of responses cut at the token limit, the mean
    response length, the seconds the cell took, and the family's verdict."""
    rows = []
    for family in thinking_screen.FAMILIES:
        for template in thinking_screen.TEMPLATES:
            found = cell(screen, family, template)
            low, high = percentile_bootstrap(
                per_problem(found), np.random.default_rng(READING_SEED)
            )
            rows.append(
                {
                    "family": family,
                    "template": template,
                    "per_draw": found["per_draw"],
                    "low": low,
                    "high": high,
                    "in_band": thinking_screen.in_band(found["per_draw"]),
                    "valid": found["valid"],
                    "without_eos": found["without_eos"],
                    "tokens": found["mean_response_tokens"],
                    "seconds": found["seconds"],
                    "passed": screen["families"][family]["passed"],
                }
            )
    return rows


def prompt_turns(family: str, template: str) -> list[dict[str, str]]:
    """The conversation the model continues on the family's first screen problem (the
    chat template then wraps each turn in its role markers)."""
    first = working_families.splits(family)["screen"][0]
    return thinking_template.messages(family, first["statement"], template)


def shown_completions(screen: dict) -> list[dict]:
    """The declared completions: the first SHOWN_PROBLEMS problems of each family, draw
    SHOWN_DRAW, under each template, with the question, the right answer and the verdict."""
    out = []
    for family in thinking_screen.FAMILIES:
        examples = working_families.splits(family)["screen"][:SHOWN_PROBLEMS]
        for example in examples:
            for template in thinking_screen.TEMPLATES:
                rows = cell(screen, family, template)["rows"]
                row = next(
                    r for r in rows if r[ID] == example["document_id"] and r[DRAW] == SHOWN_DRAW
                )
                out.append(
                    {
                        "family": family,
                        "question": example["statement"],
                        "expected": example["final_stock"],
                        "template": template,
                        "text": row[TEXT],
                        "right": bool(row[REWARD]),
                        "finish_reason": row[FINISH],
                    }
                )
    return out


def _format_value(row: list, example: dict, template: str) -> float:
    return reward_terms.format_reward(row[TEXT], row[FINISH], example, template)


def detector_table(screen: dict) -> list[dict]:
    """Per family and template: the answer reward's mean, the format term's mean (0 under
    answer-only by definition), and each hack detector's share of the screen's responses."""
    out = []
    for family in thinking_screen.FAMILIES:
        examples = _screen_examples(family)
        for template in thinking_screen.TEMPLATES:
            rows = cell(screen, family, template)["rows"]
            found = [
                hack_detectors.flags(r[TEXT], r[FINISH], examples[r[ID]]["statement"]) for r in rows
            ]
            shares = {
                name: sum(f[name] for f in found) / len(rows) for name in hack_detectors.DETECTORS
            }
            formats = [_format_value(r, examples[r[ID]], template) for r in rows]
            out.append(
                {
                    "family": family,
                    "template": template,
                    "answer": sum(r[REWARD] for r in rows) / len(rows),
                    "format": sum(formats) / len(rows),
                    "shares": shares,
                }
            )
    return out


def group_table(screen: dict) -> list[dict]:
    """Under think-then-answer, each problem's draws read as one group: the share of
    groups whose answer rewards are all equal (silent under the answer alone), whose
    answer+format totals are all equal (silent under the declared reward), and whose only
    signal is the format term (answer-silent, format varying)."""
    out = []
    weight = reward_terms.REWARD_TERMS["format"].weight
    for family in thinking_screen.FAMILIES:
        examples = _screen_examples(family)
        groups = defaultdict(list)
        for row in cell(screen, family, THINK_THEN_ANSWER)["rows"]:
            value = _format_value(row, examples[row[ID]], THINK_THEN_ANSWER)
            groups[row[ID]].append((row[REWARD], row[REWARD] + weight * value))
        answer_silent = [len({a for a, _ in g}) == 1 for g in groups.values()]
        total_silent = [len({t for _, t in g}) == 1 for g in groups.values()]
        count = len(groups)
        out.append(
            {
                "family": family,
                "groups": count,
                "group_size": len(next(iter(groups.values()))),
                "answer_silent": sum(answer_silent) / count,
                "total_silent": sum(total_silent) / count,
                "format_only": sum(a and not t for a, t in zip(answer_silent, total_silent))
                / count,
            }
        )
    return out


def declaration_rows(declared: dict) -> list[list]:
    """The declared comparison as [what, value] rows, in the declaration's words."""
    g = declared["grpo"]
    test = declared["test"]
    terms = declared["reward_terms"]
    return [
        ["family (passed the screen)", declared["family"]],
        ["arms", ", ".join(declared["arms"])],
        ["seeds per arm", f"{declared['seeds']} (fallback {declared['fallback_seeds']})"],
        *[[f"GRPO: {k.replace('_', ' ')}", f"{g[k]:g}"] for k in g],
        *[[f"reward terms: {arm}", " + ".join(terms[arm])] for arm in declared["arms"]],
        *[
            [f"max new tokens: {arm}", str(declared["max_new_tokens"][arm])]
            for arm in declared["arms"]
        ],
        [
            "test scoring",
            f"first {test['problems']} {test['split']} problems x {test['draws']} "
            "draws, once per run, paired with the untrained model",
        ],
        ["budget", f"{declared['budget_hours']:g} h of 2-core CPU, screens and runs together"],
        ["primary", declared["primary"]],
        ["secondary", declared["secondary"]],
    ]


def comparison_status(folder: str | Path | None = None) -> list[list[str]]:
    """[profile, status] per profile: "recorded" when its record exists, else "not run"."""
    where = resolve(thinking_screen.RECORDED) if folder is None else Path(folder)
    return [
        [profile, "recorded" if (where / name).is_file() else "not run"]
        for profile, name in COMPARISON_RECORDS.items()
    ]
