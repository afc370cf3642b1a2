"""What one step of the Part I pipeline costs on a device: work counted from the model's
shape, turned into seconds by three constants per device.

Work: a forward pass over S tokens that keeps every position's logits (training, scoring,
and generation without a KV cache, which re-reads the whole prefix for every new token)
costs 2 FLOPs per weight per token plus 4 * layers * hidden * S^2 for the attention scores
and their weighted sum; a backward pass twice the forward. One cached decoding step computes
one token's logits and reads every weight once. An AdamW step reads and writes the weights,
the gradients and both moments (OPTIMIZER_PASSES reads and writes of 4 bytes per parameter,
counted from torch's foreach AdamW: a handful of element-wise kernels).

Seconds: FLOPs / sustained FLOP/s, plus reading every weight once per model call at the
sustained bytes/s (what dominates a decoding step), plus a fixed cost per model call (kernel
launches and Python in eager mode).
The GPU constants are the datasheets' FP32 peaks (TF32 is off in the profiles) times stated
efficiencies: nothing here was measured on a GPU. The CPU constants are fitted to the
stand-in's recorded step times (data/recorded/plan/standin-steps.json), and a test checks
that the model then predicts the other recorded step kinds within a stated tolerance.
"""

from __future__ import annotations

from dataclasses import dataclass

from verifiable_grpo.part1.cost_model import QWEN_SHAPE, qwen_parameters

# 4-byte reads + writes per parameter of one AdamW step, counted from torch's foreach kernels:
# decay (2), first moment lerp (3), second moment mul + addcmul (5), sqrt, bias division and
# eps (6), the addcdiv update (4), the gradient read again by the second moment (4).
OPTIMIZER_PASSES = 24


def parameters(shape: dict = QWEN_SHAPE) -> int:
    """Unique parameters (tied embedding counted once)."""
    return qwen_parameters(shape)


def head_parameters(shape: dict) -> int:
    return shape["vocabulary"] * shape["hidden"]


def forward_flops(shape: dict, tokens: int) -> float:
    """One forward pass over a sequence of `tokens`, every position's logits kept. The
    embedding lookup is free; the tied head is a full matmul at every position."""
    body = parameters(shape) - head_parameters(shape)  # decoder layers and norms
    matmuls = 2.0 * tokens * (body + head_parameters(shape))
    attention = 4.0 * shape["layers"] * shape["hidden"] * tokens * tokens
    return matmuls + attention


def training_flops(shape: dict, tokens: int) -> float:
    return 3.0 * forward_flops(shape, tokens)  # forward + backward (2x)


@dataclass(frozen=True)
class Device:
    """A device as the cost model sees it: sustained FP32 FLOP/s, sustained memory bytes/s
    and seconds per model call."""

    name: str
    flops: float
    bandwidth: float
    call_seconds: float

    def weights(self, shape: dict) -> float:
        """Reading every weight once, as each model call does."""
        return 4.0 * parameters(shape) / self.bandwidth

    def forward(self, shape: dict, tokens: int) -> float:
        return forward_flops(shape, tokens) / self.flops + self.weights(shape) + self.call_seconds

    def training(self, shape: dict, tokens: int) -> float:
        """Forward and backward over one sequence of `tokens` tokens."""
        return training_flops(shape, tokens) / self.flops + 2 * (
            self.weights(shape) + self.call_seconds
        )

    def decode(self, shape: dict) -> float:
        """One cached step: one token's logits, every weight read once."""
        return 2.0 * parameters(shape) / self.flops + self.weights(shape) + self.call_seconds

    def optimizer(self, shape: dict) -> float:
        return OPTIMIZER_PASSES * 4.0 * parameters(shape) / self.bandwidth

    def generate(self, shape: dict, prompt: int, response: int, cached: bool) -> float:
        """One response of `response` tokens after `prompt`: without a cache each token is a
        forward over the whole prefix (R*P + R(R-1)/2 token positions, sequence by sequence)."""
        if cached:
            return self.forward(shape, prompt) + (response - 1) * self.decode(shape)
        return sum(self.forward(shape, prompt + t) for t in range(response))


def gpu(
    name: str,
    peak_flops: float,
    bandwidth: float,
    compute_efficiency: float = 0.35,
    bandwidth_efficiency: float = 0.5,
    call_seconds: float = 0.008,
) -> Device:
    """A GPU from its datasheet peaks. Assumed (not measured): a 0.5B model's FP32 matmuls in
    eager mode sustain 35 % of peak, weight reads 50 % of peak bandwidth, and one model call
    of 24 layers costs 8 ms of launches and Python."""
    return Device(
        name, peak_flops * compute_efficiency, bandwidth * bandwidth_efficiency, call_seconds
    )


# FP32 (non-tensor-core) peaks and memory bandwidth from NVIDIA's datasheets.
GPUS = (
    gpu("T4", 8.1e12, 320e9),
    gpu("L4", 30.3e12, 300e9),
    gpu("A100 40GB", 19.5e12, 1555e9),
    gpu("H100 SXM", 67e12, 3350e9),
)


def calibrated_cpu(record: dict) -> Device:
    """The CPU of a recorded stand-in measurement, fitted from two step kinds only: bytes/s
    from the AdamW step (memory-bound), then FLOP/s from the 256-token forward pass; no call
    cost (a CPU call is microseconds of Python against seconds of arithmetic)."""
    shape, seconds = record["shape"], record["median_seconds"]
    bandwidth = OPTIMIZER_PASSES * 4.0 * parameters(shape) / seconds["adamw_step"]
    reading = 4.0 * parameters(shape) / bandwidth
    flops = forward_flops(shape, 256) / (seconds["forward_all_logits_256"] - reading)
    return Device(
        f"CPU ({record['machine']}, {record['threads']} thread(s))", flops, bandwidth, 0.0
    )


def predicted_steps(device: Device, shape: dict) -> dict:
    """The cost model's seconds for the measured step kinds (names as recorded)."""
    return {
        "forward_all_logits_64": device.forward(shape, 64),
        "forward_all_logits_128": device.forward(shape, 128),
        "forward_all_logits_256": device.forward(shape, 256),
        "cached_decode_16_after_96": device.forward(shape, 96) + 16 * device.decode(shape),
        "sft_update_8x96": (
            8 * training_flops(shape, 96) / device.flops
            + 2 * device.weights(shape)
            + device.optimizer(shape)
        ),
        "adamw_step": device.optimizer(shape),
    }
