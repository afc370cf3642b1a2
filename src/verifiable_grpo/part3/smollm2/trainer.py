"""The update loop Labs 1 and 2 share: batches of 16 conversations, token-mean masked loss,
AdamW, gradient clipping at 1.0, an optional warmup + cosine schedule; crash-safe.

The batch order is fixed in advance from a seeded generator, and the model has no dropout,
so a run's state is just (trained tensors, AdamW, scheduler, history). Every `every` steps
that state goes to OUT/crash/<stage>/ (core.crash); a rerun after a kill continues from the
newest complete one and ends in the same bits as an uninterrupted run.
"""
from __future__ import annotations

import math
import time

import numpy as np
import torch

from verifiable_grpo.core import crash
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


def train(model, parameters: dict[str, torch.nn.Parameter], encoded: list[EncodedRow],
          batches: list[list[int]], lr: float, out, stage: str, every: int = 5,
          schedule=None, log=print) -> dict:
    """Run len(batches) updates of `parameters` (name -> tensor); -> history and seconds."""
    optimizer = torch.optim.AdamW(list(parameters.values()), lr=lr, weight_decay=0.0)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule or (lambda s: 1.0))
    history, done, seconds = [], 0, 0.0
    found = crash.latest(out, stage)
    if found is not None:
        state, _ = found
        with torch.no_grad():
            for name, tensor in state["parameters"].items():
                parameters[name].copy_(tensor)
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        history, done, seconds = state["history"], state["step"], state["seconds"]
        log(f"continuing {stage} after update {done} (crash checkpoint)")
    model.eval()  # no dropout: the update is a function of the batch alone
    for step in range(done, len(batches)):
        begin = time.perf_counter()
        loss, count = batch_loss(model, [encoded[i] for i in batches[step]])
        loss = loss / count
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(parameters.values()), 1.0)
        optimizer.step()
        scheduler.step()
        seconds += time.perf_counter() - begin
        value = float(loss.detach())
        history.append({"step": step + 1, "loss": value})
        log(f"{stage} update {step + 1}/{len(batches)}: loss {value:.4f}")
        if (step + 1) % every == 0 and step + 1 < len(batches):
            crash.save(out, stage, {"step": step + 1, "seconds": seconds, "history": history,
                                    "parameters": {n: p.detach().clone() for n, p in parameters.items()},
                                    "optimizer": optimizer.state_dict(),
                                    "scheduler": scheduler.state_dict()}, position=step + 1)
    return {"history": history, "seconds": seconds}
