"""The update loop Labs 1 and 2 share: batches of 16 conversations, token-mean masked loss,
AdamW, gradient clipping at 1.0, an optional warmup + cosine schedule; crash-safe.

The batch order is fixed in advance from a seeded generator, and the model has no dropout,
so a run's state is just (trained tensors, AdamW, scheduler, history): a `LabRun` on the
skeleton SFT, GRPO and the study share (core.resumable_run). Every `every` steps that state
goes to OUT/crash/<stage>/ (core.crash); a rerun after a kill continues from the newest
complete one, after checking it belongs to this run, and ends in the same bits as an
uninterrupted run.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from verifiable_grpo.core.config import canonical_json, sha256_bytes
from verifiable_grpo.core.resumable_run import ResumableRun
from verifiable_grpo.part3.smollm2.chat_data import EncodedRow, batch_loss

BATCH = 16


def epoch_order(n: int, steps: int, seed: int = 3, batch: int = BATCH) -> list[list[int]]:
    """Lab 1's order: a fresh permutation of the rows at each epoch, consumed in batches."""
    rng, order, batches = np.random.default_rng(seed), [], []
    while len(batches) < steps:
        if len(order) < batch:
            order = order + rng.permutation(n).tolist()
        batches.append(order[:batch])
        order = order[batch:]
    return batches


def random_batches(n: int, steps: int, seed: int = 3, batch: int = BATCH) -> list[list[int]]:
    """Lab 2's order: each step draws `batch` distinct rows."""
    rng = np.random.default_rng(seed)
    return [rng.choice(n, size=batch, replace=False).tolist() for _ in range(steps)]


def warmup_cosine(steps: int, warmup: int):
    """Multiplier of the learning rate before update s (0-based): linear warmup to 1, then
    a cosine down to 0 at the last update."""

    def factor(s: int) -> float:
        if s < warmup:
            return (s + 1) / warmup
        return 0.5 * (1.0 + math.cos(math.pi * (s - warmup) / max(1, steps - warmup)))

    return factor


class _Trained(torch.nn.Module):
    """The trained tensors as one module, so a lab's state holds what it trains (a LoRA's
    adapters, two embedding rows) and not the frozen 135M weights. The parameters are the
    model's own objects: loading a state writes into the model."""

    def __init__(self, parameters: dict[str, torch.nn.Parameter]):
        super().__init__()
        self.tensors = torch.nn.ParameterDict(
            {name.replace(".", ":"): p for name, p in parameters.items()}
        )


@dataclass
class LabRun(ResumableRun):
    """A model lab's update loop on core.resumable_run's skeleton: identity, trained
    tensors, AdamW and its schedule, and the loop's position and history."""

    identity: dict
    policy: torch.nn.Module
    optimizer: torch.optim.Optimizer
    scheduler: object
    history: list = field(default_factory=list)
    done: int = 0
    seconds: float = 0.0

    CODE_ENTRY = "part3/smollm2/trainer.py"

    def run_state(self) -> dict:
        return {"step": self.done, "seconds": self.seconds, "history": self.history}

    def load_run_state(self, state: dict) -> None:
        self.done, self.seconds, self.history = state["step"], state["seconds"], state["history"]

    def check_boundary(self, what: str) -> None:
        if len(self.history) != self.done:
            raise ValueError(
                f"{what}: {len(self.history)} updates in the history at step {self.done}"
            )


def lab_identity(parameters: dict, batches: list[list[int]], lr: float, stage: str) -> dict:
    """What a continued lab run must share with the one that saved the state."""
    return {
        "stage": stage,
        "learning_rate": lr,
        "updates": len(batches),
        "batches_sha256": sha256_bytes(canonical_json(batches)),
        "trained": {name: list(p.shape) for name, p in parameters.items()},
        "code_sha256": LabRun.code_sha256(),
    }


@dataclass(frozen=True)
class Updates:
    """What a lab's loop does: one update per entry of `batches` (the rows each reads), at
    learning rate `lr` times `schedule(step)` (warmup_cosine; None: a constant rate)."""

    batches: list[list[int]]
    lr: float
    schedule: Callable[[int], float] | None = None


@dataclass(frozen=True)
class Checkpoints:
    """Where a lab's crash checkpoints go: OUT/crash/<stage>/, one every `every` updates."""

    out: str | Path
    stage: str
    every: int = 5


def train(
    model,
    parameters: dict[str, torch.nn.Parameter],
    encoded: list[EncodedRow],
    updates: Updates,
    checkpoints: Checkpoints,
    log=print,
) -> dict:
    """Run len(updates.batches) updates of `parameters` (name -> tensor); -> history and
    seconds. A rerun continues from the newest crash checkpoint (and refuses one from
    another run: other batches, rate, tensors or code)."""
    batches, lr, schedule = updates.batches, updates.lr, updates.schedule
    out, stage, every = checkpoints.out, checkpoints.stage, checkpoints.every
    optimizer = torch.optim.AdamW(list(parameters.values()), lr=lr, weight_decay=0.0)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule or (lambda s: 1.0))
    run = LabRun(
        lab_identity(parameters, batches, lr, stage), _Trained(parameters), optimizer, scheduler
    )
    if run.continue_after_crash(Path(out), stage, outputs=[]) is not None:
        log(f"continuing {stage} after update {run.done} (crash checkpoint)")
    model.eval()  # no dropout: the update is a function of the batch alone
    for step in range(run.done, len(batches)):
        begin = time.perf_counter()
        loss, count = batch_loss(model, [encoded[i] for i in batches[step]])
        loss = loss / count
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(parameters.values()), 1.0)
        optimizer.step()
        scheduler.step()
        run.seconds += time.perf_counter() - begin
        value = float(loss.detach())
        run.history.append({"step": step + 1, "loss": value})
        run.done = step + 1
        log(f"{stage} update {step + 1}/{len(batches)}: loss {value:.4f}")
        if run.done % every == 0 and run.done < len(batches):
            run.save_crash(Path(out), stage, position=run.done)
    return {"history": run.history, "seconds": run.seconds}
