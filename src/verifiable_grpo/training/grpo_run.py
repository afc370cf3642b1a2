"""A GRPO branch-and-mode run's context: its files, its identity and what it carries
between iterations (GRPORun, on core.resumable_run's skeleton), and how a fresh run is
prepared (digests, identity, optimizer, schedule, prompt order, RNG streams).

training/grpo.py runs it; the steps of one iteration are in grpo_iteration.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import torch

from verifiable_grpo.core import checkpoint
from verifiable_grpo.core import model as model_lib
from verifiable_grpo.core.config import sha256_file
from verifiable_grpo.core.config_schema import Profile
from verifiable_grpo.core.resumable_run import ResumableRun
from verifiable_grpo.core.runfolder import RunFolder, compute_identity, stage_name
from verifiable_grpo.task import data, prompts
from verifiable_grpo.training.grpo_plan import (
    GENERATION_SEED_OFFSET,
    PROMPT_ORDER_SEED_OFFSET,
    PromptOrder,
)

# The code a GRPO state depends on: the entry point that runs a branch and everything it
# imports, this module included (a resume refuses a state written by other code).
CODE_ENTRY = "training/grpo.py"


# --------------------------------------------------------------------------- run folder
# The config parts a GRPO state depends on (the data and the warm start enter by SHA-256).
IDENTITY_SECTIONS = ("seed", "device", "model", "tokens", "sampling", "grpo")


def run_paths(out_dir: Path, branch: str, mode: str) -> dict:
    folder = RunFolder(out_dir)
    return {
        "out": out_dir,
        "warmstart": folder.policy("warmstart"),
        "learning_data": folder.learning_data,
        "state": folder.state(branch, mode),
        "interrupt_state": folder.state(branch, "interrupt"),
        "weights": folder.policy(branch),
        "record": folder.record(branch, mode),
        "rollouts": folder.rollouts(branch, mode),
    }


def run_outputs(paths: dict, mode: str) -> list[Path]:
    """Every file this branch and mode writes (rollout evidence included)."""
    found = [p for p in (paths["state"], paths["record"]) if p.exists()]
    if mode == "resume" and paths["weights"].exists():
        found.append(paths["weights"])
    if paths["rollouts"].is_dir():
        found += sorted(p for p in paths["rollouts"].iterdir() if p.is_file())
    return found


def run_identity(run: GRPORun) -> dict:
    """What a resumed run must share with the interrupted one (modes excluded); read after
    `prepare` has taken the initial and reference digests."""
    config, budget, paths = run.config, run.budget, run.paths
    sections = IDENTITY_SECTIONS + (("exercise",) if budget["branch"] != "grpo" else ())
    return {
        "variant": "educational GRPO, exact KL on prefixes",
        **{
            k: budget[k]
            for k in (
                "branch",
                "group_size",
                "iterations",
                "prompts_per_iteration",
                "updates_per_rollout",
                "total_updates",
            )
        },
        **GRPORun.shared_identity(config, sections),
        "warmstart_sha256": sha256_file(paths["warmstart"]),
        "initial_model_digest": run.initial_digest,
        "reference_model_digest": run.reference_digest,
        "learning_data_sha256": data.dataset_sha256(paths["learning_data"]),
        "template": prompts.template_identity(run.tokenizer, config),
        "seeds": {
            "system": config.seed,
            "generation": config.seed + GENERATION_SEED_OFFSET,
            "prompt_order": config.seed + PROMPT_ORDER_SEED_OFFSET,
        },
        "compute": compute_identity(run.device),
    }


# --------------------------------------------------------------------------- run context
@dataclass(kw_only=True)
class GRPORun(ResumableRun):
    """Everything one branch-and-mode run shares between its steps."""

    CODE_ENTRY = CODE_ENTRY
    STATE_ORDER = (
        "identity",
        "iteration",
        "updates",
        "model",
        "optimizer",
        "scheduler",
        "prompt_order",
        "generation_rng",
        "system_rng",
        "consumed_rollout_ids",
        "history",
        "timings",
    )
    config: Profile  # the run's profile: its values, its hash, its provenance
    budget: dict
    branch: str
    mode: str
    paths: dict
    examples: list
    tokenizer: object
    policy: object
    reference: object
    device: torch.device
    progress: bool
    command_start: float
    identity: dict = field(default_factory=dict)
    initial_digest: str = ""
    reference_digest: str = ""
    optimizer: object = None
    scheduler: object = None
    order: PromptOrder | None = None
    generator: torch.Generator | None = None
    iteration: int = 0  # iterations done (the next one to run)
    updates_done: int = 0
    consumed: list = field(default_factory=list)
    history: list = field(default_factory=list)
    times: list = field(default_factory=list)  # per-iteration times of this mode
    loop_seconds_before: float = 0.0  # loop time spent before a crash
    evidence: dict = field(default_factory=dict)  # rollout file (relative) -> sha256
    crash_saves: list = field(default_factory=list)

    @property
    def section(self):
        return self.config.grpo

    @property
    def stage(self) -> str:
        return stage_name(self.branch, self.mode)

    @property
    def stop(self) -> int:
        return (
            self.budget["interrupt_at"] if self.mode == "interrupt" else self.budget["iterations"]
        )

    def run_state(self) -> dict:
        """The GRPO part of a state at an iteration boundary."""
        return {
            "iteration": self.iteration,
            "updates": self.updates_done,
            "prompt_order": self.order.state(),
            "generation_rng": self.generator.get_state(),
            "consumed_rollout_ids": list(self.consumed),
            "history": self.history,
        }

    def load_run_state(self, state: dict) -> None:
        self.order.load(state["prompt_order"])
        self.generator.set_state(state["generation_rng"])
        self.iteration, self.consumed = state["iteration"], list(state["consumed_rollout_ids"])
        self.history = list(state["history"])
        self.updates_done = state["updates"]

    def check_boundary(self, what: str) -> None:
        if (
            self.updates_done != self.iteration * self.budget["updates_per_rollout"]
            or len(self.history) != self.iteration
        ):
            raise ValueError(f"{what} is not at a completed iteration boundary")

    def timings(self, loop_seconds: float) -> dict:
        return {"loop_seconds": loop_seconds, "per_iteration": list(self.times)}


def prepare(run: GRPORun) -> None:
    """Digests, identity, optimizer, schedule, prompt order and RNG streams of a fresh run."""
    run.initial_digest = model_lib.model_digest(run.policy)
    run.reference_digest = model_lib.model_digest(run.reference)
    run.identity = run_identity(run)
    run.prepare_optimizer(run.section, run.budget["total_updates"])
    run.order = PromptOrder(len(run.examples), run.config.seed + PROMPT_ORDER_SEED_OFFSET)
    run.generator = torch.Generator(device=run.device).manual_seed(
        run.config.seed + GENERATION_SEED_OFFSET
    )
    checkpoint.seed_everything(run.config.seed)  # the run never depends on the process's RNG
