"""Budgets quoted in prose and docstrings are the profile's: each quote is tied to the
config here, so changing a count in configs/base.yaml names every sentence that repeats it.

The quotes speak of the recorded tiny run (the specification's counts, as in base.yaml)."""

from __future__ import annotations

import math
import re

import pytest

from verifiable_grpo.core.config import load_config, repo_root


def _updates(stage: dict) -> int:
    return stage["epochs"] * math.ceil(stage["examples"] / stage["batch_size"])


def _responses(g: dict) -> int:
    return g["iterations"] * g["prompts_per_iteration"] * g["group_size"]


# (file, pattern whose groups are numbers, the numbers the config gives)
QUOTES = [
    (
        "notebooks/part1/05_supervised_branches.py",
        r"teaches that on (\d+) examples \((\d+) epochs of (\d+) updates of (\d+)\s+# examples: "
        r"(\d+) updates\)",
        lambda c: (
            c["warmstart"]["examples"],
            c["warmstart"]["epochs"],
            _updates(c["warmstart"]) // c["warmstart"]["epochs"],
            c["warmstart"]["batch_size"],
            _updates(c["warmstart"]),
        ),
    ),
    (
        "notebooks/part1/05_supervised_branches.py",
        r"# (\d+) training examples for (\d+) epochs \((\d+) updates\)",
        lambda c: (c["sft"]["examples"], c["sft"]["epochs"], _updates(c["sft"])),
    ),
    (
        "notebooks/part1/05_supervised_branches.py",
        r"sees (\d+) examples twice, the warm start (\d+) three times",
        lambda c: (c["sft"]["examples"], c["warmstart"]["examples"]),
    ),
    (
        "notebooks/part1/06_grpo.py",
        r"Each iteration draws (\d+) training prompts .*?samples G = (\d+) responses",
        lambda c: (c["grpo"]["prompts_per_iteration"], c["grpo"]["group_size"]),
    ),
    (
        "notebooks/part1/06_grpo.py",
        r"plus ([\d.]+) times the exact KL",
        lambda c: (c["grpo"]["kl_coefficient"],),
    ),
    (
        "notebooks/part1/06_grpo.py",
        r"(\d+) iterations make ([\d,]+) responses and (\d+) updates",
        lambda c: (
            c["grpo"]["iterations"],
            _responses(c["grpo"]),
            c["grpo"]["iterations"] * c["grpo"]["updates_per_rollout"],
        ),
    ),
    (
        "notebooks/part1/06_grpo.py",
        r"# (\d+) iterations with the practical's counts, learning rate ([\d.e-]+) \(its ([\d.e-]+)",
        lambda c: (
            c["grpo"]["iterations"],
            c["grpo"]["learning_rate"],
            load_config("qwen")["grpo"]["learning_rate"],
        ),
    ),
    (
        "notebooks/part1/06_grpo.py",
        r"over (\d+) iterations the recorded run",
        lambda c: (c["grpo"]["iterations"],),
    ),
    (
        "notebooks/part1/06_grpo.py",
        r"for the (\d+) iterations of the continuous run",
        lambda c: (c["grpo"]["iterations"],),
    ),
    (
        "notebooks/part1/06_grpo.py",
        r"counts out of (\d+) responses \((\d+) prompts × G = (\d+)\)",
        lambda c: (
            c["grpo"]["prompts_per_iteration"] * c["grpo"]["group_size"],
            c["grpo"]["prompts_per_iteration"],
            c["grpo"]["group_size"],
        ),
    ),
    (
        "notebooks/part1/07_resume.py",
        r"GRPO after (\d+) of its (\d+) iterations, the two\s+# exercise branches after (\d+) of "
        r"their (\d+)",
        lambda c: (
            c["grpo"]["interrupt_at"],
            c["grpo"]["iterations"],
            c["exercise"]["interrupt_at"],
            c["exercise"]["iterations"],
        ),
    ),
    (
        "notebooks/part1/09_group_size_exercise.py",
        r"training G = (\d+) and G = (\d+) for (\d+) iterations from the same warm start on the "
        r"same (\d+)\s+# prompt presentations, with the same (\d+) updates",
        lambda c: (
            *c["exercise"]["group_sizes"],
            c["exercise"]["iterations"],
            c["exercise"]["iterations"] * c["grpo"]["prompts_per_iteration"],
            c["exercise"]["iterations"] * c["grpo"]["updates_per_rollout"],
        ),
    ),
    (
        "src/verifiable_grpo/part1/sweep.py",
        r"budget \(learning rate ([\d.e-]+), (\d+) iterations, two updates per rollout\s+set, "
        r"G = (\d+)\)",
        lambda c: (c["grpo"]["learning_rate"], c["grpo"]["iterations"], c["grpo"]["group_size"]),
    ),
    (
        "src/verifiable_grpo/part1/bench.py",
        r"(\d+) prompts x G = (\d+), at most (\d+) new tokens",
        lambda c: (
            c["grpo"]["prompts_per_iteration"],
            c["grpo"]["group_size"],
            c["tokens"]["max_response"],
        ),
    ),
    (
        "book/tiny-base.md",
        r"cannot write the JSON after (\d+) updates",
        lambda c: (_updates(c["warmstart"]),),
    ),
    (
        "README.md",
        r"crash checkpoint every (\d+) SFT updates and every (\d+) GRPO iterations",
        lambda c: (
            load_config("qwen")["sft"]["checkpoint_every_updates"],
            load_config("qwen")["grpo"]["checkpoint_every_iterations"],
        ),
    ),
    (
        "README.md",
        r"iterations \(tiny: (\d+) and (\d+); qwen: (\d+) and (\d+)\)",
        lambda c: (
            c["sft"]["checkpoint_every_updates"],
            c["grpo"]["checkpoint_every_iterations"],
            load_config("qwen")["sft"]["checkpoint_every_updates"],
            load_config("qwen")["grpo"]["checkpoint_every_iterations"],
        ),
    ),
    (
        "src/verifiable_grpo/exercises/quiz.py",
        r"runs (\d+) iterations of (\d+) prompts with G = (\d+) responses",
        lambda c: (
            c["grpo"]["iterations"],
            c["grpo"]["prompts_per_iteration"],
            c["grpo"]["group_size"],
        ),
    ),
]


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def test_the_sweeps_specification_is_the_profiles():
    from verifiable_grpo.part1.sweep import SPEC

    grpo = load_config("tiny")["grpo"]
    assert SPEC == {key: grpo[key] for key in SPEC}


@pytest.mark.parametrize(
    "path, pattern, expected",
    QUOTES,
    ids=[f"{p.rsplit('/', 1)[-1]}:{i}" for i, (p, _, _) in enumerate(QUOTES)],
)
def test_each_quoted_budget_is_the_profiles(path, pattern, expected):
    text = (repo_root() / path).read_text()
    found = list(re.finditer(pattern, text, flags=re.S))
    assert found, f"{path}: the quote /{pattern}/ is gone; update this table with the prose"
    want = tuple(float(value) for value in expected(load_config("tiny")))
    for match in found:
        line = text.count("\n", 0, match.start()) + 1
        got = tuple(_number(group) for group in match.groups())
        assert got == want, f"{path}:{line} quotes {got}, the tiny profile gives {want}"
