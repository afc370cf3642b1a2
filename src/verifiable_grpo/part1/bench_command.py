"""The `bench` verb: `bench grpo` (ours batched and sequential against TRL's GRPOTrainer, on
the tiny warm start), `bench band` (the pretrained-model setting, band_bench.py) and
`bench pipeline` (a finished run's stage times against the record). The arms themselves
are bench.py (ours), bench_trl.py (TRL) and band_bench.py; this module runs and prints them.
"""

from __future__ import annotations

import time
from pathlib import Path

import torch

from verifiable_grpo.core.config import provenance, read_json, repo_root, save_json
from verifiable_grpo.part1 import band_bench, bench_trl
from verifiable_grpo.part1.bench import (
    BENCH_SHAPE,
    BenchRun,
    bench_config,
    bench_examples,
    run_ours,
)
from verifiable_grpo.part1.bench_memory import exact_kl_memory


def pipeline_times(folder) -> dict | None:
    path = Path(folder) / "timings.json"
    if not path.is_file():
        return None
    timings = read_json(path)
    return {
        "source": str(path),
        "groups": timings["groups"],
        "total_seconds": timings["total_seconds"],
    }


# --------------------------------------------------------------------------- the command
def bench_grpo(
    sets: int = 5,
    warmup: int = 1,
    with_trl: bool = True,
    with_kl: bool = True,
    runs: list[str] | None = None,
    profile: str = "tiny",
) -> dict:
    config = bench_config(profile)
    examples = bench_examples(config, (sets + warmup) * BENCH_SHAPE["prompts"])
    run = BenchRun(config, examples, sets, warmup)
    torch.manual_seed(0)
    started = time.perf_counter()
    arms = [run_ours(run, batched=True), run_ours(run, batched=False)]
    if with_trl:
        arms.append(bench_trl.run_trl(run))
        arms.append(bench_trl.run_trl(run, fastest=True))  # gradient checkpointing off
    result = {
        "shape": BENCH_SHAPE,
        "sets": sets,
        "arms": arms,
        "ratio_ours_batched_to_trl": (
            arms[0]["median_seconds"]["total"] / arms[2]["median_seconds"]["total"]
        )
        if with_trl
        else None,
        "ratio_ours_batched_to_trl_fastest": (
            arms[0]["median_seconds"]["total"] / arms[3]["median_seconds"]["total"]
        )
        if with_trl
        else None,
        "ratio_sequential_to_batched": (
            arms[1]["median_seconds"]["total"] / arms[0]["median_seconds"]["total"]
        ),
        "arms_seconds": time.perf_counter() - started,
        "exact_kl_memory": exact_kl_memory() if with_kl else None,
        "pipeline": {r: pipeline_times(repo_root() / r) for r in (runs or [])},
        "provenance": provenance(config),
    }
    return result


def format_bench(result: dict) -> str:
    lines = [
        f"GRPO rollout set: {result['shape']['prompts']} prompts x G={result['shape']['group_size']}, "
        f"<= {result['shape']['max_new_tokens']} new tokens, "
        f"{result['shape']['updates_per_rollout']} updates, beta {result['shape']['kl_coefficient']}; "
        f"median of {result['sets']} sets",
        "",
        f"{'arm':34} {'total s':>8} {'gen s':>7} {'verify s':>8} {'optim s':>8} {'peak MB':>8}",
    ]
    for arm in result["arms"]:
        m = arm["median_seconds"]
        lines.append(
            f"{arm['arm']:34} {m['total']:8.3f} {m['generation']:7.3f} "
            f"{m['verification']:8.3f} {m['optimisation']:8.3f} "
            f"{arm['peak_memory_bytes'] / 2**20:8.0f}"
        )
    if result["ratio_ours_batched_to_trl"] is not None:
        lines.append(f"ours batched / TRL: {result['ratio_ours_batched_to_trl']:.2f}")
    if result.get("ratio_ours_batched_to_trl_fastest") is not None:
        lines.append(
            f"ours batched / TRL at its fastest CPU setting: "
            f"{result['ratio_ours_batched_to_trl_fastest']:.2f}"
        )
    lines.append(f"ours sequential / ours batched: {result['ratio_sequential_to_batched']:.2f}")
    kl = result.get("exact_kl_memory")
    if kl:
        lines.append(
            f"exact KL at vocabulary {kl['vocabulary']:,}, {kl['responses']} x "
            f"{kl['tokens']} (each logits tensor {kl['logits_bytes_each'] / 2**20:.0f} MB): "
            + ", ".join(
                f"block {b['block_size']:,}: {b['working_bytes'] / 2**20:.0f} MB"
                for b in kl["blocks"]
            )
        )
    for name, times in (result.get("pipeline") or {}).items():
        if times:
            lines.append(
                f"pipeline {name}: "
                + ", ".join(f"{g} {s:.0f} s" for g, s in times["groups"].items())
                + f"; total {times['total_seconds']:.0f} s"
            )
    return "\n".join(lines)


def command_bench(args) -> int:
    if args.what == "pipeline":
        return command_pipeline(args)
    if args.what not in ("grpo", "band"):
        raise ValueError(f"unknown benchmark {args.what!r}: use grpo, band or pipeline")
    if args.sets < 1 or args.warmup < 0:
        raise ValueError("--sets must be >= 1 and --warmup >= 0")
    if args.what == "band":
        result = band_bench.bench_band(args.sets, args.warmup)
        if args.save:  # first: a formatting slip must not lose minutes of measurement
            print(f"saved {save_json(repo_root() / args.save, result)}")
        print(band_bench.format_band_bench(result))
        return 0
    result = bench_grpo(
        args.sets, args.warmup, with_trl=not args.no_trl, with_kl=not args.no_kl, runs=args.runs
    )
    print(format_bench(result))
    if args.save:
        path = save_json(repo_root() / args.save, result)
        print(f"saved {path}")
    return 0


def command_pipeline(args) -> int:
    """`bench pipeline --run FOLDER [--save DIR]`: a finished run against the record."""
    import shutil

    from verifiable_grpo.part1 import pipeline_compare

    if not args.run:
        raise ValueError("bench pipeline needs --run FOLDER (a finished `run` folder)")
    if not (Path(args.run) / "timings.json").is_file():
        raise FileNotFoundError(
            f"{args.run} is not a finished run folder (no timings.json): finish it with "
            "`python -m verifiable_grpo run --config CONFIG --out FOLDER` first"
        )
    result = pipeline_compare.compare_run(args.run)
    first = pipeline_compare.first_recording()
    result["first_recording"] = first
    print(pipeline_compare.format_comparison(result, first["total_seconds"]))
    if args.save:
        folder = repo_root() / args.save
        path = save_json(folder / "comparison.json", result)
        shutil.copyfile(Path(args.run) / "timings.json", folder / "timings.json")
        print(f"saved {path} and {folder / 'timings.json'}")
    return 0
