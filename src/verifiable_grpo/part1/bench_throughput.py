"""How hard a bench arm works the CPU: tokens per second, achieved FLOP/s, and its share of
a matrix-multiply peak measured in the same process.

A decoder with N parameters spends about 2N floating-point operations per token in a
forward pass (one multiply and one add per weight) and about 6N per token it trains on
(the forward pass, and a backward pass twice as costly). An arm's rollout set forwards
every row's prompt and answer once while sampling and trains on them `updates` times; the
frozen reference forwards them once more. Rows that share a prompt read it once (shared
prompts), so the FLOPs below count the work of rows that each carry their prompt: the
achieved rate is that equivalent work over the measured seconds.

The peak is a float32 matrix product of `size` x `size` matrices timed in the same
process, with the same threads, right after the arm: the machine's rate on the kind of
work a model's linear layers are made of, under the load it has then.
"""

from __future__ import annotations

import statistics
import time

import torch

FORWARD, TRAINED = 2, 6  # FLOPs per parameter per token


def matmul_peak(size: int = 1024, repeats: int = 8) -> dict:
    """{"gflops", "size", "seconds"}: the best of `repeats` timed float32 products."""
    a, b = torch.randn(size, size), torch.randn(size, size)
    torch.mm(a, b)  # warm-up: allocation and kernel choice
    best = float("inf")
    for _ in range(repeats):
        tick = time.perf_counter()
        torch.mm(a, b)
        best = min(best, time.perf_counter() - tick)
    return {"gflops": 2 * size**3 / best / 1e9, "size": size, "seconds": best}


def set_flops(per_set: dict, parameters: int, updates: int) -> dict:
    """A rollout set's FLOPs: sampling (forward), the reference and the updates (trained)."""
    tokens = per_set["prompt_tokens"] + per_set["response_tokens"]
    return {
        "generation": FORWARD * parameters * tokens,
        "training": (TRAINED * updates + FORWARD) * parameters * tokens,
        "tokens": tokens,
    }


def throughput(arm: dict, parameters: int, updates: int, peak: dict) -> dict:
    """Medians over the arm's timed sets: generated tokens/s, trained tokens/s, achieved
    GFLOP/s of the whole set and its share of the peak."""
    rows = []
    for per_set in arm["per_set"]:
        flops = set_flops(per_set, parameters, updates)
        rows.append(
            {
                "generated_tokens_per_second": per_set["response_tokens"] / per_set["generation"],
                "trained_tokens_per_second": updates * flops["tokens"] / per_set["optimisation"],
                "gflops": (flops["generation"] + flops["training"]) / per_set["total"] / 1e9,
            }
        )
    out = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
    out.update(
        peak_gflops=peak["gflops"],
        share_of_peak=out["gflops"] / peak["gflops"],
        parameters=parameters,
    )
    return out


def throughput_line(result: dict) -> str:
    return (
        f"generated {result['generated_tokens_per_second']:.0f} tokens/s, trained "
        f"{result['trained_tokens_per_second']:.0f} tokens/s, {result['gflops']:.1f} GFLOP/s "
        f"achieved = {result['share_of_peak']:.0%} of a {result['peak_gflops']:.0f} GFLOP/s "
        "matmul peak measured right after"
    )
