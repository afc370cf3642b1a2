"""Lab 6's suite runs' command-line option, declared once (core/settings_schema.py): the
model the suite compares with the instruct model; `run_lab` in greedy.py, sampled.py and
families_run.py takes it."""

from __future__ import annotations

from dataclasses import dataclass

from verifiable_grpo.core.settings_schema import option
from verifiable_grpo.part3.lab_limits import POLICY


@dataclass(frozen=True)
class SuiteSettings:
    policy: str | None = option(POLICY, default=None)
