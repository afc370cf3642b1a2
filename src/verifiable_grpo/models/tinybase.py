"""Build the project's own tiny CPU base: a few-million-parameter Qwen2ForCausalLM.

Qwen2.5-0.5B cannot be downloaded on a machine without network, and a random model
cannot be warm-started into anything GRPO could improve: a group whose four answers all
earn the same reward teaches nothing. So the tiny profile starts from a small model of
Qwen2's architecture, pretrained from scratch here, deterministically, on synthetic chat
turns that look like the task but never are the task:

- statements from statements.TEMPLATES for problems with operands 0..100 that are
  DISJOINT from every StockArithmetic-v1 problem (normalised tuples compared) and from
  the held-out problems used to measure the base;
- 80 % of user turns ask for JSON with a key OTHER than final_stock ("stock", "total",
  "end_stock", "final_count", ...), 20 % for the plain number; the answer is computed;
- the loss is on the answer tokens and the closing <|im_end|> only.

The warm start then only has to learn the one new key. Why this recipe and what failed
before it: book/tiny-base.md and REFERENCE.md.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

# On a shared 2-core machine, OpenMP threads that spin while waiting made a step 2-8x
# slower; sleeping waits change no arithmetic (set before torch starts OpenMP).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch  # noqa: E402
import torch.nn.functional as F
from tqdm import tqdm

from verifiable_grpo.core.config import load_config, package_versions, resolve, sha256_file
from verifiable_grpo.models import tiny_tokenizer
from verifiable_grpo.task import statements, verifier

RECIPE = {
    "seed": 20261201,
    "threads": 2,
    "steps": 2500,
    "batch_size": 32,
    "peak_learning_rate": 2e-3,
    "warmup_steps": 100,
    "final_lr_fraction": 0.1,  # linear decay from the peak to 10 % of it
    "weight_decay": 0.01,
    "betas": [0.9, 0.95],
    "max_grad_norm": 1.0,
    "json_fraction": 0.8,  # the rest ask for the plain number
    "id50_fraction": 0.5,  # problems drawn like ID50 (0..50), the rest like OOD100
    "held_out_problems": 400,  # disjoint problems that measure the base (half each range)
    "nominal_step_seconds": 0.25,  # only converts --minutes into a step count
    "model": {
        "hidden_size": 192,
        "num_hidden_layers": 6,
        "num_attention_heads": 6,
        "num_key_value_heads": 2,
        "intermediate_size": 576,
        "max_position_embeddings": 512,
        "rope_theta": 10000.0,
        "rms_norm_eps": 1e-6,
        "tie_word_embeddings": True,
    },
}
SHIPPED_FILES = (
    "config.json",
    "generation_config.json",
    "model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
)
MAX_NEW_TOKENS = 16


# ---------------------------------------------------------------------------------------
# The synthetic corpus
# ---------------------------------------------------------------------------------------
def dataset_problems(data_seed: int) -> set[tuple]:
    """Normalised tuples of every StockArithmetic-v1 problem (all four splits)."""
    from verifiable_grpo.task.data import generate_problem_set

    splits = generate_problem_set(data_seed)
    return {
        verifier.normalized_problem(problem)
        for rows in splits.values()
        for problem, _population in rows
    }


def sample_problem(rng: random.Random, id50_fraction: float, excluded: set[tuple]) -> dict:
    """A problem drawn like ID50 or OOD100, redrawn until it is outside `excluded`."""
    while True:
        maximum = 50 if rng.random() < id50_fraction else 100
        problem = verifier.generate_problem(rng, maximum)
        if verifier.normalized_problem(problem) not in excluded:
            return problem


def turn(problem: dict, rng: random.Random, json_fraction: float) -> tuple[str, str]:
    """(user message, answer) for one problem: JSON with a pretraining key, or the number."""
    statement = statements.render_statement(problem, rng.randrange(len(statements.TEMPLATES)))
    answer = verifier.compute_final_stock(problem)
    if rng.random() < json_fraction:
        key = rng.choice(tiny_tokenizer.PRETRAIN_KEYS)
        assert key != statements.ANSWER_KEY  # never the task's key in pretraining
        return (
            statements.user_message(statement, statements.json_instruction(key)),
            statements.canonical_response(answer, key),
        )
    return statements.user_message(statement, statements.number_instruction()), str(answer)


def chat_prompt(user: str) -> str:
    """The tokenizer's chat template with add_generation_prompt, written out (fast)."""
    return (
        f"{tiny_tokenizer.IM_START}user\n{user}{tiny_tokenizer.IM_END}\n"
        f"{tiny_tokenizer.IM_START}assistant\n"
    )


def encode_batch(tokenizer, turns: list[tuple[str, str]]):
    """Right-padded ids, attention mask and labels (-100 except answer tokens + <|im_end|>)."""
    prompts = tokenizer([chat_prompt(u) for u, _ in turns], add_special_tokens=False)["input_ids"]
    answers = tokenizer([a for _, a in turns], add_special_tokens=False)["input_ids"]
    eos = tokenizer.convert_tokens_to_ids(tiny_tokenizer.IM_END)
    pad = tokenizer.convert_tokens_to_ids(tiny_tokenizer.PAD_TOKEN)
    rows = [(p, a + [eos]) for p, a in zip(prompts, answers)]
    width = max(len(p) + len(a) for p, a in rows)
    ids = torch.full((len(rows), width), pad, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    labels = torch.full((len(rows), width), -100, dtype=torch.long)
    for i, (p, a) in enumerate(rows):
        n = len(p) + len(a)
        ids[i, :n] = torch.tensor(p + a)
        mask[i, :n] = 1
        labels[i, len(p) : n] = torch.tensor(a)
    return ids, mask, labels


# ---------------------------------------------------------------------------------------
# Model, schedule, training
# ---------------------------------------------------------------------------------------
def make_model(tokenizer, recipe: dict):
    from transformers import Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(
        vocab_size=len(tokenizer),
        bos_token_id=None,
        eos_token_id=tokenizer.convert_tokens_to_ids(tiny_tokenizer.IM_END),
        pad_token_id=tokenizer.convert_tokens_to_ids(tiny_tokenizer.PAD_TOKEN),
        use_cache=True,
        attn_implementation="eager",
        **recipe["model"],
    )
    torch.manual_seed(recipe["seed"])
    model = Qwen2ForCausalLM(config).float()
    model.generation_config.bos_token_id = None
    model.generation_config.eos_token_id = config.eos_token_id
    model.generation_config.pad_token_id = config.pad_token_id
    return model


def unique_parameters(model) -> int:
    from verifiable_grpo.core.model import all_unique_parameters as distinct

    return sum(p.numel() for p in distinct(model))


def lr_factor(step: int, total: int, warmup: int, final_fraction: float) -> float:
    """Linear warm-up over `warmup` steps, then linear decay to `final_fraction`."""
    warmup = min(warmup, max(total - 1, 1))
    if step < warmup:
        return (step + 1) / warmup
    span = max(total - warmup - 1, 1)
    return 1.0 - (1.0 - final_fraction) * (step - warmup) / span


def pretrain(model, tokenizer, recipe: dict, steps: int, excluded: set[tuple]) -> list[float]:
    """The fixed-step pretraining loop; returns the per-step loss."""
    rng = random.Random(recipe["seed"])
    optimizer = torch.optim.AdamW(
        model.parameters(),
        lr=recipe["peak_learning_rate"],
        betas=tuple(recipe["betas"]),
        weight_decay=recipe["weight_decay"],
    )
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer,
        lambda s: lr_factor(s, steps, recipe["warmup_steps"], recipe["final_lr_fraction"]),
    )
    model.train()
    losses = []
    bar = tqdm(range(steps), desc="pretrain", mininterval=5, file=sys.stderr)
    for _ in bar:
        turns = [
            turn(
                sample_problem(rng, recipe["id50_fraction"], excluded), rng, recipe["json_fraction"]
            )
            for _ in range(recipe["batch_size"])
        ]
        ids, mask, labels = encode_batch(tokenizer, turns)
        logits = model(input_ids=ids, attention_mask=mask).logits
        loss = F.cross_entropy(
            logits[:, :-1].reshape(-1, logits.shape[-1]),
            labels[:, 1:].reshape(-1),
            ignore_index=-100,
        )
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), recipe["max_grad_norm"])
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
        if len(losses) % 50 == 0:
            bar.set_postfix(loss=f"{sum(losses[-50:]) / 50:.3f}")
    model.eval()
    return losses


# ---------------------------------------------------------------------------------------
# Measuring the base
# ---------------------------------------------------------------------------------------
def held_out_problems(recipe: dict, excluded: set[tuple]) -> list[tuple[dict, str]]:
    """Disjoint problems (half ID50-like, half OOD100-like) kept out of pretraining."""
    rng = random.Random(recipe["seed"] + 1)
    out, seen = [], set(excluded)
    for i in range(recipe["held_out_problems"]):
        population = "ID50" if i % 2 == 0 else "OOD100"
        problem = sample_problem(rng, 1.0 if population == "ID50" else 0.0, seen)
        seen.add(verifier.normalized_problem(problem))
        out.append((problem, population))
    return out


@torch.no_grad()
def greedy_answers(model, tokenizer, users: list[str], batch_size: int = 64) -> list[str]:
    """Greedy continuations (text before <|im_end|>, or all 16 tokens if it never ends)."""
    eos = model.config.eos_token_id
    texts = []
    tokenizer.padding_side = "left"
    for start in range(0, len(users), batch_size):
        chunk = [chat_prompt(u) for u in users[start : start + batch_size]]
        enc = tokenizer(chunk, add_special_tokens=False, return_tensors="pt", padding=True)
        out = model.generate(
            **enc,
            max_new_tokens=MAX_NEW_TOKENS,
            do_sample=False,
            eos_token_id=eos,
            pad_token_id=model.config.pad_token_id,
        )
        for row in out[:, enc["input_ids"].shape[1] :].tolist():
            row = row[: row.index(eos)] if eos in row else row
            texts.append(tokenizer.decode(row, skip_special_tokens=False))
    tokenizer.padding_side = "right"
    return texts


def measure_base(model, tokenizer, problems: list[tuple[dict, str]]) -> dict:
    """Exact-answer rates of greedy answers, JSON (cycled pretraining keys) and number."""
    keys = tiny_tokenizer.PRETRAIN_KEYS
    users, targets, populations = [], [], []
    for i, (problem, population) in enumerate(problems):
        statement = statements.render_statement(problem, i % len(statements.TEMPLATES))
        answer = verifier.compute_final_stock(problem)
        key = keys[i % len(keys)]
        users += [
            statements.user_message(statement, statements.json_instruction(key)),
            statements.user_message(statement, statements.number_instruction()),
        ]
        targets += [statements.canonical_response(answer, key), str(answer)]
        populations += [population, population]
    texts = greedy_answers(model, tokenizer, users)
    hits = [t == g for t, g in zip(texts, targets)]

    def rate(select) -> float:
        chosen = [h for h, s in zip(hits, select) if s]
        return round(sum(chosen) / max(len(chosen), 1), 4)

    kinds = ["json", "number"] * len(problems)
    return {
        "problems": len(problems),
        "exact_rate": rate([True] * len(hits)),
        "exact_rate_json": rate([k == "json" for k in kinds]),
        "exact_rate_number": rate([k == "number" for k in kinds]),
        "exact_rate_id50": rate([p == "ID50" for p in populations]),
        "exact_rate_ood100": rate([p == "OOD100" for p in populations]),
        "examples": [
            {"user": u, "target": g, "greedy": t}
            for u, g, t in list(zip(users, targets, texts))[:6]
        ],
    }


# ---------------------------------------------------------------------------------------
# The build
# ---------------------------------------------------------------------------------------
def build_base(
    out_dir: str | Path,
    steps: int | None = None,
    data_seed: int | None = None,
    recipe: dict | None = None,
    measure: bool = True,
    command: str = "",
) -> dict:
    """Train the tokenizer and the model, save them into `out_dir`, write BUILD.json."""
    from transformers import PreTrainedTokenizerFast

    recipe = json.loads(json.dumps(recipe or RECIPE))
    steps = recipe["steps"] if steps is None else int(steps)
    if steps < 1:
        raise ValueError(f"steps must be at least 1, got {steps}")
    if data_seed is None:
        data_seed = load_config("tiny").data.seed
    torch.set_num_threads(recipe["threads"])
    started, cpu_started = time.perf_counter(), time.process_time()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tiny_tokenizer.save_tokenizer(tiny_tokenizer.train_tokenizer(), out)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_file=str(out / "tokenizer.json"),
        eos_token=tiny_tokenizer.IM_END,
        pad_token=tiny_tokenizer.PAD_TOKEN,
    )
    excluded = dataset_problems(data_seed)
    held_out = held_out_problems(recipe, excluded)
    excluded |= {verifier.normalized_problem(p) for p, _ in held_out}
    model = make_model(tokenizer, recipe)
    losses = pretrain(model, tokenizer, recipe, steps, excluded)
    train_seconds = time.perf_counter() - started
    train_cpu_seconds = time.process_time() - cpu_started
    model.save_pretrained(str(out), safe_serialization=True)
    measured = measure_base(model, tokenizer, held_out) if measure else None
    tail = losses[-min(100, len(losses)) :]
    build = {
        "command": command,
        "recipe": recipe,
        "steps": steps,
        "data_seed": data_seed,
        "excluded_dataset_problems": len(excluded) - len(held_out),
        "unique_parameters": unique_parameters(model),
        "vocab_size": len(tokenizer),
        "final_loss_mean_last_100_steps": round(sum(tail) / len(tail), 5),
        "loss_every_100_steps": [
            round(sum(losses[i : i + 100]) / len(losses[i : i + 100]), 4)
            for i in range(0, len(losses), 100)
        ],
        "build_seconds": round(train_seconds, 1),
        # CPU seconds of this process over both threads: less sensitive to other jobs
        # sharing the machine than the wall time (idle wall ~ cpu / threads).
        "build_cpu_seconds": round(train_cpu_seconds, 1),
        "measure_seconds": round(time.perf_counter() - started - train_seconds, 1),
        "held_out": measured,
        "versions": package_versions(),
        "torch_threads": torch.get_num_threads(),
        "files_sha256": {name: sha256_file(out / name) for name in SHIPPED_FILES},
    }
    (out / "BUILD.json").write_text(json.dumps(build, indent=2) + "\n", encoding="utf-8")
    return build


def command_build(args) -> int:
    """`python -m verifiable_grpo build-tiny-base [--out DIR] [--force] [--minutes M]`."""
    out = resolve(args.out)
    existing = [
        n
        for n in (*SHIPPED_FILES, "BUILD.json")
        if n not in ("tokenizer.json", "tokenizer_config.json") and (out / n).exists()
    ]
    if existing and not args.force:
        raise SystemExit(
            f"{out} already holds a base ({', '.join(existing)}); pass --force to rebuild it"
        )
    steps = None
    if args.minutes is not None:  # quick experiments only: a fixed step count, not a clock
        steps = max(1, round(args.minutes * 60 / RECIPE["nominal_step_seconds"]))
    command = "python -m verifiable_grpo build-tiny-base " + " ".join(sys.argv[2:])
    with tempfile.TemporaryDirectory(prefix="tiny-base-") as scratch:
        build = build_base(scratch, steps=steps, command=command.strip())
        out.mkdir(parents=True, exist_ok=True)
        for name in (*SHIPPED_FILES, "BUILD.json"):
            shutil.copyfile(Path(scratch) / name, out / name)
    print(
        json.dumps(
            {
                k: build[k]
                for k in (
                    "steps",
                    "unique_parameters",
                    "build_seconds",
                    "final_loss_mean_last_100_steps",
                )
            },
            indent=2,
        )
    )
    print(json.dumps(build["held_out"], indent=2) if build["held_out"] else "")
    return 0
