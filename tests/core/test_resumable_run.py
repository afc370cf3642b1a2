"""The resumable-run skeleton on a toy run: a state saved mid-way and restored in a fresh
run continues bit for bit; another run's state, or one off a boundary, is refused; a crash
pair is found again and, without one, the stage's outputs are moved aside."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest
import torch

from verifiable_grpo.core import checkpoint, crash
from verifiable_grpo.core.resumable_run import ResumableRun, deterministic_kernels

SECTION = SimpleNamespace(
    learning_rate=0.1, weight_decay=0.01, warmup_fraction=0.25, final_lr_fraction=0.1
)


@dataclass
class ToyRun(ResumableRun):
    identity: dict
    policy: torch.nn.Module
    noise: torch.Generator
    step: int = 0
    losses: list = field(default_factory=list)
    optimizer: object = None
    scheduler: object = None

    def run_state(self) -> dict:
        return {"step": self.step, "noise": self.noise.get_state(), "losses": list(self.losses)}

    def load_run_state(self, state: dict) -> None:
        self.noise.set_state(state["noise"])
        self.step, self.losses = state["step"], list(state["losses"])

    def check_boundary(self, what: str) -> None:
        if len(self.losses) != self.step:
            raise ValueError(f"{what} is not at a step boundary")

    def train(self, steps: int) -> None:
        for _ in range(steps):  # draws from its own stream and from the process's
            x = torch.randn(4, 3, generator=self.noise) + torch.randn(4, 3)
            loss = self.policy(x).pow(2).mean()
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            self.scheduler.step()
            self.step += 1
            self.losses.append(float(loss.detach()))


def fresh(identity=None) -> ToyRun:
    torch.manual_seed(0)
    run = ToyRun(
        identity or {"name": "toy", "code_sha256": "c"},
        torch.nn.Linear(3, 2),
        torch.Generator().manual_seed(5),
    )
    run.prepare_optimizer(SECTION, total_updates=6)
    checkpoint.seed_everything(7)
    return run


def test_a_restored_run_continues_bit_for_bit():
    continuous = fresh()
    continuous.train(6)
    first = fresh()
    first.train(3)
    # A state holds the live tensors: a copy stands for the file a run writes at once.
    saved = copy.deepcopy(first.state(timings={"seconds": 1.0}))
    first.train(1)  # weights and the process's RNG move on
    resumed = fresh()
    resumed.restore(saved, "toy state")
    resumed.train(3)
    assert checkpoint.compare_states(resumed.state(), continuous.state()) == []
    assert resumed.losses == continuous.losses


def test_another_runs_state_or_one_off_a_boundary_is_refused():
    run = fresh()
    run.train(2)
    saved = run.state()
    with pytest.raises(ValueError, match="differing identity fields: code_sha256"):
        fresh({"name": "toy", "code_sha256": "other"}).restore(saved, "toy state")
    saved["losses"] = saved["losses"][:1]
    with pytest.raises(ValueError, match="toy state is not at a step boundary"):
        fresh().restore(saved, "toy state")


def test_a_crash_pair_is_continued_and_its_absence_restarts_the_stage(tmp_path):
    (tmp_path / "out.txt").write_text("half-written")
    assert fresh().continue_after_crash(tmp_path, "toy-continuous", ["out.txt"]) is None
    assert not (tmp_path / "out.txt").exists()  # moved aside, never deleted
    assert list((tmp_path / crash.ABORTED_DIR).rglob("out.txt"))
    run = fresh()
    run.train(2)
    run.save_crash(tmp_path, "toy-continuous", run.step, timings={"seconds": 2.0})
    again = fresh()
    state, note = again.continue_after_crash(tmp_path, "toy-continuous", [])
    assert note["position"] == 2 and again.step == 2 and state["timings"] == {"seconds": 2.0}
    assert checkpoint.compare_states(again.state(), run.state()) == []
    again.finished(tmp_path, "toy-continuous")
    assert not crash.has_checkpoint(tmp_path, "toy-continuous")


def test_deterministic_kernels_leave_a_cpu_run_alone():
    before = torch.are_deterministic_algorithms_enabled()
    with deterministic_kernels(torch.device("cpu")):
        assert torch.are_deterministic_algorithms_enabled() == before


def test_a_state_keeps_its_declared_key_order_and_names_every_key():
    run = fresh()
    assert list(run.state())[:2] == ["identity", "model"]  # the skeleton's order
    order = ("losses", "step", "noise", "identity", "model", "optimizer", "scheduler", "system_rng")
    run.STATE_ORDER = order
    assert tuple(run.state()) == order
    run.STATE_ORDER = order[1:]
    with pytest.raises(ValueError, match="STATE_ORDER"):
        run.state()


class EntryRun(ToyRun):
    CODE_ENTRY = "core/checkpoint.py"


def test_the_shared_identity_fields_hash_the_config_it_reads_and_the_code():
    from verifiable_grpo.core import code_identity
    from verifiable_grpo.core.config import config_hash

    config = {"seed": 1, "sft": {"learning_rate": 1e-4}, "grpo": {"group_size": 4}}
    whole = EntryRun.shared_identity(config)
    assert whole == {
        "config_sha256": config_hash(config),
        "code_sha256": code_identity.entry_code_sha256("core/checkpoint.py"),
    }
    narrow = EntryRun.shared_identity(config, ("seed", "sft"))
    assert narrow["config_sections"] == ["seed", "sft"]
    assert narrow["code_sha256"] == whole["code_sha256"]
    # a section the run does not read leaves its identity; one it reads changes it
    other_grpo = dict(config, grpo={"group_size": 8})
    assert EntryRun.shared_identity(other_grpo, ("seed", "sft")) == narrow
    assert EntryRun.shared_identity(other_grpo) != whole
    other_sft = dict(config, sft={"learning_rate": 2e-4})
    assert (
        EntryRun.shared_identity(other_sft, ("seed", "sft"))["config_sha256"]
        != narrow["config_sha256"]
    )
