"""The skeleton every resumable training run shares: SFT, GRPO, the family study and the
model labs (part3.smollm2.trainer).

A run holds an identity (what a resumed run must share with the one that saved the state),
a trained policy, AdamW and its schedule, and its own position and random streams. The
skeleton owns the steps that are the same for all of them:

  prepare      `prepare_optimizer`: AdamW on the policy's unique parameters and the
               warm-up/cosine schedule of a config section
  checkpoint   `state()`: identity, weights, optimizer, scheduler and the process's RNG
               streams, plus the run's own part (`run_state`)
  restore      `restore()`: refuse another run's state (identity), then load everything
               back, the process's RNG streams after the run's own (nothing may draw in
               between), then the run's boundary check
  crash-save   `save_crash()` / `continue_after_crash()`: core.crash's state-and-note pairs
  finish       `save_final()`: the final state, then the crash copy is cleared
  identity     `shared_identity(config, sections)`: the fields every run's identity
               holds under one name each, the config's hash (of the sections the run
               reads) and `code_sha256()`, the hash of what the run's CODE_ENTRY imports
               (core.code_identity); the other fields are the run's own (data, weights,
               seeds...)

A run supplies `run_state()` (its position, streams and history as plain data and
tensors), `load_run_state(state)`, optionally `check_boundary(what)`, CODE_ENTRY,
its module (relative to the package), and STATE_ORDER, the order of a state's keys (a
notebook lists them; states written before the skeleton keep theirs). RNG_KEY names where the process's streams live in
the state (SFT's states call it "rng").
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from pathlib import Path

import torch

from verifiable_grpo.core import checkpoint, code_identity, crash, schedule
from verifiable_grpo.core.config import config_hash, sections_hash
from verifiable_grpo.core.model import unique_parameters


class ResumableRun:
    """Mixin for a run dataclass with fields identity, policy, optimizer and scheduler."""

    RNG_KEY = "system_rng"
    CODE_ENTRY = ""  # e.g. "training/grpo.py"
    STATE_ORDER: tuple = ()  # the state's keys in the order its files keep them

    # ------------------------------------------------------------------ identity
    @classmethod
    def code_sha256(cls) -> str:
        """SHA-256 of every project module the run's entry point imports (a resume refuses
        a state written by other code)."""
        return code_identity.entry_code_sha256(cls.CODE_ENTRY)

    @classmethod
    def shared_identity(cls, config: dict, sections: Iterable[str] | None = None) -> dict:
        """The identity fields every run type holds: the SHA-256 of the config (of the named
        top-level sections only, listed beside it, when the run reads just those; else of
        the whole config) and of the run's code. A run adds its own fields to these."""
        if sections is None:
            return {"config_sha256": config_hash(config), "code_sha256": cls.code_sha256()}
        return {
            "config_sections": list(sections),
            "config_sha256": sections_hash(config, sections),
            "code_sha256": cls.code_sha256(),
        }

    # ------------------------------------------------------------------ hooks
    def run_state(self) -> dict:
        """The run's own part of a state (position, streams, history)."""
        raise NotImplementedError

    def load_run_state(self, state: dict) -> None:
        """Load the run's own part back (called before the process's RNG streams)."""
        raise NotImplementedError

    def check_boundary(self, what: str) -> None:
        """Refuse a state that is not at a completed boundary (default: nothing to check)."""

    # ------------------------------------------------------------------ prepare
    def prepare_optimizer(self, section, total_updates: int) -> None:
        """AdamW on the policy's unique parameters with `section`'s learning rate and weight
        decay, and its warm-up then cosine schedule over `total_updates`."""
        self.optimizer = torch.optim.AdamW(
            unique_parameters(self.policy),
            lr=section.learning_rate,
            weight_decay=section.weight_decay,
        )
        self.scheduler = schedule.make_scheduler(
            self.optimizer, total_updates, section.warmup_fraction, section.final_lr_fraction
        )

    # ------------------------------------------------------------------ checkpoint, restore
    def state(self, **extra) -> dict:
        """The full state at a boundary; `extra` adds or replaces entries (wall times go
        under "timings", which the state comparison ignores)."""
        state = {
            "identity": self.identity,
            "model": self.policy.state_dict(),  # tied tensors keep sharing storage
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            self.RNG_KEY: checkpoint.capture_rng(),
            **self.run_state(),
            **extra,
        }
        if not self.STATE_ORDER:
            return state
        if set(self.STATE_ORDER) != set(state):
            raise ValueError(
                f"{type(self).__name__}.STATE_ORDER {sorted(self.STATE_ORDER)} "
                f"does not name the state's keys {sorted(state)}"
            )
        return {key: state[key] for key in self.STATE_ORDER}

    def restore(self, state: dict, what: str) -> None:
        """Load a saved state over the freshly prepared run (the process's RNG last)."""
        checkpoint.check_identity(self.identity, state["identity"], what)
        self.policy.load_state_dict(state["model"], strict=True)
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.load_run_state(state)
        checkpoint.restore_rng(state[self.RNG_KEY])  # after seeding, never before
        self.check_boundary(what)

    # ------------------------------------------------------------------ crash-save
    def save_crash(
        self, out: Path, stage: str, position: int, evidence: dict | None = None, **extra
    ) -> dict:
        """The crash pair for `position` (core.crash); returns its note with seconds."""
        return crash.save(out, stage, self.state(**extra), position, evidence)

    def continue_after_crash(
        self, out: Path, stage: str, outputs: list[str]
    ) -> tuple[dict, dict] | None:
        """Restore the newest complete crash pair; (state, note), or None after moving the
        stage's `outputs` (relative to OUT) aside: without a pair the stage restarts."""
        found = crash.latest(out, stage)
        if found is None:
            crash.move_aside(out, stage, outputs, "no crash checkpoint: the stage restarts")
            return None
        state, note = found
        self.restore(state, f"crash checkpoint of {stage} ({note['state']})")
        return state, note

    # ------------------------------------------------------------------ finish
    def save_final(self, path: Path, **extra) -> dict:
        """The final state (gzip'd, never overwritten) -> {"bytes","seconds","sha256"}."""
        return checkpoint.save_state(path, self.state(**extra))

    @staticmethod
    def finished(out: Path, stage: str) -> None:
        """The record is written: the crash copy has served."""
        crash.clear(out, stage)


@contextlib.contextmanager
def deterministic_kernels(device: torch.device):
    """On a GPU a bitwise resume needs deterministic kernels (and a fresh peak-memory
    count); the process's setting is put back afterwards. Nothing changes on a CPU."""
    if device.type != "cuda":
        yield
        return
    before = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.cuda.reset_peak_memory_stats(device)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(before)
