"""Memory measurements of `bench grpo`: the peak while a block of work runs (PeakMemory:
CUDA allocated bytes, or the resident set sampled on CPU), and the exact KL's working
memory at a real vocabulary, each block size in a fresh process (exact_kl_memory).
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import torch

from verifiable_grpo.core.config import repo_root

KL_SHAPE = {"responses": 16, "tokens": 64, "vocabulary": 151_936}


class PeakMemory:
    """Peak memory while the block runs: CUDA allocated bytes, or on CPU the resident set
    sampled every millisecond (an estimate: a shorter-lived peak can be missed)."""

    def __init__(self, device: torch.device):
        self.device, self.peak, self._stop = device, 0, threading.Event()

    @staticmethod
    def resident_bytes() -> int:
        with open("/proc/self/statm") as handle:
            return int(handle.read().split()[1]) * 4096

    def _sample(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, self.resident_bytes())
            time.sleep(0.001)

    def __enter__(self):
        if self.device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(self.device)
        else:
            self._thread = threading.Thread(target=self._sample, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc):
        if self.device.type == "cuda":
            self.peak = torch.cuda.max_memory_allocated(self.device)
        else:
            self._stop.set()
            self._thread.join()
        return False


KL_PROBE = """
import resource, sys, torch
from verifiable_grpo.training import losses
torch.manual_seed(0)
b, t, v, block = {responses}, {tokens}, {vocabulary}, int(sys.argv[1])
current = torch.randn(b, t, v).requires_grad_(True)
reference = torch.randn(b, t, v)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
kl = losses.exact_prefix_kl(current, reference, block_size=block)
(gradient,) = torch.autograd.grad(kl.sum(), current)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
# The gradient w.r.t. the logits is the result, as large as the logits: not working memory.
print((after - before) * 1024 - gradient.numel() * gradient.element_size())
"""


def exact_kl_memory(blocks=(4096, KL_SHAPE["vocabulary"])) -> dict:
    """Working memory of the exact KL (forward + backward) beyond its inputs and the
    gradient it returns, each block size in a fresh process (peak resident set, ru_maxrss)."""
    script = KL_PROBE.format(**KL_SHAPE)
    env = {
        "PYTHONPATH": str(repo_root() / "src"),
        "OMP_NUM_THREADS": "1",
        "OMP_WAIT_POLICY": "PASSIVE",
        "PATH": "/usr/bin:/bin",
    }
    rows = []
    for block in blocks:
        out = subprocess.run(
            [sys.executable, "-c", script, str(block)],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
        )
        if out.returncode != 0:
            raise RuntimeError(f"exact-KL probe failed: {out.stderr[-2000:]}")
        rows.append({"block_size": block, "working_bytes": int(out.stdout.split()[-1])})
    logits = KL_SHAPE["responses"] * KL_SHAPE["tokens"] * KL_SHAPE["vocabulary"] * 4
    return {
        **KL_SHAPE,
        "logits_bytes_each": logits,
        "blocks": rows,
        "note": "peak resident bytes of forward + backward beyond the two float32 logit "
        "tensors (inputs) and the gradient they return (output)",
    }
