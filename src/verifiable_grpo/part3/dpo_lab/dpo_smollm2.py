"""Lab 4, Try this: DPO on SmolLM2-135M-Instruct with 64 on-policy preference pairs.

The digit-policy lab (dpo.py) shows that a low pairwise loss need not mean a better
generator; this run asks the same of a real instruct model. It starts from Lab 1's
fine-tuned instruct model (SFT, then preferences: the usual order), because the model as
loaded almost never gives Lab 1's bare answers, so its samples hold too few passing
replies to pair. Pairs come from the policy's own samples (six per prompt) on Lab 1's
QUICK training prompts, taken in order until 64 have given a pair, scored by Lab 1's
exact match (smollm2/preference.py); the held-out set is QUICK's 50. The loss is the
package's DPO loss (dpo.dpo_loss) on sequence log-probabilities, with the reference's
log-probabilities computed once before training (the reference is the policy as loaded,
so no second copy is kept). Full-weight AdamW, `epochs` passes over the pairs
in batches of `batch`. Before and after: Lab 1's held-out loss, stop and exact rates, and
the checker's rate on the held-out greedy replies; and, on the training pairs, how the
log-probability of each side moved (DPO can widen the margin while both sides fall).
`python -m verifiable_grpo lab dpo-smollm2 [--policy DIR] [--out DIR] --export`.
"""

from __future__ import annotations

import torch
from torch.nn.utils import clip_grad_norm_

from verifiable_grpo.core.config import shown_path
from verifiable_grpo.part3.dpo_lab.dpo import dpo_loss
from verifiable_grpo.part3.dpo_lab.settings import SmolLM2DPOSettings
from verifiable_grpo.part3.smollm2 import (
    chat_data,
    evaluation,
    preference,
    records,
    trainer,
)
from verifiable_grpo.part3.suite_lab import greedy

NAME = "dpo-smollm2"
DEFAULTS = dict(
    pairs=64,
    samples=6,
    temperature=1.0,
    max_new_tokens=16,
    beta=0.1,
    lr=5e-6,
    epochs=2,
    batch=8,
    seed=5,
)


def held_out_scores(model, tokenizer, rows, encoded) -> dict:
    """Lab 1's evaluation plus the checker's rate on the same greedy replies."""
    scores = evaluation.evaluate(model, tokenizer, rows, encoded)
    given = [
        preference.answer_given(row["reply"], text, evaluation.END_ID in new_ids)
        for row, text, new_ids in zip(rows, scores["replies"], scores["new_ids"])
    ]
    return {
        **{k: v for k, v in scores.items() if k != "new_ids"},
        "answer_given": sum(given) / len(rows),
    }


def pair_logprobs(model, pairs, indices) -> tuple[torch.Tensor, torch.Tensor]:
    prompts = [pairs[i]["prompt_ids"] for i in indices]
    both = preference.sequence_logprobs(
        model,
        prompts + prompts,
        [pairs[i]["chosen_ids"] for i in indices] + [pairs[i]["rejected_ids"] for i in indices],
    )
    return both[: len(indices)], both[len(indices) :]


@torch.no_grad()
def all_logprobs(model, pairs, batch: int) -> tuple[torch.Tensor, torch.Tensor]:
    parts = [
        pair_logprobs(model, pairs, list(range(s, min(s + batch, len(pairs)))))
        for s in range(0, len(pairs), batch)
    ]
    return torch.cat([c for c, _ in parts]), torch.cat([r for _, r in parts])


def train(model, pairs, reference, settings, log=print) -> list[dict]:
    """The DPO loop: one row of history per update (loss, pair accuracy, mean gains)."""
    model.requires_grad_(True)
    model.train()
    trainable = list(model.parameters())
    optimizer = torch.optim.AdamW(trainable, lr=settings["lr"], weight_decay=0.0)
    steps = settings["epochs"] * len(pairs) // settings["batch"]
    history = []
    for step, indices in enumerate(
        trainer.epoch_order(len(pairs), steps, settings["seed"], batch=settings["batch"]), start=1
    ):
        chosen, rejected = pair_logprobs(model, pairs, indices)
        ref_chosen, ref_rejected = reference[0][indices], reference[1][indices]
        loss = dpo_loss(chosen, rejected, ref_chosen, ref_rejected, settings["beta"])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        clip_grad_norm_(trainable, max_norm=1.0)  # as Lab 1 clips
        optimizer.step()
        gains = (chosen - ref_chosen).detach(), (rejected - ref_rejected).detach()
        history.append(
            {
                "step": step,
                "loss": float(loss.detach()),
                "accuracy": float((gains[0] > gains[1]).float().mean()),
                "chosen_gain": float(gains[0].mean()),
                "rejected_gain": float(gains[1].mean()),
            }
        )
        log(f"dpo update {step}/{steps}: loss {history[-1]['loss']:.4f}")
    model.eval()
    return history


def run(out, cache=None, policy=None, log=print, **overrides) -> dict:
    done = records.finished(out, NAME)
    if done is not None:
        log(f"{out}/{NAME}-metrics.json exists: this run is finished there (use another --out)")
        return done
    policy = greedy.fine_tuned_policy(policy)  # checked before any load
    settings = {**DEFAULTS, **overrides, "policy": shown_path(policy)}
    started = records.start()
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(policy))  # Lab 1 saved it with the weights
    model = AutoModelForCausalLM.from_pretrained(str(policy)).eval()
    train_rows, held_out = chat_data.split(quick=True)
    held_encoded = [chat_data.encode(tokenizer, r) for r in held_out]
    before = held_out_scores(model, tokenizer, held_out, held_encoded)
    log(f"before: exact {before['exact']:.2f}, answer given {before['answer_given']:.2f}")
    pairs, tried = preference.collect_pairs(
        model,
        tokenizer,
        train_rows,
        settings["pairs"],
        preference.ReplySampling(
            settings["samples"],
            settings["temperature"],
            settings["max_new_tokens"],
            settings["seed"],
        ),
        log=log,
    )
    preference.check_pairs(pairs)
    if len(pairs) < settings["pairs"]:
        raise ValueError(f"only {len(pairs)} pairs from {tried} prompts: sample more replies")
    reference = all_logprobs(model, pairs, settings["batch"])
    history = train(model, pairs, reference, settings, log)
    final = all_logprobs(model, pairs, settings["batch"])
    after = held_out_scores(model, tokenizer, held_out, held_encoded)
    log(f"after: exact {after['exact']:.2f}, answer given {after['answer_given']:.2f}")
    gains = [(final[k] - reference[k]).tolist() for k in (0, 1)]
    metrics = {
        "prompts_sampled": tried,
        "pairs": [
            {k: p[k] for k in ("family", "user", "expected", "chosen", "rejected")} for p in pairs
        ],
        "history": history,
        "before": before,
        "after": after,
        "held_out": held_out,
        "final": {
            "chosen_gain": gains[0],
            "rejected_gain": gains[1],
            "accuracy": sum(c > r for c, r in zip(*gains)) / len(pairs),
        },
    }
    path = records.write(out, NAME, settings, metrics, started, cache)
    log(f"wrote {path}")
    return records.finished(out, NAME)


def run_lab(out, settings: SmolLM2DPOSettings, cache=None) -> dict:
    """`python -m verifiable_grpo lab dpo-smollm2 [--policy DIR] [--out DIR]`."""
    return run(out, cache=cache, policy=settings.policy)


def summary(metrics: dict) -> str:
    b, a, f = metrics["before"], metrics["after"], metrics["final"]
    mean = lambda xs: sum(xs) / len(xs)
    return (
        f"{len(metrics['pairs'])} pairs from {metrics['prompts_sampled']} prompts; pair "
        f"accuracy {f['accuracy']:.2f}; mean gain chosen {mean(f['chosen_gain']):+.2f}, "
        f"rejected {mean(f['rejected_gain']):+.2f}; held-out answer given "
        f"{b['answer_given']:.2f} -> {a['answer_given']:.2f}, exact {b['exact']:.2f} -> "
        f"{a['exact']:.2f}"
    )
