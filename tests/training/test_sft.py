"""SFT branches at smoke size on the micro random model: exact resume, records, refusals."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch
import yaml

from verifiable_grpo.core.checkpoint import load_state, verify_resume
from verifiable_grpo.core.config import ConfigError, load_config, read_json, repo_root
from verifiable_grpo.core.model import reload_policy
from verifiable_grpo.core.schedule import learning_rate
from verifiable_grpo.core.scoring import forward_logits
from verifiable_grpo.task.prompts import collate, completion_row
from verifiable_grpo.training import sft


def micro_config():
    return load_config("smoke").replaced(model={"source": "random"})


def scramble_global_rng(salt: int) -> None:
    """Leave the process's RNG streams somewhere else, as another process would find them."""
    import random

    import numpy as np

    random.seed(salt)
    np.random.seed(salt)
    torch.manual_seed(salt)
    random.random()
    np.random.rand()
    torch.rand(1)


@pytest.fixture(scope="module")
def sft_run(tmp_path_factory):
    """Both branches in all three modes; the warm-start resume runs in a fresh process and
    every other run starts from different global RNG states, as separate commands would."""
    config = micro_config()
    out = tmp_path_factory.mktemp("sft-run")
    sft.ensure_learning_view(config, out)
    scramble_global_rng(1)
    records = {
        ("warmstart", "interrupt"): sft.run_sft_branch(config, out, "warmstart", "interrupt")
    }
    config_file = out / "micro.yaml"
    config_file.write_text(yaml.safe_dump({k: v for k, v in config.items() if k != "_path"}))
    env = dict(
        os.environ,
        VERIFIABLE_GRPO_ROOT=str(repo_root()),
        TQDM_DISABLE="1",
        OMP_NUM_THREADS=str(torch.get_num_threads()),
    )  # same arithmetic as this process
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "verifiable_grpo",
            "warmstart",
            "--config",
            str(config_file),
            "--out",
            str(out),
            "--mode",
            "resume",
        ],
        cwd=repo_root(),
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    records["warmstart", "resume"] = read_json(out / "learning" / "warmstart-resume.json")
    scramble_global_rng(2)
    records["warmstart", "continuous"] = sft.run_sft_branch(config, out, "warmstart", "continuous")
    for salt, mode in enumerate(("interrupt", "resume", "continuous"), start=3):
        scramble_global_rng(salt)
        records["sft", mode] = sft.run_sft_branch(config, out, "sft", mode)
    reports = {branch: verify_resume(out, branch) for branch in ("warmstart", "sft")}
    return {"config": config, "out": out, "records": records, "reports": reports}


@pytest.mark.parametrize("branch", ["warmstart", "sft"])
def test_resumed_state_equals_continuous_bit_for_bit(sft_run, branch):
    report = sft_run["reports"][branch]
    assert report["differences"] == []
    assert report["equal"] is True
    assert report["continuous"]["model_digest"] == report["resume"]["model_digest"]
    records = sft_run["records"]
    assert report["resume"]["model_digest"] == records[branch, "resume"]["final_model_digest"]
    # the interrupt really stopped early, and the resume continued its history
    interrupt, resume = records[branch, "interrupt"], records[branch, "resume"]
    assert interrupt["updates"] == 2 and interrupt["epochs_done"] == 1
    assert resume["history"][:2] == interrupt["history"]
    assert resume["history"] == records[branch, "continuous"]["history"]
    assert (
        resume["weights_changed"]
        and interrupt["final_model_digest"] != resume["final_model_digest"]
    )


def test_a_changed_state_would_be_detected(sft_run):
    out = sft_run["out"]
    continuous = load_state(out / "checkpoints" / "warmstart-continuous.pt.gz")
    interrupt = load_state(out / "checkpoints" / "warmstart-interrupt.pt.gz")
    from verifiable_grpo.core.checkpoint import compare_states

    differences = compare_states(continuous, interrupt)
    assert ".updates: 6 != 2" in differences
    assert any(d.startswith(".model.") for d in differences)
    assert any(d.startswith(".optimizer.") for d in differences)
    assert any(d.startswith(".sampler") for d in differences)


def test_sft_starts_from_the_saved_warm_start(sft_run):
    out, config = sft_run["out"], sft_run["config"]
    warm = sft_run["records"]["warmstart", "resume"]
    model, metadata = reload_policy(out / "checkpoints" / "warmstart-resume.safetensors", config)
    assert metadata["model_digest"] == warm["final_model_digest"]
    assert metadata["identity"] == warm["identity"]
    further = sft_run["records"]["sft", "continuous"]
    assert further["initial_model_digest"] == warm["final_model_digest"]
    assert further["identity"]["start"]["sha256"] == warm["policy"]["sha256"]
    assert further["updates"] == further["total_updates"] == 4  # 16 examples / 8 x 2 epochs


def test_records_hold_the_schedule_order_and_validation(sft_run):
    config = sft_run["config"]
    record = sft_run["records"]["warmstart", "continuous"]
    section = config["warmstart"]
    assert record["total_updates"] == 6 and record["examples"] == 16
    assert [h["learning_rate"] for h in record["history"]] == pytest.approx(
        [learning_rate(s, 6, section["learning_rate"], 0.1, 0.1) for s in range(6)], rel=1e-12
    )
    expected_ids = [f"sa-warmstart-{i:04d}" for i in range(16)]  # the first N of the split
    orders = []
    for epoch in (1, 2, 3):
        ids = [d for h in record["history"] if h["epoch"] == epoch for d in h["document_ids"]]
        assert sorted(ids) == expected_ids
        orders.append(ids)
    assert orders[0] != orders[1] != orders[2]  # a fresh permutation each epoch
    assert all(h["tokens"] > 0 and h["grad_norm"] > 0 for h in record["history"])
    assert [v["epoch"] for v in record["validation_history"]] == [1, 2, 3]
    assert all(
        v["examples"] == 16 and v["used_for_selection"] is False
        for v in record["validation_history"]
    )
    assert set(record["timings"]) >= {
        "optimisation_seconds",
        "validation_seconds",
        "command_seconds",
    }
    assert len(record["timings"]["update_seconds"]) == 6
    assert record["state"]["bytes"] == os.path.getsize(record["state"]["path"])
    assert record["dropout_active"] is False
    assert record["peak_cuda_memory_bytes"] is None or record["device"].startswith("cuda")
    # The state depends on the config parts SFT reads, not on the whole profile.
    from verifiable_grpo.core.config import sections_hash
    from verifiable_grpo.training.sft import IDENTITY_SECTIONS

    assert record["identity"]["config_sha256"] == sections_hash(
        config, IDENTITY_SECTIONS + ("warmstart",)
    )
    shared = sft.SFTRun.shared_identity(config, IDENTITY_SECTIONS + ("warmstart",))
    assert {k: record["identity"][k] for k in shared} == shared


def test_evidence_is_never_overwritten(sft_run):
    with pytest.raises(FileExistsError, match="already ran"):
        sft.run_sft_branch(sft_run["config"], sft_run["out"], "warmstart", "continuous")


def test_resume_refuses_another_run_and_needs_its_interrupt(tmp_path):
    config = micro_config()
    sft.ensure_learning_view(config, tmp_path)
    with pytest.raises(FileNotFoundError, match="nothing to resume"):
        sft.run_sft_branch(config, tmp_path, "warmstart", "resume")
    sft.run_sft_branch(config, tmp_path, "warmstart", "interrupt")
    other = config.replaced(warmstart={"learning_rate": 1e-3})
    with pytest.raises(ValueError, match="refusing to resume.*config_sha256"):
        sft.run_sft_branch(other, tmp_path, "warmstart", "resume")
    threads = torch.get_num_threads()
    try:  # other CPU arithmetic (thread count) could break bitwise equality: refused
        torch.set_num_threads(threads + 1)
        with pytest.raises(ValueError, match="refusing to resume.*compute"):
            sft.run_sft_branch(config, tmp_path, "warmstart", "resume")
    finally:
        torch.set_num_threads(threads)
    assert not (tmp_path / "checkpoints" / "warmstart-resume.pt.gz").exists()
    with pytest.raises(FileNotFoundError, match="run the warm start first"):
        sft.run_sft_branch(config, tmp_path, "sft", "continuous")


def test_refuses_test_material_and_bad_arguments(tmp_path, dataset_dir):
    config = micro_config()
    import shutil

    shutil.copytree(dataset_dir, tmp_path / "learning-data")  # the FULL dataset, with test labels
    with pytest.raises(ValueError, match="not a learning-only view"):
        sft.run_sft_branch(config, tmp_path, "warmstart", "continuous")
    assert not (tmp_path / "checkpoints").exists()
    with pytest.raises(ValueError, match="branch must be one of"):
        sft.run_sft_branch(config, tmp_path, "grpo", "continuous")
    with pytest.raises(  # refused when the profile is made, before any branch can run
        ConfigError,
        match=r"warmstart\.interrupt_after_epochs: must be in 1\.\.2 "
        r"\(the resume check stops after an epoch before the "
        r"last; epochs is 3\), got 3",
    ):
        config.replaced(warmstart={"interrupt_after_epochs": 3})


def test_loss_is_normalised_over_all_tokens_of_the_accumulation():
    # row 0 supervises one token (log-prob -1), row 1 three tokens (-2 each)
    logprobs = torch.tensor([[-9.0, -1.0, -9.0, -9.0], [-9.0, -2.0, -2.0, -2.0]])
    mask = torch.tensor([[False, False, True, False, False], [False, False, True, True, True]])
    loss, tokens = sft.accumulation_loss(logprobs, mask)
    assert tokens == 4
    assert float(loss) == (1.0 + 6.0) / 4 == 1.75  # not the mean of per-example means, 1.5
    with pytest.raises(ValueError, match="without supervised tokens"):
        sft.accumulation_loss(logprobs, torch.zeros_like(mask))


def test_loss_on_a_real_batch_matches_float64(micro_model, random_config):
    model, tokenizer = micro_model
    rows = [
        completion_row(
            tokenizer,
            "Initial stock 1. Deliveries 2 and 3. Withdrawals 0 and 0.",
            response,
            random_config,
        )
        for response in ('{"final_stock": 6}', '{"final_stock": 6, "note": "long answer"}')
    ]
    assert rows[0]["response_tokens"] != rows[1]["response_tokens"]
    batch = collate(rows, tokenizer.pad_token_id)
    from verifiable_grpo.core.scoring import token_logprobs

    loss, tokens = sft.accumulation_loss(
        token_logprobs(model, batch["input_ids"], batch["attention_mask"]), batch["response_mask"]
    )
    with torch.no_grad():
        logits = forward_logits(model, batch["input_ids"], batch["attention_mask"]).double()
    total, count = 0.0, 0
    for b, row in enumerate(rows):
        for t in range(row["prompt_length"], len(row["input_ids"])):  # supervised targets
            total -= float(torch.log_softmax(logits[b, t - 1], -1)[row["input_ids"][t]])
            count += 1
    assert tokens == count == sum(r["response_tokens"] for r in rows)
    assert float(loss.detach()) == pytest.approx(total / count, abs=1e-5)


def test_a_signal_stops_a_single_stage_cleanly_and_the_same_command_continues(tmp_path):
    """SIGINT during `warmstart`: one line naming the command, no traceback, a crash
    checkpoint kept; the same command then finishes and clears it."""
    from shared_helpers import run_cli

    config = micro_config()
    sft.ensure_learning_view(config, tmp_path)
    config_file = tmp_path / "micro.yaml"
    config_file.write_text(yaml.safe_dump({k: v for k, v in config.items() if k != "_path"}))
    command = [
        "warmstart",
        "--config",
        str(config_file),
        "--out",
        str(tmp_path),
        "--mode",
        "interrupt",
    ]
    stopped = run_cli(command, {"VERIFIABLE_GRPO_FAULT": "sft-after-update#1:INT"})
    assert stopped.returncode == 130, stopped.stderr
    lines = [line for line in stopped.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "SIGINT: stopped after update 1 of warmstart-interrupt" in lines[0]
    assert "continue with: python -m verifiable_grpo warmstart" in lines[0]
    assert list((tmp_path / "crash" / "warmstart-interrupt").glob("state-000001.*"))
    assert not list(tmp_path.rglob(".tmp-*"))
    finished = run_cli(command)
    assert finished.returncode == 0, finished.stderr[-2000:]
    record = read_json(tmp_path / "learning" / "warmstart-interrupt.json")
    assert record["updates"] == 2 and not (tmp_path / "crash" / "warmstart-interrupt").exists()
