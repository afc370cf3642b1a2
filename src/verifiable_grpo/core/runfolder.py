"""Where everything of a run lives, what its branches and policies are called, and the
record of the machine that computed it. Every other module asks here for a path or a name.

OUT/
  data/, learning-data/                      the dataset and its label-free learning view
  checkpoints/{branch}-{mode}.pt.gz          full states (resume evidence)
  checkpoints/{branch}-resume.safetensors    the branch's final policy
  learning/{branch}-{mode}.json              learning records
  rollouts/{branch}-{mode}/iteration-N.json  GRPO evidence, one file per iteration
  resume-{branch}.json                       continuous vs resumed state, bit for bit
  inference/{policy}/, scores/{policy}-{m}.json, results.json, exercise/
  stages/, crash/, aborted/, .lock           the pipeline's bookkeeping
"""

from __future__ import annotations

import re
from pathlib import Path

from verifiable_grpo.core.config_schema import Profile

MODES = ("continuous", "interrupt", "resume")  # every training branch runs all three
INFERENCE_MODES = ("greedy", "sample")
MAIN_BRANCHES = ("warmstart", "sft", "grpo")  # the three policies of the main table
SFT_BRANCHES = ("warmstart", "sft")
_EXERCISE = re.compile(r"grpo-g(\d+)")


# ---------------------------------------------------------------------------- names
def exercise_branch(group_size: int) -> str:
    return f"grpo-g{group_size}"


def exercise_group_size(branch: str) -> int | None:
    """N for an exercise branch 'grpo-gN', None for any other name."""
    match = _EXERCISE.fullmatch(branch)
    return int(match.group(1)) if match else None


def exercise_branches(config: Profile) -> tuple[str, ...]:
    return tuple(exercise_branch(size) for size in config.exercise.group_sizes)


def branches(config: Profile) -> tuple[str, ...]:
    """Every trained branch of this profile (each also names its final policy)."""
    return MAIN_BRANCHES + exercise_branches(config)


def check_branch(config: Profile, branch: str) -> str:
    known = branches(config)
    if branch not in known:
        raise ValueError(
            f"unknown branch {branch!r}; this profile's branches are {list(known)} "
            "(exercise branches come from exercise.group_sizes)"
        )
    return branch


def check_mode(mode: str) -> str:
    if mode not in MODES:
        raise ValueError(f"mode must be one of {list(MODES)}, got {mode!r}")
    return mode


def stage_name(branch: str, mode: str) -> str:
    return f"{branch}-{mode}"


def order_policies(names) -> list[str]:
    """Main policies first in their order, then exercise branches by group size."""

    def key(name):
        if name in MAIN_BRANCHES:
            return (0, MAIN_BRANCHES.index(name))
        size = exercise_group_size(name)
        return (1, size if size is not None else 10**9, name)

    return sorted(names, key=key)


# ---------------------------------------------------------------------------- paths
class RunFolder:
    """The paths of one run folder (nothing is created by asking)."""

    def __init__(self, out):
        self.out = Path(out)

    @property
    def data(self) -> Path:
        return self.out / "data"

    @property
    def learning_data(self) -> Path:
        return self.out / "learning-data"

    def state(self, branch: str, mode: str) -> Path:
        return self.out / "checkpoints" / f"{branch}-{mode}.pt.gz"

    def policy(self, branch: str) -> Path:
        return self.out / "checkpoints" / f"{branch}-resume.safetensors"

    def record(self, branch: str, mode: str) -> Path:
        return self.out / "learning" / f"{branch}-{mode}.json"

    def rollouts(self, branch: str, mode: str) -> Path:
        return self.out / "rollouts" / f"{branch}-{mode}"

    def resume_check(self, branch: str) -> Path:
        return self.out / f"resume-{branch}.json"

    def inference(self, policy: str) -> Path:
        return self.out / "inference" / policy

    def scores(self, policy: str, mode: str) -> Path:
        return self.out / "scores" / f"{policy}-{mode}.json"

    def recorded(self, branch: str, mode: str) -> dict | None:
        """A branch's learning record, None when it has not been written."""
        from verifiable_grpo.core.files import read_json

        path = self.record(branch, mode)
        return read_json(path) if path.is_file() else None

    def recorded_state_sha256(self, branch: str, mode: str) -> str | None:
        """The SHA-256 a learning record lists for its state (SFT: state.sha256, GRPO:
        costs.state_sha256); None without a record."""
        record = self.recorded(branch, mode)
        if record is None:
            return None
        return (record.get("state") or {}).get("sha256") or record["costs"]["state_sha256"]

    def recorded_policy_sha256(self, branch: str) -> str | None:
        """The SHA-256 a resume record lists for its saved policy (SFT: policy, GRPO:
        final_weights); None without one."""
        record = self.recorded(branch, "resume") or {}
        return (record.get("policy") or record.get("final_weights") or {}).get("sha256")

    @property
    def results(self) -> Path:
        return self.out / "results.json"

    @property
    def exercise(self) -> Path:
        return self.out / "exercise"

    @property
    def report(self) -> Path:
        return self.out / "report.md"

    # glob patterns (relative to OUT) of what a stage writes
    @staticmethod
    def branch_patterns(branch: str, mode: str) -> list[str]:
        return [
            f"checkpoints/{branch}-{mode}.*",
            f"learning/{branch}-{mode}.json",
            f"learning/{branch}-{mode}/*",
            f"rollouts/{branch}-{mode}/*",
        ]

    @staticmethod
    def evaluation_patterns(policies) -> list[str]:
        return [f"inference/{p}/*" for p in policies] + [
            f"scores/{p}-{m}.json" for p in policies for m in INFERENCE_MODES
        ]


# ---------------------------------------------------------------------------- the machine
def compute_identity(device) -> dict:
    """Where the numbers are computed: another GPU model or CPU thread count can change
    floating-point results, so a bitwise resume must run on the same kind of machine."""
    import torch  # here, so that naming paths (the CLI's --help) needs no torch

    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    return {
        "device": name,
        "torch_threads": torch.get_num_threads(),
        "torch": str(torch.__version__),
    }
