"""The TRL backend's data: GSM8K (Hub, pinned revision) or GSM8K-format JSON lines as
conversational prompts, and the held-out evaluation of a trained model.

Held-out: the first `heldout.problems` test items, greedy, scored by the GSM8K reward.
The trace keeps, per item, its id, the draw (0: greedy), the correctness and the
SHA-256 of the completion text, never the text (as part2/heldout.py for the tiny study).
"""

from __future__ import annotations

import time

import torch

from verifiable_grpo.core import input_digests
from verifiable_grpo.core.config import resolve
from verifiable_grpo.part2 import gsm8k
from verifiable_grpo.part2.trl import run_config
from verifiable_grpo.part2.trl.trainer import text_sha256


def _items(config: dict, split: str) -> list[dict]:
    data = config["data"]
    if data["source"] == "jsonl":
        return gsm8k.read_items(resolve(data[split]))
    from datasets import load_dataset

    rows = load_dataset(
        data["name"], data["subset"], revision=data["revision"], split=data[f"{split}_split"]
    )
    return [{"question": r["question"], "answer": r["answer"]} for r in rows]


def checked_base(name_or_path: str):
    """The base's resolved path, its files checked against its BUILD.json when it is a local
    folder that ships one (core.input_digests: hashed once per process)."""
    local = resolve(name_or_path)
    if local.is_dir():
        input_digests.verify_build(local)
    return local


def run_inputs(config: dict) -> dict:
    """The digests of what the run reads and did not write: the prompts data files (a hub
    dataset is pinned by its revision, in the run configuration) and the base's BUILD.json
    (its files checked against it first). The resolved profile is run_config_sha256."""
    data = config["data"]
    inputs = {}
    if data["source"] == "jsonl":
        for split in ("train", "test"):
            inputs[f"prompts {split} (data.{split})"] = input_digests.file_sha256(
                resolve(data[split])
            )
    local = resolve(config["model"]["name_or_path"])
    if local.is_dir():
        inputs["base build record (model.name_or_path)"] = input_digests.verify_build(local)
    return inputs


def examples(config: dict, split: str) -> list[dict]:
    """Rows {"prompt" (messages), "answer", "document_id"} of the train or test split."""
    instruction = config["data"]["instruction"]
    return [
        {
            "prompt": [{"role": "user", "content": f"{instruction}\n\n{item['question']}"}],
            "answer": item["answer"],
            "document_id": f"{split}-{i:05d}",
        }
        for i, item in enumerate(_items(config, split))
    ]


def _generate_batch(model, tokenizer, config: dict, chunk: list[dict], device) -> list[str]:
    """Greedy completions of one batch of held-out examples."""
    texts = [
        tokenizer.apply_chat_template(
            e["prompt"],
            tokenize=False,
            add_generation_prompt=True,
            **config["data"]["chat_template_kwargs"],
        )
        for e in chunk
    ]
    encoded = tokenizer(
        texts, return_tensors="pt", padding=True, padding_side="left", add_special_tokens=False
    ).to(device)
    generated = model.generate(
        **encoded,
        do_sample=False,
        max_new_tokens=config["heldout"]["max_new_tokens"],
        pad_token_id=tokenizer.pad_token_id,
    )
    return tokenizer.batch_decode(
        generated[:, encoded["input_ids"].shape[1] :], skip_special_tokens=True
    )


def _gathered(trace: list[dict], world: int) -> list[dict]:
    """Every process's trace rows, gathered once (all processes get them all)."""
    if world == 1:
        return trace
    import torch.distributed as dist

    parts = [None] * world
    dist.all_gather_object(parts, trace)
    return [row for part in parts for row in part]


@torch.no_grad()
def heldout_accuracy(model, tokenizer, config: dict) -> dict:
    """{"greedy": {"ALL": {...}}, "trace": [...], "problems", "draws", "seconds"}.

    Under several processes the batches are dealt out round-robin (batch b to rank b mod
    world), each exactly the batch one process would decode, so every completion is the
    one-process completion; the traces are gathered once at the end, in item order. Each
    process runs the same number of generate calls (a rank without a batch decodes a
    stand-in and drops it): a ZeRO-3 model gathers its weights inside every call."""
    spec = config["heldout"]
    items = examples(config, "test")[: spec["problems"]]
    started = time.perf_counter()
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    rank, world = run_config.process_rank(), run_config.world_size()
    batches = [items[i : i + spec["batch_size"]] for i in range(0, len(items), spec["batch_size"])]
    mine = batches[rank::world]
    trace = []
    for turn in range(-(-len(batches) // world)):
        chunk = mine[turn] if turn < len(mine) else batches[0]
        completions = _generate_batch(model, tokenizer, config, chunk, device)
        if turn >= len(mine):
            continue
        trace += [
            {
                "mode": "greedy",
                "document_id": e["document_id"],
                "draw": 0,
                "correct": gsm8k.reward(c, e["answer"]) == 1.0,
                "completion_sha256": text_sha256(c),
            }
            for e, c in zip(chunk, completions)
        ]
    model.train(was_training)
    order = {e["document_id"]: i for i, e in enumerate(items)}
    trace = sorted(_gathered(trace, world), key=lambda t: order[t["document_id"]])
    correct = sum(t["correct"] for t in trace)
    return {
        "greedy": {
            "ALL": {
                "responses": len(trace),
                "problems": len(trace),
                "correct": correct,
                "success_rate": correct / len(trace),
            }
        },
        "trace": trace,
        "problems": len(trace),
        "draws": 1,
        "seconds": time.perf_counter() - started,
    }
