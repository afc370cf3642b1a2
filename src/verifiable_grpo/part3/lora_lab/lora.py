"""Lab 2: LoRA on every block projection of SmolLM2-135M, zero-init check, training, merge.

The chat rows are re-drawn first (as in Lab 1); the base is then frozen and each
q/k/v/o/gate/up/down projection gets a rank-8 update (alpha 16). Before any update the
adapted model must give the base's logits exactly. After 24 AdamW steps the factors are
folded into the weights; the merged model must give the adapted logits within MERGE_TOLERANCE
and the same greedy replies on the held-out set. With `row_delta` (a Try this), the chat rows
also get a trainable delta shared by the lookup and the tied head (smollm2/row_delta.py),
folded into the table before the adapters are merged.
"""

from __future__ import annotations

import torch

from verifiable_grpo.core import crash
from verifiable_grpo.models import smollm2 as loader
from verifiable_grpo.part3.lora_lab.settings import LoRASettings
from verifiable_grpo.part3.smollm2 import (
    chat_data,
    chat_rows,
    evaluation,
    records,
    row_delta,
    trainer,
)
from verifiable_grpo.training import lora

NAME = "lora"
MERGE_TOLERANCE = 2e-3  # FP32 logits; summing W + sBA first reorders the additions
DEFAULTS = dict(
    rank=8,
    alpha=16.0,
    steps=24,
    lr=1e-3,
    seed=3,
    init_rows=True,
    targets=list(lora.BLOCK_PROJECTIONS),
    quick_data=False,
)


def structure(rank: int = 8, targets=lora.BLOCK_PROJECTIONS) -> dict:
    """The counts of Lab 2 from the architecture alone (meta device: no weights, instant)."""
    model = loader.meta_model()
    base = lora.parameter_counts(model)["total"]
    wrapped = lora.attach_lora(model, rank=rank, alpha=2 * rank, targets=tuple(targets))
    counts = lora.parameter_counts(model)
    return {
        "base_parameters": base,
        "wrapped": len(wrapped),
        "trainable": counts["trainable"],
        "total": counts["total"],
        "trainable_percent": 100 * counts["trainable_fraction"],
        "hand_count": lora.lora_parameter_count(model),
        "adam_moments_mb": lora.adam_moment_megabytes(counts["trainable"]),
        "full_adam_moments_mb": lora.adam_moment_megabytes(base),
    }


def max_logit_difference(model, ids: list[int], reference: torch.Tensor) -> float:
    with torch.no_grad():
        return float((model(torch.tensor([ids])).logits - reference).abs().max())


def _adapt(model, settings: dict, probe: list[int], base_logits, log):
    """LoRA on the chosen projections (and the chat-row delta when asked), checked to leave
    the logits unchanged; (wrapped names, the delta or None, parameter counts, the check)."""
    torch.manual_seed(settings["seed"])  # the A factors' draw
    wrapped = lora.attach_lora(
        model, settings["rank"], settings["alpha"], targets=tuple(settings["targets"])
    )
    shared = row_delta.attach(model) if settings.get("row_delta") else None  # after the freeze
    counts = lora.parameter_counts(model)
    initial = max_logit_difference(model, probe, base_logits)
    if initial != 0.0:
        raise AssertionError(f"zero-initialised adapters changed the logits by {initial}")
    log(
        f"wrapped {len(wrapped)} projections; trainable {counts['trainable']:,} of "
        f"{counts['total']:,}; initial logit difference {initial}"
    )
    return wrapped, shared, counts, initial


def _evaluate_and_merge(model, tokenizer, held: tuple, probe: list[int], shared, rows: dict):
    """Evaluate the adapted model, fold the delta and merge the adapters, evaluate again;
    (adapted, merged, the merge's max logit difference on the probe)."""
    held_out, held_encoded = held
    adapted = evaluation.evaluate(model, tokenizer, held_out, held_encoded)
    with torch.no_grad():
        adapted_logits = model(torch.tensor([probe])).logits
    if shared is not None:
        rows["delta_norms"] = row_delta.delta_norms(shared)
        row_delta.fold(model)
        rows["folded"] = chat_rows.diagnose(model, tokenizer)
    lora.merge_lora(model)
    merge_difference = max_logit_difference(model, probe, adapted_logits)
    merged = evaluation.evaluate(model, tokenizer, held_out, held_encoded)
    return adapted, merged, merge_difference


def run(out, cache=None, log=print, **overrides) -> dict:
    settings = {**DEFAULTS, **overrides}
    done = records.finished(out, NAME)
    if done is not None:
        log(f"{out}/{NAME}-metrics.json exists: Lab 2 is finished there (use another --out)")
        return done
    started = records.start()
    model, tokenizer = loader.load(cache)
    train_rows, held_out = chat_data.split(quick=settings["quick_data"])
    encoded = [chat_data.encode(tokenizer, r) for r in train_rows]
    held_encoded = [chat_data.encode(tokenizer, r) for r in held_out]
    rows = {"before": chat_rows.diagnose(model, tokenizer)}
    if settings["init_rows"]:
        chat_rows.reinitialise(model)
    rows["after"] = chat_rows.diagnose(model, tokenizer)
    probe = encoded[0]["ids"]
    with torch.no_grad():
        base_logits = model(torch.tensor([probe])).logits
    base_parameters = lora.parameter_counts(model)["total"]
    wrapped, shared, counts, initial = _adapt(model, settings, probe, base_logits, log)
    parameters = {n: p for n, p in model.named_parameters() if p.requires_grad}
    trained = trainer.train(
        model,
        parameters,
        encoded,
        trainer.Updates(
            trainer.random_batches(len(encoded), settings["steps"], settings["seed"]),
            settings["lr"],
        ),
        trainer.Checkpoints(out, f"lab-{NAME}", every=6),
        log=log,
    )
    adapted, merged, merge_difference = _evaluate_and_merge(
        model, tokenizer, (held_out, held_encoded), probe, shared, rows
    )
    metrics = {
        "train_rows": len(train_rows),
        "held_out_rows": len(held_out),
        "trained_fraction": chat_data.trained_fraction(encoded),
        "chat_rows": rows,
        "base_parameters": base_parameters,
        "wrapped": len(wrapped),
        "trainable": counts["trainable"],
        "total": counts["total"],
        "initial_logit_difference": initial,
        "history": trained["history"],
        "training_seconds": round(trained["seconds"], 1),
        "adapted": {k: v for k, v in adapted.items() if k != "new_ids"},
        "merged": {k: v for k, v in merged.items() if k != "new_ids"},
        "merged_parameters": lora.parameter_counts(model)["total"],
        "merge_max_logit_difference": merge_difference,
        "merge_tolerance": MERGE_TOLERANCE,
        "identical_decoded_outputs": adapted["replies"] == merged["replies"],
        "identical_new_tokens": adapted["new_ids"] == merged["new_ids"],
        "held_out": held_out,
    }
    path = records.write(out, NAME, settings, metrics, started, cache)
    crash.clear(out, f"lab-{NAME}")
    log(f"wrote {path}")
    if merge_difference >= MERGE_TOLERANCE or not metrics["identical_decoded_outputs"]:
        raise AssertionError(
            f"the merged model differs: max logit difference {merge_difference}, "
            f"identical replies {metrics['identical_decoded_outputs']}"
        )
    return records.finished(out, NAME)


def run_lab(out, settings: LoRASettings, cache=None) -> dict:
    """`python -m verifiable_grpo lab lora [--out DIR] [--no-row-init] [--rank R] [--alpha A]
    [--targets q_proj,k_proj,...] [--row-delta]`; an option not given keeps the default (so the
    default run's settings, and their hash, are what they were before these options existed).
    The targets are wrapped in the block's order, whatever order they were given in."""
    s = settings
    given = {
        "rank": s.rank,
        "alpha": None if s.alpha is None else float(s.alpha),
        "targets": None
        if s.targets is None
        else [name for name in lora.BLOCK_PROJECTIONS if name in s.targets],
        "row_delta": True if s.row_delta else None,
    }
    return run(
        out,
        cache=cache,
        init_rows=not s.no_row_init,
        **{key: value for key, value in given.items() if value is not None},
    )


def summary(metrics: dict) -> str:
    adapted = metrics["adapted"]
    return (
        f"adapted loss/stop/exact {adapted['loss']:.4f} {adapted['stop']:.2f} "
        f"{adapted['exact']:.2f}; merge max logit difference "
        f"{metrics['merge_max_logit_difference']:.3e}"
    )


# What the post-training module printed for its own run of this lab (SmolLM2-135M BASE at a
# pinned revision, FP32 hub weights, a 4-thread laptop CPU): shown beside our figures,
# attributed, never as ours.
MODULE_REPORTS = {
    "wrapped": 210,
    "trainable": 2_442_240,
    "total": 136_957_248,
    "trainable_percent": 1.783,
    "adam_moments_mb": 19.54,
    "full_adam_moments_mb": 1076.12,
    "initial_logit_difference": 0.0,
    "trained_fraction_percent": 9.786,
    "loss": {4: 1.5709, 8: 0.4989, 12: 0.7453, 16: 0.2747, 20: 0.3550, 24: 0.1364},
    "training_seconds": 39.1,
    "adapted": {"loss": 0.2570, "stop": 1.00, "exact": 0.58},
    "families": {
        "conversion": 0.80,
        "addition": 0.10,
        "extraction": 1.00,
        "limit": 0.20,
        "sorting": 0.80,
    },
    "merge_max_logit_difference": 1.040e-04,
    "identical_decoded_outputs": True,
}
