"""GRPOConfig behaviour that differs between the card's TRL 1.8.0 and the installed 1.16.

Each entry names the knob, what 1.8 did, what 1.16 does, whether the card's numbers depend
on it, and the source that dates the change. The 1.16 defaults are read from the installed
GRPOConfig (a test checks them); the 1.8 side comes from the TRL pull requests named, all
merged after TRL 1.8.0 was cut on 2026-07-09 (release PR #6346).
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

# (knob, TRL 1.8.0, TRL 1.16 default as installed, what it changes, the card's run, source)
DIFFERENCES = [
    (
        "use_bias_correction_kl",
        False,
        True,
        "multiplies the k3 KL term by the importance ratio: a different KL gradient whenever "
        "beta > 0, on policy included",
        "no effect: beta = 0",
        "field added in 0.26 (PR #4638); default flipped in 1.10.0 (PR #6503)",
    ),
    (
        "dapo denominator with mask_truncated_completions",
        "counts truncated tokens",
        "excludes them",
        "loss_type dapo/cispo/vespo divided by all completion tokens while the numerator skipped "
        "truncated ones, shrinking the loss by the truncated share",
        "only if the card used loss_type dapo with the mask on",
        "TRL issue #6369, PR #6439",
    ),
    (
        "dapo denominator when steps_per_generation != gradient_accumulation_steps",
        "whole generation batch",
        "one accumulation window",
        "scaled the dapo loss by gradient_accumulation_steps / steps_per_generation",
        "no effect when the two are equal (TRL's default)",
        "TRL PR #6024",
    ),
    (
        "loss_type",
        "dapo",
        "dapo",
        "not a difference but a trap: a config without loss_type aggregates tokens over the "
        "batch (dapo), not per sequence (grpo)",
        "our arm mapping sets 'grpo' explicitly",
        "trl_parity.py",
    ),
    (
        "vllm_importance_sampling_mode",
        "(vLLM only)",
        "sequence_mask",
        "with use_vllm, rows whose sampler/trainer ratio exceeds 3 are dropped",
        "no effect: the card generated with transformers",
        "GRPOConfig docstring",
    ),
]
INSTALLED_KEYS = {
    "use_bias_correction_kl": "use_bias_correction_kl",
    "loss_type": "loss_type",
    "vllm_importance_sampling_mode": "vllm_importance_sampling_mode",
}


def installed_defaults() -> dict:
    """The installed GRPOConfig's defaults of the knobs above that are plain fields, read
    from its source with `ast` (importing trl takes seconds)."""
    spec = importlib.util.find_spec("trl")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("trl is not installed: pip install -r requirements.txt")
    source = Path(spec.submodule_search_locations[0]) / "trainer" / "grpo_config.py"
    wanted = {key: name for name, key in INSTALLED_KEYS.items()}
    found = {}
    for node in ast.walk(ast.parse(source.read_text())):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.target.id in wanted
            and isinstance(node.value, ast.Call)
        ):
            for keyword in node.value.keywords:
                if keyword.arg == "default":
                    found[wanted[node.target.id]] = ast.literal_eval(keyword.value)
    return found


def table() -> list[list]:
    """Rows for the chapter: knob, 1.8, 1.16, what changes, the card's run, source."""
    return [list(row) for row in DIFFERENCES]
