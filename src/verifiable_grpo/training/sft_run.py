"""An SFT branch-and-mode run's context: what it carries between updates (weights,
AdamW, schedule, example order, position in the epoch, histories, timings) and the part
of a state that is its own, on core.resumable_run's skeleton.

training/sft.py prepares and runs it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from verifiable_grpo.core.config_schema import SFT, Profile
from verifiable_grpo.core.resumable_run import ResumableRun
from verifiable_grpo.core.runfolder import stage_name

# The code an SFT state depends on: the entry point that runs a branch and everything it
# imports, this module included (a resume refuses a state written by other code).
CODE_ENTRY = "training/sft.py"


@dataclass(kw_only=True)
class SFTRun(ResumableRun):
    """Everything one branch-and-mode SFT run shares between its steps."""

    RNG_KEY = "rng"  # where its states keep the process's RNG streams
    CODE_ENTRY = CODE_ENTRY
    STATE_ORDER = (
        "identity",
        "branch",
        "epoch",
        "updates",
        "position",
        "model",
        "optimizer",
        "scheduler",
        "sampler",
        "rng",
        "history",
        "validation_history",
        "model_digest",
        "timings",
    )
    config: Profile  # the run's profile: its values, its hash, its provenance
    branch: str
    mode: str
    paths: dict
    model: object
    rows: list
    val_rows: list
    pad_id: int
    identity: dict
    initial_digest: str
    parameters: list
    sampler: torch.Generator
    optimizer: object = None  # prepare_optimizer
    scheduler: object = None
    epoch: int = 0  # epochs finished
    updates: int = 0
    epoch_order: list | None = None  # the current epoch's example order (None: not drawn)
    offset: int = 0  # examples of the current epoch already trained on
    history: list = field(default_factory=list)
    validation_history: list = field(default_factory=list)
    timings: dict = field(
        default_factory=lambda: {
            "state_load_seconds": 0.0,
            "optimisation_seconds": 0.0,
            "validation_seconds": 0.0,
            "update_seconds": [],
        }
    )
    crash_saves: list = field(default_factory=list)

    @property
    def section(self) -> SFT:
        return getattr(self.config, self.branch)

    @property
    def stage(self) -> str:
        return stage_name(self.branch, self.mode)

    @property
    def stop(self) -> int:
        epochs = self.section.epochs
        return self.section.interrupt_after_epochs if self.mode == "interrupt" else epochs

    @property
    def policy(self):
        return self.model

    def run_state(self) -> dict:
        """The SFT part of a state (a final state adds the weights' digest; a crash state,
        written every few updates, leaves it None: its file's SHA-256, in its note, is
        what a continuation checks)."""
        return {
            "branch": self.branch,
            "epoch": self.epoch,
            "updates": self.updates,
            "position": {"epoch_order": self.epoch_order, "offset": self.offset},
            "sampler": self.sampler.get_state(),
            "history": self.history,
            "validation_history": self.validation_history,
            "model_digest": None,
            "timings": dict(self.timings),
        }

    def load_run_state(self, state: dict) -> None:
        self.sampler.set_state(state["sampler"])
        self.epoch, self.updates = state["epoch"], state["updates"]
        self.epoch_order = state["position"]["epoch_order"]
        self.offset = state["position"]["offset"]
        self.history, self.validation_history = state["history"], state["validation_history"]
