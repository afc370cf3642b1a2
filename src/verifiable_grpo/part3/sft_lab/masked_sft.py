"""Lab 1: full-weight SFT of SmolLM2-135M-Instruct with the assistant-only masked loss.

QUICK: 48 rows per family (240), 15 updates of 16 (one epoch); FULL: 80 per family, 50
updates (two epochs). AdamW 1e-4, no weight decay, linear warmup over 5 % of the updates
then cosine to zero, clipping at 1.0. Before and after: held-out masked loss, stop rate,
exact match per family. Options reproduce the module's ablations: `mask=False` (loss on
every token), `init_rows=False` (keep the chat rows as loaded), `quick=False` (FULL);
`letters=True` adds a sixth family, letter counting, with its own held-out words (and one
epoch then takes 18 updates, the default budget of that run).
"""

from __future__ import annotations

from pathlib import Path

from verifiable_grpo.core import crash
from verifiable_grpo.core.model_checks import named_unique_parameters
from verifiable_grpo.models import smollm2 as loader
from verifiable_grpo.part3.sft_lab import probe
from verifiable_grpo.part3.sft_lab.settings import SFTSettings
from verifiable_grpo.part3.smollm2 import chat_data, chat_rows, evaluation, records, trainer

NAME = "sft"
POLICY = "sft-policy"  # OUT/sft-policy: the fine-tuned model as a transformers folder
DEFAULTS = dict(quick=True, mask=True, init_rows=True, lr=1e-4, seed=3, checkpoint_every=5)


def budget(settings: dict, train_rows: int) -> int:
    """Updates: `steps` if given; else the budget's 15 (QUICK) or 50 (FULL); with the letters
    family, the same epochs (one QUICK, about two FULL) over its larger training set."""
    if settings.get("steps"):
        return settings["steps"]
    if settings.get("letters"):
        return train_rows // trainer.BATCH * (1 if settings["quick"] else 2)
    return 15 if settings["quick"] else 50


def run(out, cache=None, log=print, **overrides) -> dict:
    settings = {**DEFAULTS, **overrides}
    done = records.finished(out, NAME)
    if done is not None:
        log(f"{out}/{NAME}-metrics.json exists: Lab 1 is finished there (use another --out)")
        return done
    started = records.start()
    model, tokenizer = loader.load(cache)
    if settings.get("letters"):
        train_rows, held_out = chat_data.split_with_letters(quick=settings["quick"])
    else:
        train_rows, held_out = chat_data.split(quick=settings["quick"])
    encoded = [chat_data.encode(tokenizer, r, mask_prompt=settings["mask"]) for r in train_rows]
    held_encoded = [chat_data.encode(tokenizer, r) for r in held_out]  # always scored masked
    # the budget's updates unless `steps` is given (a setting only then: older hashes hold)
    steps = budget(settings, len(train_rows))
    metrics = {
        "train_rows": len(train_rows),
        "held_out_rows": len(held_out),
        "steps": steps,
        "examples": train_rows[:5],
        "trained_fraction": chat_data.trained_fraction(encoded),
        "token_table": chat_data.token_table(tokenizer, encoded[0]),
    }
    before = evaluation.evaluate(model, tokenizer, held_out, held_encoded)
    log(f"before: loss {before['loss']:.4f} stop {before['stop']:.2f} exact {before['exact']:.2f}")
    metrics["probe"] = {f: probe.plain_probe(model, tokenizer, f) for f in probe.SHOTS}
    metrics["chat_rows"] = {"before": chat_rows.diagnose(model, tokenizer)}
    if settings["init_rows"]:
        chat_rows.reinitialise(model)
    metrics["chat_rows"]["after"] = chat_rows.diagnose(model, tokenizer)
    parameters = dict(named_unique_parameters(model))
    for parameter in parameters.values():
        parameter.requires_grad_(True)
    warmup = max(1, round(0.05 * steps))
    trained = trainer.train(
        model,
        parameters,
        encoded,
        trainer.Updates(
            trainer.epoch_order(len(encoded), steps, settings["seed"]),
            settings["lr"],
            schedule=trainer.warmup_cosine(steps, warmup),
        ),
        trainer.Checkpoints(out, f"lab-{NAME}", every=settings["checkpoint_every"]),
        log=log,
    )
    after = evaluation.evaluate(model, tokenizer, held_out, held_encoded)
    log(f"after: loss {after['loss']:.4f} stop {after['stop']:.2f} exact {after['exact']:.2f}")
    metrics.update(
        warmup=warmup,
        history=trained["history"],
        training_seconds=round(trained["seconds"], 1),
        before={k: v for k, v in before.items() if k != "new_ids"},
        after={k: v for k, v in after.items() if k != "new_ids"},
        held_out=held_out,
    )
    # The fine-tuned weights, for the Lab 6 suite (instruct before vs after this run).
    model.save_pretrained(Path(out) / POLICY, safe_serialization=True)
    tokenizer.save_pretrained(Path(out) / POLICY)
    path = records.write(out, NAME, settings, metrics, started, cache)
    crash.clear(out, f"lab-{NAME}")
    log(f"wrote {path}")
    return records.finished(out, NAME)


def run_lab(out, settings: SFTSettings, cache=None) -> dict:
    """`python -m verifiable_grpo lab sft [--full] [--no-mask] [--no-row-init] [--steps N]
    [--letters] [--out DIR]`; --steps replaces the budget's number of updates (the schedule
    follows); --letters adds the letter-counting family."""
    s = settings
    # a setting only when given, so the hashes of the runs recorded before stay as they were
    extra = ({} if s.steps is None else {"steps": s.steps}) | (
        {"letters": True} if s.letters else {}
    )
    return run(
        out, cache=cache, quick=not s.full, mask=not s.no_mask, init_rows=not s.no_row_init, **extra
    )


def summary(metrics: dict) -> str:
    b, a = metrics["before"], metrics["after"]
    return (
        f"loss {b['loss']:.4f} -> {a['loss']:.4f}; stop {b['stop']:.2f} -> {a['stop']:.2f}; "
        f"exact {b['exact']:.2f} -> {a['exact']:.2f}"
    )


# What the post-training module printed for its QUICK run (SmolLM2-135M BASE at a pinned
# revision, FP32 hub weights, 4 laptop threads); shown beside ours, attributed.
MODULE_REPORTS = {
    "train_rows": 240,
    "held_out_rows": 50,
    "trained_fraction_percent": 9.929,
    "first_targets": ["4", "5", "0", "0", " k", "Pa", "<|im_end|>"],
    "before": {"loss": 7.2566, "stop": 0.00, "exact": 0.00},
    "probe": {"addition": 0.12, "limit": 0.62, "limit_majority": 0.62},
    "chat_rows": {
        "cosine_before": 0.99976,
        "cosine_after": 0.39968,
        "nearest_to_end": [
            ("<empty_output>", 0.9999),
            ("\u0100", 0.9999),
            ("<jupyter_start>", 0.9999),
            ("<jupyter_code>", 0.9999),
            ("<issue_comment>", 0.9999),
        ],
    },
    "loss": {5: 0.5632, 10: 0.4341, 15: 0.2906},
    "training_seconds": 35.8,
    "after": {"loss": 0.1919, "stop": 1.00, "exact": 0.66},
    "families": {
        "conversion": 0.60,
        "addition": 0.60,
        "extraction": 1.00,
        "limit": 0.50,
        "sorting": 0.60,
    },
    # separate single-seed runs the module reports (exact, stop)
    "ablations": {
        "FULL (50 updates)": (0.90, 1.00),
        "no chat-row init": (0.02, 0.02),
        "no masking": (0.48, 1.00),
        "default QUICK": (0.66, 1.00),
    },
}
