"""`learn fixed-prompts` at micro size (2 prompts x G 2, 3 iterations from the recorded warm
start), killed with SIGKILL after the second iteration's evidence and run again, ends in
the same result.json as an uninterrupted run: selection, per-iteration history, the
trained prompts' successes and the final weights' digest."""

from __future__ import annotations

from shared_helpers import comparable_result as _comparable
from verifiable_grpo.core import files

MICRO = """
import sys
from verifiable_grpo.core.config import load_config
from verifiable_grpo.part1 import fixed_prompts
base = load_config("tiny").replaced(grpo={"checkpoint_every_iterations": 1})
setting = fixed_prompts.FixedPromptSetting(
    "micro", prompts=2, draws=4, low=0.0, high=1.0, group_size=2, iterations=3,
    validation_problems=0,
)
fixed_prompts.run(base, sys.argv[1], setting, progress=False)
"""


def _run(out, fault=None):
    import os
    import subprocess
    import sys

    env = dict(os.environ, TQDM_DISABLE="1")
    if fault:
        env["VERIFIABLE_GRPO_FAULT"] = fault
    return subprocess.run(
        [sys.executable, "-c", MICRO, str(out)], env=env, capture_output=True, text=True
    )


def test_a_killed_fixed_prompt_run_ends_where_an_uninterrupted_one_ends(tmp_path):
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    assert _run(whole).returncode == 0
    stopped = _run(killed, "grpo-after-iteration#2")
    assert stopped.returncode == -9, stopped.stderr[-2000:]
    assert not (killed / "result.json").exists()
    again = _run(killed)
    assert again.returncode == 0, again.stderr[-2000:]
    first, second = (files.read_cached_json(p / "result.json") for p in (whole, killed))
    assert _comparable(second) == _comparable(first)
    assert list((killed / "train" / "aborted").iterdir())  # iteration 2's evidence, set aside
