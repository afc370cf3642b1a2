"""`learn lift`'s long part (lift_study.run_candidate) at micro size (2 prompts x G 2,
3 iterations from the recorded warm start, 8 test problems, one draw), killed with
SIGKILL after the second iteration's evidence and run again, ends in the same
result.json as an uninterrupted run: per-iteration history, every scored row (validation
and test, greedy and sampled) and the final weights' digest."""

from __future__ import annotations

import os
import subprocess
import sys

from shared_helpers import comparable_result
from verifiable_grpo.core import files

PROFILE = """extends: tiny
grpo:
  checkpoint_every_iterations: 1
evaluation:
  problems: 8
  draws: 1
"""

MICRO = """
import sys
from verifiable_grpo.core.config import load_config
from verifiable_grpo.part1 import lift_study
base = load_config(sys.argv[1])
micro = lift_study.Candidate("micro", "tiny", 2, 2, 3e-5, 3, "a kill -9 test")
lift_study.run_candidate(base, micro, sys.argv[2], progress=False)
"""


def _run(profile, runs, fault=None):
    env = dict(os.environ, TQDM_DISABLE="1")
    if fault:
        env["VERIFIABLE_GRPO_FAULT"] = fault
    return subprocess.run(
        [sys.executable, "-c", MICRO, str(profile), str(runs)],
        env=env,
        capture_output=True,
        text=True,
    )


def test_a_killed_lift_candidate_ends_where_an_uninterrupted_one_ends(tmp_path):
    profile = tmp_path / "micro.yaml"
    profile.write_text(PROFILE)
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    done = _run(profile, whole)
    assert done.returncode == 0, done.stderr[-2000:]
    stopped = _run(profile, killed, "grpo-after-iteration#2")
    assert stopped.returncode == -9, stopped.stderr[-2000:]
    assert not (killed / "micro" / "result.json").exists()
    again = _run(profile, killed)
    assert again.returncode == 0, again.stderr[-2000:]
    first, second = (files.read_cached_json(p / "micro" / "result.json") for p in (whole, killed))
    assert len(first["history"]) == 3 and first["test_sample"]
    assert comparable_result(second) == comparable_result(first)
