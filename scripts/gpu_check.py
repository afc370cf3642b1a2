"""The one command for a lent GPU: turns the cost chapter's model into measurements.

    python scripts/gpu_check.py              # on a CUDA machine, a few minutes
    python scripts/gpu_check.py --dry-run    # anywhere: build and check the plan, run nothing

Three parts, each with its peak GPU memory (torch.cuda.max_memory_allocated) and its
seconds per optimizer step (TRL's step_time: generation, scoring and the update):
1. trl_smoke: Part II's TRL smoke arm (configs/part2/trl-smoke.yaml on CUDA: the tiny base,
   LoRA, grpo seed 11, 2 steps): the wiring on a GPU.
2. card_standin: two steps of the card's configuration (4 prompts x 4 completions, 1,024
   completion tokens, LoRA r16, bf16, gradient checkpointing, one GPU) on an offline
   stand-in of Qwen3-8B's shape: its width, heads, FFN and vocabulary with `--layers`
   layers (default 2 of 36) and random weights. Random weights rarely sample the end
   token, so every completion runs to 1,024 tokens: the card's worst case for generation.
   The manifest's telemetry gives seconds per step; per-layer costs scale to 36 layers.
3. part1_standin: Part I's qwen-shaped stand-in (scripts/measure_standin_steps.py: a
   2-layer Qwen2 of Qwen2.5-0.5B's width and vocabulary, FP32): one SFT update of 8 x 96
   tokens and one all-logits forward of 256, median of 3 after one untimed call.

The record goes to data/recorded/gpu-check/<gpu>-<utc time>.json (never overwritten);
Part II chapter 8 lists every record there (part2/card_cost.gpu_checks).
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import torch
import yaml

from verifiable_grpo.core import files
from verifiable_grpo.core.config import provenance, resolve
from verifiable_grpo.part2 import card_cost
from verifiable_grpo.part2 import lock as lock_lib
from verifiable_grpo.part2.trl import backend as trl_backend
from verifiable_grpo.part2.trl import run_config

LOCK = "configs/part2/lock.json"
SMOKE = "configs/part2/trl-smoke.yaml"
CARD = "configs/part2/card-qwen3-8b-gsm8k.yaml"
ITEMS = "tests/part2/data/gsm8k_items.jsonl"
RUN = lock_lib.LockedRun("grpo", 11, "on_policy")


def qwen3_standin_config(layers: int):
    """Qwen3-8B's config.json shape (part2/card_cost.QWEN3_8B), `layers` deep."""
    from transformers import Qwen3Config

    shape = card_cost.QWEN3_8B
    return Qwen3Config(
        vocab_size=shape.vocab,
        hidden_size=shape.hidden,
        intermediate_size=shape.ffn,
        num_hidden_layers=layers,
        num_attention_heads=shape.heads,
        num_key_value_heads=shape.kv_heads,
        head_dim=shape.head_dim,
        tie_word_embeddings=shape.tied,
        max_position_embeddings=40_960,
        rope_theta=1_000_000.0,
        rms_norm_eps=1e-6,
    )


def _write_yaml(config: dict, path: Path) -> Path:
    config = {k: v for k, v in config.items() if not k.startswith("_")}
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def plan(folder: Path, layers: int) -> dict:
    """The two run configurations (written into `folder`) and the stand-in's shape."""
    smoke = run_config.load_run_config(SMOKE)
    smoke.update(device="cuda", name="gpu-check-trl-smoke")
    card = run_config.load_run_config(CARD)
    card.update(name="gpu-check-card-standin")
    card["model"].update(name_or_path=str(folder / "qwen3-standin"), revision=None)
    card["data"] = {
        "source": "jsonl",
        "train": ITEMS,
        "test": ITEMS,
        "instruction": card["data"]["instruction"],
        "chat_template_kwargs": {},
    }
    card["budget"].update(steps=2, checkpoint_every_steps=1)
    card["heldout"].update(problems=4, batch_size=4)
    with torch.device("meta"):
        from transformers import Qwen3ForCausalLM

        parameters = sum(
            p.numel() for p in Qwen3ForCausalLM(qwen3_standin_config(layers)).parameters()
        )
    return {
        "trl_smoke": _write_yaml(smoke, folder / "trl-smoke-cuda.yaml"),
        "card_standin": _write_yaml(card, folder / "card-standin.yaml"),
        "standin_layers": layers,
        "standin_parameters": parameters,
    }


def _check(steps: dict) -> None:
    """Everything `family run` refuses, before a model is built (a GPU is pretended)."""
    for name in ("trl_smoke", "card_standin"):
        trl_backend.check_request(LOCK, str(steps[name]), RUN, 1, cuda_count=1)


def _build_standin(folder: Path, layers: int) -> None:
    """Random Qwen3-shaped weights in bf16 on the GPU, saved with the tiny base's
    tokenizer (its ids are a subset of the stand-in's vocabulary)."""
    from transformers import AutoTokenizer, Qwen3ForCausalLM

    torch.manual_seed(0)
    with torch.device("cuda"):
        model = Qwen3ForCausalLM(qwen3_standin_config(layers)).to(torch.bfloat16)
    model.save_pretrained(folder / "qwen3-standin")
    AutoTokenizer.from_pretrained(resolve("data/tiny-base")).save_pretrained(
        folder / "qwen3-standin"
    )
    del model
    torch.cuda.empty_cache()


def measured_run(config_path: Path, out: Path) -> dict:
    torch.cuda.reset_peak_memory_stats()
    manifest = trl_backend.run_arm_trl(LOCK, str(config_path), out, RUN)
    steps = [sum(t["step_time"]) for t in manifest["telemetry"]]
    return {
        "seconds_per_step": steps,
        "peak_memory_bytes": torch.cuda.max_memory_allocated(),
        "tokens_trained_per_step": [t["tokens_trained"] for t in manifest["telemetry"]],
        "heldout_seconds": manifest["heldout"]["seconds"],
        "heldout_items": manifest["heldout"]["problems"],
        "wall_seconds": manifest["wall_seconds"],
    }


def _timed(step, repeats: int = 3) -> float:
    step()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def part1_standin() -> dict:
    spec = importlib.util.spec_from_file_location(
        "measure_standin_steps", resolve("scripts/measure_standin_steps.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    torch.cuda.reset_peak_memory_stats()
    model = module.build_standin().cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
    batch = torch.randint(0, 150_000, (8, 96), device="cuda")

    def sft_update():
        model(input_ids=batch, labels=batch).loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    update = _timed(sft_update)
    with torch.no_grad():
        forward = _timed(lambda: model(input_ids=batch[:1, :256].repeat(1, 3), use_cache=False))
    return {
        "shape": module.SHAPE,
        "sft_update_8x96_seconds": update,
        "forward_all_logits_288_seconds": forward,
        "peak_memory_bytes": torch.cuda.max_memory_allocated(),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=card_cost.GPU_CHECKS)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="gpu-check-") as tmp:
        steps = plan(Path(tmp), args.layers)
        _check(steps)
        print(
            f"plan: trl_smoke ({SMOKE} on cuda), card_standin (Qwen3-8B shape, "
            f"{args.layers} layers, {steps['standin_parameters']:,} parameters, 2 steps), "
            "part1_standin (scripts/measure_standin_steps.py)"
        )
        if args.dry_run:
            print("dry run: configurations checked, nothing run, nothing written")
            return 0
        if not torch.cuda.is_available():
            print(
                "error: no CUDA GPU here; --dry-run checks the plan on any machine", file=sys.stderr
            )
            return 2
        record = {"schema": "verifiable-grpo-gpu-check-v1", "device": torch.cuda.get_device_name(0)}
        record["trl_smoke"] = measured_run(steps["trl_smoke"], Path(tmp) / "smoke")
        _build_standin(Path(tmp), args.layers)
        record["card_standin"] = {
            "layers": args.layers,
            "parameters": steps["standin_parameters"],
            **measured_run(steps["card_standin"], Path(tmp) / "card"),
        }
        record["part1_standin"] = part1_standin()
        record["versions"] = trl_backend._versions()
        record["provenance"] = provenance()
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    slug = re.sub(r"[^a-z0-9]+", "-", record["device"].lower()).strip("-")
    path = files.save_json(resolve(args.out) / f"{slug}-{stamp}.json", record)
    print(f"recorded {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
