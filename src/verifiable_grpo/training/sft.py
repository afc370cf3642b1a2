"""Supervised fine-tuning: the warm start (from the base) and further SFT (from the warm start).

One update = one batch of `batch_size` examples; its loss is the cross-entropy SUMMED over
every supervised token of the batch divided by the number of those tokens (a token-level
mean over the whole accumulation, not a mean of per-example means). The model stays in
eval mode (no dropout) while it learns. Validation NLL is measured after each epoch and
only logged: nothing is selected with it.

Modes: `continuous` runs every epoch; `interrupt` stops after `interrupt_after_epochs` and
saves a full state; `resume` loads that state in a new process and finishes. The
continuous and resumed final states must be equal bit for bit (checkpoint.verify_resume).
The run's context (what it carries between updates, its own part of a state) is
sft_run.SFTRun.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import torch

from verifiable_grpo.core import crash, interrupts
from verifiable_grpo.core.checkpoint import load_state, seed_everything
from verifiable_grpo.core.config import load_config, provenance, save_json, sha256_file
from verifiable_grpo.core.config_schema import SFT, Profile
from verifiable_grpo.core.faults import fault_point
from verifiable_grpo.core.model import (
    load_base,
    load_tokenizer,
    model_digest,
    reload_policy,
    save_policy,
    synchronize,
    unique_parameters,
)
from verifiable_grpo.core.progress import tqdm
from verifiable_grpo.core.resumable_run import deterministic_kernels
from verifiable_grpo.core.runfolder import MODES, RunFolder, compute_identity
from verifiable_grpo.core.scoring import masked_sums, response_logprob_rows, token_logprobs
from verifiable_grpo.task import data
from verifiable_grpo.task.prompts import (
    check_row_rendering,
    collate,
    completion_row,
    template_identity,
)
from verifiable_grpo.training.sft_run import CODE_ENTRY, SFTRun  # noqa: F401 (re-exported)

BRANCH_SPLITS = {"warmstart": "warmstart", "sft": "train"}
SAMPLER_SEED_OFFSET = {"warmstart": 101, "sft": 102}  # distinct example orders per branch


# ---------------------------------------------------------------- data
def ensure_learning_view(config: Profile, out_dir) -> Path:
    """OUT/learning-data, written from OUT/data (itself written when absent)."""
    out = Path(out_dir)
    view, full = out / "learning-data", out / "data"
    if not (view / "MANIFEST.json").is_file():
        if not (full / "MANIFEST.json").is_file():
            data.write_dataset(full, config.data.seed)
        data.write_learning_view(full, view)
    return view


def sft_examples(view: Path, branch: str, section: SFT) -> tuple[list[dict], list[dict]]:
    """(first `examples` of the branch's split, first `validation_examples` validation problems)."""
    data.assert_learning_only(view)
    examples = data.read_examples(view, BRANCH_SPLITS[branch])
    validation = data.read_examples(view, "validation")
    wanted, wanted_val = section.examples, section.validation_examples
    if len(examples) < wanted or len(validation) < wanted_val:
        raise ValueError(
            f"{view} holds {len(examples)} {BRANCH_SPLITS[branch]} and "
            f"{len(validation)} validation examples; the config asks for "
            f"{wanted} and {wanted_val}"
        )
    return examples[:wanted], validation[:wanted_val]


def encode(tokenizer, examples: list[dict], config: Profile) -> list[dict]:
    rows = [
        dict(
            completion_row(tokenizer, e["statement"], e["response"], config),
            document_id=e["document_id"],
        )
        for e in examples
    ]
    if examples:  # the contract, checked once per run on real data
        check_row_rendering(
            tokenizer, examples[0]["statement"], examples[0]["response"], rows[0], config
        )
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
    return {
        "nll": -sum(s for s, _ in scores) / tokens,
        "tokens": tokens,
        "examples": len(rows),
        "used_for_selection": False,
    }


# ---------------------------------------------------------------- one branch
# The config parts an SFT state depends on (the data and the base enter by SHA-256).
IDENTITY_SECTIONS = ("seed", "device", "model", "tokens")


def _paths(out: Path, branch: str, mode: str) -> dict[str, Path]:
    folder = RunFolder(out)
    return {
        "out": out,
        "state": folder.state(branch, mode),
        "interrupt": folder.state(branch, "interrupt"),
        "policy": folder.policy(branch),
        "start_policy": folder.policy("warmstart"),
        "record": folder.record(branch, mode),
    }


def _starting_policy(config: Profile, branch: str, paths: dict) -> tuple:
    if branch == "warmstart":
        model, tokenizer = load_base(config)
        m = config.model
        return (
            model,
            tokenizer,
            {"source": m.source, "name": m.name, "revision": m.revision, "path": m.path},
        )
    if not paths["start_policy"].is_file():
        raise FileNotFoundError(
            f"further SFT starts from {paths['start_policy']}; run the warm "
            "start first (modes interrupt then resume)"
        )
    model, _ = reload_policy(
        paths["start_policy"], config, RunFolder(paths["out"]).recorded_policy_sha256("warmstart")
    )
    # Relative to OUT: a state must not depend on where the run folder lies.
    source = paths["start_policy"].relative_to(paths["out"]).as_posix()
    return (
        model,
        load_tokenizer(config),
        {"source": source, "sha256": sha256_file(paths["start_policy"])},
    )


def _prepare(config: Profile, out: Path, branch: str, mode: str, paths: dict) -> SFTRun:
    seed_everything(config.seed)  # a resume then restores the saved streams over this
    section = getattr(config, branch)
    view = out / "learning-data"
    examples, validation = sft_examples(view, branch, section)
    model, tokenizer, start = _starting_policy(config, branch, paths)
    device = next(model.parameters()).device
    rows, val_rows = encode(tokenizer, examples, config), encode(tokenizer, validation, config)
    per_epoch = math.ceil(len(rows) / section.batch_size)
    total_updates = per_epoch * section.epochs
    initial_digest = model_digest(model)
    template = template_identity(tokenizer, config)
    identity = {
        **SFTRun.shared_identity(config, IDENTITY_SECTIONS + (branch,)),
        "data_sha256": data.dataset_sha256(view),
        "initial_model_digest": initial_digest,
        "template_sha256": template["sha256"],
        "template": template,
        "branch": branch,
        "start": start,
        "examples": [r["document_id"] for r in rows],
        "validation_examples": [r["document_id"] for r in val_rows],
        "total_updates": total_updates,
        "compute": compute_identity(device),
    }
    sampler = torch.Generator().manual_seed(config.seed + SAMPLER_SEED_OFFSET[branch])
    run = SFTRun(
        config=config,
        branch=branch,
        mode=mode,
        paths=paths,
        model=model,
        rows=rows,
        val_rows=val_rows,
        pad_id=tokenizer.pad_token_id,
        identity=identity,
        initial_digest=initial_digest,
        parameters=unique_parameters(model),
        sampler=sampler,
    )
    run.prepare_optimizer(section, total_updates)
    return run


def _continue_after_crash(run: SFTRun) -> bool:
    """Continue from the newest crash checkpoint if any; move what the run wrote after it
    (a final state or policy without its record) into OUT/aborted."""
    out = run.paths["out"]
    existing = [
        p.relative_to(out).as_posix()
        for p in (run.paths["state"], run.paths["record"])
        + ((run.paths["policy"],) if run.mode == "resume" else ())
        if p.exists()
    ]
    found = run.continue_after_crash(out, run.stage, existing)
    if found is None:
        return False
    crash.move_aside(out, run.stage, existing, "written after the crash checkpoint")
    run.timings = dict(found[0]["timings"])
    return True


def _save_crash(run: SFTRun) -> None:
    saved = run.save_crash(run.paths["out"], run.stage, run.updates)
    run.crash_saves.append({"updates": run.updates, "seconds": saved["seconds"]})


def _update(run: SFTRun, chosen: list[dict], device: torch.device, progress) -> None:
    """One AdamW update on a batch: token-level mean over the batch's supervised tokens."""
    section = run.section
    synchronize(device)
    begin = time.perf_counter()
    batch = collate(chosen, run.pad_id)
    lr = run.optimizer.param_groups[0]["lr"]
    if run.model.training:
        raise ValueError("SFT updates run in eval mode (no dropout)")
    run.optimizer.zero_grad(set_to_none=True)
    scores = token_logprobs(run.model, batch["input_ids"], batch["attention_mask"])
    loss, tokens = accumulation_loss(scores, batch["response_mask"])
    if not torch.isfinite(loss):
        raise ValueError(f"non-finite SFT loss at update {run.updates + 1}")
    loss.backward()
    if any(p.grad is None for p in run.parameters):
        raise ValueError("some parameters received no gradient")
    norm = torch.nn.utils.clip_grad_norm_(
        run.parameters, section.max_grad_norm, error_if_nonfinite=True
    )
    run.optimizer.step()
    run.scheduler.step()
    run.updates += 1
    run.history.append(
        {
            "update": run.updates,
            "epoch": run.epoch + 1,
            "learning_rate": lr,
            "loss": float(loss.detach()),
            "tokens": tokens,
            "grad_norm": float(norm),
            "document_ids": [r["document_id"] for r in chosen],
        }
    )
    synchronize(device)
    seconds = time.perf_counter() - begin
    run.timings["optimisation_seconds"] += seconds
    run.timings["update_seconds"].append(seconds)
    progress.update(1)
    progress.set_postfix(loss=f"{run.history[-1]['loss']:.4f}")


def _validate(run: SFTRun, device: torch.device, progress) -> None:
    begin = time.perf_counter()
    measured = validation_nll(run.model, run.val_rows, run.pad_id, run.section.batch_size)
    synchronize(device)
    run.timings["validation_seconds"] += time.perf_counter() - begin
    run.validation_history.append({"epoch": run.epoch, "updates": run.updates, **measured})
    progress.write(
        f"{run.branch} epoch {run.epoch}/{run.section.epochs}: validation NLL {measured['nll']:.4f}"
    )


def _train(run: SFTRun) -> None:
    """Epochs up to the stop; a crash checkpoint every checkpoint_every_updates updates, at
    each epoch's end and at a requested stop."""
    batch_size, every = run.section.batch_size, run.section.checkpoint_every_updates
    device = next(run.model.parameters()).device
    per_epoch = math.ceil(len(run.rows) / batch_size)
    done_this_epoch = math.ceil(run.offset / batch_size)
    progress = tqdm(
        total=(run.stop - run.epoch) * per_epoch - done_this_epoch,
        desc=f"{run.branch} {run.mode}",
        unit="update",
    )
    while run.epoch < run.stop:
        if run.epoch_order is None:
            run.epoch_order = torch.randperm(len(run.rows), generator=run.sampler).tolist()
            run.offset = 0
        while run.offset < len(run.rows):
            chosen = [run.rows[i] for i in run.epoch_order[run.offset : run.offset + batch_size]]
            _update(run, chosen, device, progress)
            run.offset += batch_size
            fault_point("sft-after-update")
            if run.offset < len(run.rows) and (run.updates % every == 0 or interrupts.requested()):
                _save_crash(run)
                interrupts.check(f"after update {run.updates} of {run.stage} (saved)")
        run.epoch += 1
        run.epoch_order, run.offset = None, 0
        _validate(run, device, progress)
        if run.epoch < run.stop:
            _save_crash(run)
            interrupts.check(f"after epoch {run.epoch} of {run.stage} (saved)")
    progress.close()


def _finish(run: SFTRun, resumed_digest: str, command_start: float) -> dict:
    device = next(run.model.parameters()).device
    final_digest = model_digest(run.model)
    if final_digest == resumed_digest and run.epoch > 0:  # a continued run has >= 1 update left
        raise ValueError("SFT ran but no weight changed")
    saved = run.save_final(run.paths["state"], model_digest=final_digest)
    fault_point("sft-after-final-state")
    policy = None
    if run.mode == "resume":
        policy = {
            "path": str(run.paths["policy"]),
            "sha256": save_policy(
                run.model,
                run.paths["policy"],
                {
                    "identity": run.identity,
                    "branch": run.branch,
                    "updates": run.updates,
                    "epochs": run.epoch,
                },
            ),
        }
    timings = dict(
        run.timings,
        command_seconds=time.perf_counter() - command_start,
        crash_checkpoints={
            "saved": len(run.crash_saves),
            "seconds": sum(c["seconds"] for c in run.crash_saves),
        },
    )
    section = run.section
    record = {
        "branch": run.branch,
        "mode": run.mode,
        "provenance": provenance(run.config),
        "identity": run.identity,
        "examples": len(run.rows),
        "validation_examples": len(run.val_rows),
        "batch_size": section.batch_size,
        "epochs": section.epochs,
        "epochs_done": run.epoch,
        "updates": run.updates,
        "total_updates": run.identity["total_updates"],
        "history": run.history,
        "validation_history": run.validation_history,
        "initial_model_digest": run.initial_digest,
        "final_model_digest": final_digest,
        "weights_changed": final_digest != run.initial_digest,
        "trainable_parameters": sum(p.numel() for p in run.parameters if p.requires_grad),
        "state": {"path": str(run.paths["state"]), **saved},
        "policy": policy,
        "timings": timings,
        "device": str(device),
        "peak_cuda_memory_bytes": torch.cuda.max_memory_allocated()
        if device.type == "cuda"
        else None,
        "dropout_active": run.model.training,
        "test_material_visible": False,
    }
    save_json(run.paths["record"], record)
    fault_point("after-record")
    run.finished(run.paths["out"], run.stage)
    return record


def run_sft_branch(config: Profile, out_dir, branch: str, mode: str) -> dict:
    """Train one SFT branch in one mode; writes the state, the record and (resume) the policy.
    A run cut short (crash, kill, signal) continues from its newest crash checkpoint."""
    command_start = time.perf_counter()
    if branch not in BRANCH_SPLITS or mode not in MODES:
        raise ValueError(
            f"branch must be one of {list(BRANCH_SPLITS)} and mode one of "
            f"{list(MODES)}; got {branch!r}, {mode!r}"
        )
    out = Path(out_dir)
    paths = _paths(out, branch, mode)
    if crash.branch_finished(out, branch, mode):
        raise FileExistsError(
            f"{branch} {mode} already ran: {paths['record']} exists; "
            "evidence is never overwritten (use a new --out folder)"
        )
    if mode == "resume" and not paths["interrupt"].is_file():
        raise FileNotFoundError(
            f"nothing to resume: {paths['interrupt']} is missing "
            f"(run {branch} with --mode interrupt first)"
        )

    run = _prepare(config, out, branch, mode, paths)
    if not _continue_after_crash(run) and mode == "resume":
        begin = time.perf_counter()
        state = load_state(
            paths["interrupt"], RunFolder(out).recorded_state_sha256(branch, "interrupt")
        )
        run.timings["state_load_seconds"] = time.perf_counter() - begin
        run.restore(state, f"{branch} interrupt state")
        del state
    resumed_digest = model_digest(run.model)
    with deterministic_kernels(next(run.model.parameters()).device):
        _train(run)
        return _finish(run, resumed_digest, command_start)


# ---------------------------------------------------------------- CLI
def _command(args, branch: str) -> int:
    config = load_config(args.config)
    ensure_learning_view(config, args.out)
    record = run_sft_branch(config, args.out, branch, args.mode)
    last = record["validation_history"][-1]["nll"] if record["validation_history"] else None
    print(
        f"{branch} {args.mode}: {record['updates']}/{record['total_updates']} updates, "
        f"validation NLL {last}, state {record['state']['bytes']:,} bytes, "
        f"{record['timings']['command_seconds']:.1f} s"
    )
    return 0


def command_warmstart(args) -> int:
    return _command(args, "warmstart")


def command_sft(args) -> int:
    return _command(args, "sft")
