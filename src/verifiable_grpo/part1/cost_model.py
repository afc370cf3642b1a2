"""What the qwen profile's stages would cost on a Colab GPU: a cost model, not a measurement.

No GPU was available to this project, so the book states estimates and the assumptions
behind them, each one named below, instead of times. Training is compute-bound (about
6 x parameters FLOPs per trained token, 2 x for a forward pass); generation one response
at a time is memory-bound (every new token reads every weight once). The token counts come
from the profile's budgets and the recorded tiny run (the same counts, the same task).
"""

from __future__ import annotations

from dataclasses import dataclass

from verifiable_grpo.core.config_schema import Profile

# Qwen2.5-0.5B-Instruct's shape (its config.json); tied embeddings.
QWEN_SHAPE = {
    "hidden": 896,
    "intermediate": 4864,
    "layers": 24,
    "heads": 14,
    "kv_heads": 2,
    "vocabulary": 151_936,
}


@dataclass(frozen=True)
class Gpu:
    """The assumptions, in one place. Defaults: Colab's free T4 in FP32 (the profile turns
    TF32 off): 8.1 TFLOP/s and 320 GB/s peak, of which a 0.5B model in eager mode is assumed
    to sustain 35 % (training matmuls) and 50 % (weight reads while decoding)."""

    name: str = "T4 (Colab), FP32"
    peak_flops: float = 8.1e12
    compute_efficiency: float = 0.35
    bandwidth_bytes: float = 320e9
    bandwidth_efficiency: float = 0.5
    prompt_tokens: int = 60  # assumed: Qwen's chat template with its default system message


def qwen_parameters(shape: dict = QWEN_SHAPE) -> int:
    """Unique parameters: embedding (tied with the output head), 24 decoder layers, final norm."""
    h, f, v = shape["hidden"], shape["intermediate"], shape["vocabulary"]
    kv = h // shape["heads"] * shape["kv_heads"]
    attention = h * h + h + 2 * (h * kv + kv) + h * h  # q (bias), k, v (bias), o
    mlp = 3 * h * f
    layer = attention + mlp + 2 * h  # two RMSNorm weights
    return v * h + shape["layers"] * layer + h


def _seconds_training(tokens: float, parameters: int, gpu: Gpu, factor: float = 6.0) -> float:
    return factor * parameters * tokens / (gpu.peak_flops * gpu.compute_efficiency)


def _seconds_decoding(tokens: float, parameters: int, gpu: Gpu) -> float:
    per_token = 4 * parameters / (gpu.bandwidth_bytes * gpu.bandwidth_efficiency)  # FP32 weights
    return tokens * per_token


def stage_estimates(config: Profile, response_tokens: float, gpu: Gpu = Gpu()) -> list[dict]:
    """Estimated seconds per pipeline stage for `config` (the qwen profile), given the mean
    generated tokens per response (EOS included). Each training branch runs twice in the
    pipeline (continuous, then interrupt + resume), so its estimate counts both."""
    c = config
    parameters = qwen_parameters()
    sequence = gpu.prompt_tokens + response_tokens
    rows = []
    for name, section in (("warm-start SFT", c.warmstart), ("further SFT", c.sft)):
        trained = section.examples * section.epochs * sequence
        validated = section.validation_examples * section.epochs * sequence
        seconds = _seconds_training(trained, parameters, gpu) + _seconds_training(
            validated, parameters, gpu, 2.0
        )
        rows.append({"stage": name, "tokens": 2 * trained, "seconds": 2 * seconds})
    g, e = c.grpo, c.exercise
    for name, iterations, group in (
        ("GRPO", g.iterations, g.group_size),
        *((f"GRPO G={size} (exercise)", e.iterations, size) for size in e.group_sizes),
    ):
        responses = iterations * g.prompts_per_iteration * group
        generated = responses * response_tokens
        scored = responses * sequence
        # per update: current forward + backward (6), reference forward (2); one rescoring (2)
        training = g.updates_per_rollout * (
            _seconds_training(scored, parameters, gpu)
            + _seconds_training(scored, parameters, gpu, 2.0)
        )
        seconds = (
            _seconds_decoding(generated, parameters, gpu)
            + training
            + _seconds_training(scored, parameters, gpu, 2.0)
        )
        rows.append({"stage": name, "tokens": 2 * (generated + scored), "seconds": 2 * seconds})
    policies = 3 + len(e.group_sizes)
    answers = policies * c.evaluation.problems * (1 + c.evaluation.draws)
    rows.append(
        {
            "stage": f"evaluation ({policies} policies)",
            "tokens": answers * response_tokens,
            "seconds": _seconds_decoding(answers * response_tokens, parameters, gpu),
        }
    )
    return rows
