"""Supervised fine-tuning: the warm start (from the base) and further SFT (from the warm start).

One update = one batch of `batch_size` examples; its loss is the cross-entropy SUMMED over
every supervised token of the batch divided by the number of those tokens (a token-level
mean over the whole accumulation, not a mean of per-example means). The model stays in
eval mode (no dropout) while it learns. Validation NLL is measured after each epoch and
only logged: nothing is selected with it.

Modes: `continuous` runs every epoch; `interrupt` stops after `interrupt_after_epochs` and
saves a full state; `resume` loads that state in a new process and finishes. The
continuous and resumed final states must be equal bit for bit (checkpoint.verify_resume).
"""
from __future__ import annotations

import math
import time
from pathlib import Path

import torch
from .progress import tqdm

from . import data
from .checkpoint import (capture_rng, check_identity, load_state, restore_rng, run_identity,
                         save_state, seed_everything)
from .config import load_config, provenance, save_json, sha256_file
from .model import (load_base, load_tokenizer, model_digest, reload_policy, save_policy,
                    synchronize, unique_parameters)
from .prompts import check_row_rendering, collate, completion_row, template_identity
from .schedule import make_scheduler
from .scoring import masked_sums, response_logprob_rows, token_logprobs

BRANCH_SPLITS = {"warmstart": "warmstart", "sft": "train"}
MODES = ("continuous", "interrupt", "resume")
SAMPLER_SEED_OFFSET = {"warmstart": 101, "sft": 102}  # distinct example orders per branch
# The code an SFT state depends on: a resume refuses a state written by other code.
SFT_MODULES = ("sft.py", "model.py", "prompts.py", "scoring.py", "schedule.py", "checkpoint.py",
               "statements.py", "data.py", "verifier.py", "config.py")


# ---------------------------------------------------------------- data
def ensure_learning_view(config: dict, out_dir) -> Path:
    """OUT/learning-data, written from OUT/data (itself written when absent)."""
    out = Path(out_dir)
    view, full = out / "learning-data", out / "data"
    if not (view / "MANIFEST.json").is_file():
        if not (full / "MANIFEST.json").is_file():
            data.write_dataset(full, config["data"]["seed"])
        data.write_learning_view(full, view)
    return view


def sft_examples(view: Path, branch: str, section: dict) -> tuple[list[dict], list[dict]]:
    """(first `examples` of the branch's split, first `validation_examples` validation problems)."""
    data.assert_learning_only(view)
    examples = data.read_examples(view, BRANCH_SPLITS[branch])
    validation = data.read_examples(view, "validation")
    wanted, wanted_val = section["examples"], section["validation_examples"]
    if len(examples) < wanted or len(validation) < wanted_val:
        raise ValueError(f"{view} holds {len(examples)} {BRANCH_SPLITS[branch]} and "
                         f"{len(validation)} validation examples; the config asks for "
                         f"{wanted} and {wanted_val}")
    return examples[:wanted], validation[:wanted_val]


def encode(tokenizer, examples: list[dict], config: dict) -> list[dict]:
    rows = [dict(completion_row(tokenizer, e["statement"], e["response"], config),
                 document_id=e["document_id"]) for e in examples]
    if examples:  # the contract, checked once per run on real data
        check_row_rendering(tokenizer, examples[0]["statement"], examples[0]["response"], rows[0], config)
    return rows


# ---------------------------------------------------------------- the objective
def accumulation_loss(logprobs: torch.Tensor, response_mask: torch.Tensor):
    """(-sum of supervised log-probs / supervised tokens of the whole batch, token count)."""
    sums, counts = masked_sums(logprobs, response_mask)
    tokens = int(counts.sum())
    if tokens == 0:
        raise ValueError("a batch without supervised tokens")
    return -sums.sum() / tokens, tokens


def validation_nll(model, rows: list[dict], pad_id: int, batch_size: int) -> dict:
    scores = response_logprob_rows(model, rows, pad_id, batch_size)
    tokens = sum(c for _, c in scores)
    return {"nll": -sum(s for s, _ in scores) / tokens, "tokens": tokens, "examples": len(rows),
            "used_for_selection": False}


# ---------------------------------------------------------------- one branch
def _paths(out: Path, branch: str, mode: str) -> dict[str, Path]:
    checkpoints = out / "checkpoints"
    return {"state": checkpoints / f"{branch}-{mode}.pt.gz",
            "interrupt": checkpoints / f"{branch}-interrupt.pt.gz",
            "policy": checkpoints / f"{branch}-resume.safetensors",
            "start_policy": checkpoints / "warmstart-resume.safetensors",
            "record": out / "learning" / f"{branch}-{mode}.json"}


def _starting_policy(config: dict, branch: str, paths: dict) -> tuple:
    if branch == "warmstart":
        model, tokenizer = load_base(config)
        m = config["model"]
        return model, tokenizer, {"source": m["source"], "name": m["name"],
                                  "revision": m.get("revision"), "path": m.get("path")}
    if not paths["start_policy"].is_file():
        raise FileNotFoundError(f"further SFT starts from {paths['start_policy']}; run the warm "
                                "start first (modes interrupt then resume)")
    model, _ = reload_policy(paths["start_policy"], config)
    return model, load_tokenizer(config), {"source": str(paths["start_policy"]),
                                           "sha256": sha256_file(paths["start_policy"])}


def compute_identity(device: torch.device) -> dict:
    """Where the numbers are computed: another GPU model or CPU thread count can change
    floating-point results, so a bitwise resume must run on the same kind of machine."""
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    return {"device": name, "torch_threads": torch.get_num_threads(),
            "torch": torch.__version__}


def run_sft_branch(config: dict, out_dir, branch: str, mode: str) -> dict:
    """Train one SFT branch in one mode; writes the state, the record and (resume) the policy."""
    command_start = time.perf_counter()
    if branch not in BRANCH_SPLITS or mode not in MODES:
        raise ValueError(f"branch must be one of {list(BRANCH_SPLITS)} and mode one of "
                         f"{list(MODES)}; got {branch!r}, {mode!r}")
    out = Path(out_dir)
    section = config[branch]
    paths = _paths(out, branch, mode)
    existing = [str(p) for p in (paths["state"], paths["record"]) if p.exists()]
    if mode == "resume" and paths["policy"].exists():
        existing.append(str(paths["policy"]))
    if existing:
        raise FileExistsError(f"{branch} {mode} already ran: {existing} exist; evidence is never "
                              "overwritten (use a new --out folder)")
    epochs, interrupt_at = section["epochs"], section["interrupt_after_epochs"]
    if not 1 <= interrupt_at < epochs:
        raise ValueError(f"{branch}.interrupt_after_epochs must be in 1..{epochs - 1}")
    if mode == "resume" and not paths["interrupt"].is_file():
        raise FileNotFoundError(f"nothing to resume: {paths['interrupt']} is missing "
                                f"(run {branch} with --mode interrupt first)")

    seed_everything(config["seed"])  # a resume then restores the saved streams over this
    view = out / "learning-data"
    examples, validation = sft_examples(view, branch, section)
    model, tokenizer, start = _starting_policy(config, branch, paths)
    device = next(model.parameters()).device
    rows, val_rows = encode(tokenizer, examples, config), encode(tokenizer, validation, config)
    pad_id = tokenizer.pad_token_id
    batch_size = section["batch_size"]
    per_epoch = math.ceil(len(rows) / batch_size)
    total_updates = per_epoch * epochs
    initial_digest = model_digest(model)
    identity = run_identity(
        config, data.dataset_sha256(view), initial_digest, template_identity(tokenizer, config),
        modules=SFT_MODULES, branch=branch, start=start, examples=[r["document_id"] for r in rows],
        validation_examples=[r["document_id"] for r in val_rows], total_updates=total_updates,
        compute=compute_identity(device))

    parameters = unique_parameters(model)
    optimizer = torch.optim.AdamW(parameters, lr=section["learning_rate"],
                                  weight_decay=section["weight_decay"])
    scheduler = make_scheduler(optimizer, total_updates, section)
    sampler = torch.Generator().manual_seed(config["seed"] + SAMPLER_SEED_OFFSET[branch])
    epoch, updates, history, validation_history = 0, 0, [], []
    timings = {"state_load_seconds": 0.0, "optimisation_seconds": 0.0, "validation_seconds": 0.0,
               "update_seconds": []}

    if mode == "resume":
        begin = time.perf_counter()
        state = load_state(paths["interrupt"])
        timings["state_load_seconds"] = time.perf_counter() - begin
        check_identity(identity, state["identity"], what=f"{branch} interrupt state")
        model.load_state_dict(state["model"], strict=True)
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        sampler.set_state(state["sampler"])
        restore_rng(state["rng"])  # last: nothing may draw between restoring and training
        epoch, updates = state["epoch"], state["updates"]
        history, validation_history = state["history"], state["validation_history"]
        del state
    resumed_digest = model_digest(model)
    stop = interrupt_at if mode == "interrupt" else epochs
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()

    progress = tqdm(total=(stop - epoch) * per_epoch, desc=f"{branch} {mode}", unit="update")
    while epoch < stop:
        order = torch.randperm(len(rows), generator=sampler).tolist()
        for offset in range(0, len(rows), batch_size):
            synchronize(device)
            begin = time.perf_counter()
            chosen = [rows[i] for i in order[offset:offset + batch_size]]
            batch = collate(chosen, pad_id)
            lr = optimizer.param_groups[0]["lr"]
            if model.training:
                raise ValueError("SFT updates run in eval mode (no dropout)")
            optimizer.zero_grad(set_to_none=True)
            scores = token_logprobs(model, batch["input_ids"], batch["attention_mask"])
            loss, tokens = accumulation_loss(scores, batch["response_mask"])
            if not torch.isfinite(loss):
                raise ValueError(f"non-finite SFT loss at update {updates + 1}")
            loss.backward()
            if any(p.grad is None for p in parameters):
                raise ValueError("some parameters received no gradient")
            norm = torch.nn.utils.clip_grad_norm_(parameters, section["max_grad_norm"],
                                                  error_if_nonfinite=True)
            optimizer.step()
            scheduler.step()
            updates += 1
            history.append({"update": updates, "epoch": epoch + 1, "learning_rate": lr,
                            "loss": float(loss.detach()), "tokens": tokens,
                            "grad_norm": float(norm), "document_ids": [r["document_id"] for r in chosen]})
            synchronize(device)
            seconds = time.perf_counter() - begin
            timings["optimisation_seconds"] += seconds
            timings["update_seconds"].append(seconds)
            progress.update(1)
            progress.set_postfix(loss=f"{history[-1]['loss']:.4f}")
        epoch += 1
        begin = time.perf_counter()
        measured = validation_nll(model, val_rows, pad_id, batch_size)
        synchronize(device)
        timings["validation_seconds"] += time.perf_counter() - begin
        validation_history.append({"epoch": epoch, "updates": updates, **measured})
        progress.write(f"{branch} epoch {epoch}/{epochs}: validation NLL {measured['nll']:.4f}")
    progress.close()

    final_digest = model_digest(model)
    if final_digest == resumed_digest and epoch > 0:
        raise ValueError("SFT ran but no weight changed")
    state = {"identity": identity, "branch": branch, "epoch": epoch, "updates": updates,
             "model": model.state_dict(), "optimizer": optimizer.state_dict(),
             "scheduler": scheduler.state_dict(), "sampler": sampler.get_state(),
             "rng": capture_rng(), "history": history, "validation_history": validation_history,
             "model_digest": final_digest, "timings": dict(timings)}
    saved = save_state(paths["state"], state)
    policy = None
    if mode == "resume":
        policy = {"path": str(paths["policy"]), "sha256": save_policy(
            model, paths["policy"], {"identity": identity, "branch": branch,
                                     "updates": updates, "epochs": epoch})}
    timings["command_seconds"] = time.perf_counter() - command_start
    record = {
        "branch": branch, "mode": mode, "provenance": provenance(config), "identity": identity,
        "examples": len(rows), "validation_examples": len(val_rows), "batch_size": batch_size,
        "epochs": epochs, "epochs_done": epoch, "updates": updates, "total_updates": total_updates,
        "history": history, "validation_history": validation_history,
        "initial_model_digest": initial_digest, "final_model_digest": final_digest,
        "weights_changed": final_digest != initial_digest,
        "trainable_parameters": sum(p.numel() for p in parameters if p.requires_grad),
        "state": {"path": str(paths["state"]), **saved}, "policy": policy,
        "timings": timings, "device": str(device),
        "peak_cuda_memory_bytes": torch.cuda.max_memory_allocated() if device.type == "cuda" else None,
        "dropout_active": model.training, "test_material_visible": False,
    }
    save_json(paths["record"], record)
    return record


# ---------------------------------------------------------------- CLI
def _command(args, branch: str) -> int:
    config = load_config(args.config)
    ensure_learning_view(config, args.out)
    record = run_sft_branch(config, args.out, branch, args.mode)
    last = record["validation_history"][-1]["nll"] if record["validation_history"] else None
    print(f"{branch} {args.mode}: {record['updates']}/{record['total_updates']} updates, "
          f"validation NLL {last}, state {record['state']['bytes']:,} bytes, "
          f"{record['timings']['command_seconds']:.1f} s")
    return 0


def command_warmstart(args) -> int:
    return _command(args, "warmstart")


def command_sft(args) -> int:
    return _command(args, "sft")
