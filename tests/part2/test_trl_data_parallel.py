"""Data parallel where it is real: the process counts a run can use, and one run under
`accelerate launch` with two CPU processes (gloo) against the same run in one process.

With the same rollouts (tests/part2/trl_worker.py --fixed-rollouts: sampling RNGs are per
process), two ranks average their gradients where one process accumulates two
micro-batches of the same rows: equal up to the order of the additions. Stated tolerances
after one step (measured on the build machine in brackets):
- loss: 1e-6 absolute (equal; on policy the grpo loss is 0 up to rounding, about 7e-9);
- gradient norm and the gradient itself (Adam's first moment, 0.1 x the clipped gradient):
  1e-5 of the largest entry (5e-7; the norm equal);
- adapter: 1e-6 absolute on all but 0.1% of the entries, 2 x lr on every one (7.3e-7 on
  every one). Adam's first step moves an entry by lr g / (|g| + 1e-8): where the gradient
  is not much bigger than its rounding (about 1e-8 here), Adam's normalisation amplifies
  the rounding up to a sign.
The held-out evaluation deals its batches out over the ranks and gathers them once: every
item's outcome and completion hash equal the one-process run's."""

import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml
from safetensors.torch import load_file

from verifiable_grpo.core import files
from verifiable_grpo.core.config import ConfigError, resolve
from verifiable_grpo.part2 import lock as lock_lib
from verifiable_grpo.part2.trl import backend as trl_backend
from verifiable_grpo.part2.trl import run_config

LOCK = "configs/part2/lock.json"
CARD = "configs/part2/card-qwen3-8b-gsm8k.yaml"
TWO = "configs/accelerate/cpu-two-processes.yaml"
WORKER = Path(__file__).with_name("trl_worker.py")
LOSS_TOLERANCE = ADAPTER_TOLERANCE = 1e-6
GRADIENT_TOLERANCE = 1e-5  # relative to the largest entry
LEARNING_RATE = 1e-4  # trl-smoke.yaml
FOLDER = "runs/on_policy/grpo-seed-11"


def test_the_cards_batch_splits_over_1_2_or_4_processes():
    card = run_config.load_run_config(CARD)
    assert run_config.process_counts(card) == [1, 2, 4]
    for n in (1, 2, 4):
        layout = run_config.step_layout(card, n)
        assert n * layout["per_device_train_batch_size"] * layout[
            "gradient_accumulation_steps"
        ] == (16)
    with pytest.raises(ConfigError, match="over 1, 2, 4 process\\(es\\), not 8"):
        run_config.step_layout(card, 8)
    odd = {**card, "budget": {**card["budget"], "micro_batch_rows": 3}}
    with pytest.raises(ConfigError, match="micro_batch_rows 3 does not divide the 8 rows"):
        run_config.step_layout(odd, 2)
    assert run_config.read_process_count(TWO) == 2


def _worker():
    import importlib.util

    spec = importlib.util.spec_from_file_location("trl_worker", WORKER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("dp")
    config = yaml.safe_load(resolve("configs/part2/trl-smoke.yaml").read_text())
    config["heldout"]["batch_size"] = 2  # two batches: one per rank
    path = folder / "smoke-two-batches.yaml"
    path.write_text(yaml.safe_dump(config))
    two = folder / "two"
    line = [sys.executable, "-m", "accelerate.commands.launch", "--config_file", str(resolve(TWO))]
    line += [str(WORKER), "--fixed-rollouts", "family", "run", "--backend", "trl"]
    line += ["--config", str(path), "--out", str(two), "--arm", "grpo", "--seed", "11"]
    done = subprocess.run(line, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    one = folder / "one"
    worker = _worker()
    before = torch.get_num_threads()
    torch.set_num_threads(1)  # as each rank (torchrun's default)
    try:
        with pytest.MonkeyPatch.context() as patch:
            from trl import GRPOTrainer

            from verifiable_grpo.part2 import gsm8k

            patch.setattr(gsm8k, "reward", worker.hash_reward)
            patch.setattr(GRPOTrainer, "_generate_single_turn", worker.fixed_single_turn)
            run = lock_lib.LockedRun("grpo", 11, "on_policy")
            trl_backend.run_arm_trl(LOCK, str(path), one, run)
    finally:
        torch.set_num_threads(before)
    return {"one": one, "two": two}


def _manifest(out):
    return files.read_json(out / FOLDER / "run_manifest.json")


def test_two_processes_make_the_one_process_step(runs):
    one, two = _manifest(runs["one"]), _manifest(runs["two"])
    first = [m["telemetry"][0] for m in (one, two)]
    assert first[0]["completion_sha256"] == first[1]["completion_sha256"]  # same rollouts
    assert first[0]["rewards"] == first[1]["rewards"]  # both ranks' groups recorded
    assert len(first[1]["rewards"]) == 2 and len(set(sum(first[1]["rewards"], []))) == 2
    assert abs(first[0]["loss"][0] - first[1]["loss"][0]) <= LOSS_TOLERANCE
    norms = [f["grad_norm"][0] for f in first]
    assert abs(norms[0] - norms[1]) <= GRADIENT_TOLERANCE * norms[0] and norms[0] > 0
    saved = [out / FOLDER / "checkpoints/checkpoint-1" for out in (runs["one"], runs["two"])]
    moments = []
    for folder in saved:
        state = torch.load(folder / "optimizer.pt", weights_only=False)["state"]
        moments.append(torch.cat([state[i]["exp_avg"].flatten() for i in sorted(state)]))
    scale = moments[0].abs().max().item()
    assert (moments[0] - moments[1]).abs().max().item() <= GRADIENT_TOLERANCE * scale
    a, b = (load_file(folder / "adapter_model.safetensors") for folder in saved)
    assert a.keys() == b.keys()
    gaps = torch.cat([(a[k] - b[k]).abs().flatten() for k in a])
    assert (gaps > ADAPTER_TOLERANCE).float().mean().item() <= 1e-3
    assert gaps.max().item() <= 2 * LEARNING_RATE
    moved = [a[k].abs().max().item() for k in a if "lora_B" in k]
    assert min(moved) > LEARNING_RATE / 2  # the step moved every B matrix (it starts at 0)


def test_evaluation_over_two_processes_equals_one_item_for_item(runs):
    one, two = _manifest(runs["one"]), _manifest(runs["two"])
    assert [t["document_id"] for t in two["heldout"]["trace"]] == [
        f"test-{i:05d}" for i in range(4)
    ]
    assert two["heldout"]["trace"] == one["heldout"]["trace"]
    assert two["heldout"]["greedy"] == one["heldout"]["greedy"]
