"""The GPU environment and the README's node recipes, checked on a CPU: the pinned GPU
requirements, setup.sh's --gpu switch (syntax and a dry run), the ZeRO-2 config, report_to
(off by default), and every `family study --backend trl` line of the README plus the Slurm
script run as --dry-run (nothing is written, no GPU is needed)."""

import os
import re
import shlex
import subprocess
import sys

import pytest
import yaml

from verifiable_grpo import cli
from verifiable_grpo.core.config import ConfigError, resolve
from verifiable_grpo.part2.trl import backend as trl_backend
from verifiable_grpo.part2.trl import run_config
from verifiable_grpo.training import objectives, trl_parity

SLURM = "scripts/slurm/family-study.sbatch"
CARD = "configs/part2/card-qwen3-8b-gsm8k.yaml"


def _pins(name):
    lines = [x.split("#")[0].strip() for x in resolve(name).read_text().splitlines()]
    return [x for x in lines if x and not x.startswith("-r")]


def test_gpu_requirements_are_pinned():
    gpu = dict(x.split("==") for x in _pins("requirements-gpu.txt"))
    assert {"deepspeed", "einops", "tensorboard"} <= set(gpu)
    assert "-r requirements.txt" in resolve("requirements-gpu.txt").read_text()
    vllm = dict(x.split("==") for x in _pins("requirements-vllm.txt"))
    assert set(vllm) == {"vllm", "transformers"}
    assert all(re.fullmatch(r"[\w.\-]+==[\w.]+", x) for x in _pins("requirements-gpu.txt"))


def test_setup_switch_has_valid_syntax_and_a_dry_run(tmp_path):
    for script in ("scripts/setup.sh", SLURM):
        assert subprocess.run(["bash", "-n", str(resolve(script))]).returncode == 0
    venv = tmp_path / "venv"
    run = subprocess.run(
        ["bash", str(resolve("scripts/setup.sh")), "--gpu", "--vllm", "--dry-run", str(venv)],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    assert "-r requirements-gpu.txt" in run.stdout and "-r requirements-vllm.txt" in run.stdout
    assert "torch.version.cuda" in run.stdout  # the CUDA check after installing
    assert not venv.exists()
    bad = subprocess.run(["bash", str(resolve("scripts/setup.sh")), "--gpus"], capture_output=True)
    assert bad.returncode == 2


def test_zero2_beside_zero3():
    two = yaml.safe_load(resolve("configs/accelerate/multi-gpu-zero2.yaml").read_text())
    three = yaml.safe_load(resolve("configs/accelerate/multi-gpu-zero3.yaml").read_text())
    assert (two["deepspeed_config"]["zero_stage"], three["deepspeed_config"]["zero_stage"]) == (
        2,
        3,
    )
    card = run_config.load_run_config(CARD)
    count = run_config.read_process_count("configs/accelerate/multi-gpu-zero2.yaml")
    assert count in run_config.process_counts(card)


def test_report_to_is_off_unless_asked(tmp_path):
    config = run_config.load_run_config("configs/part2/trl-smoke.yaml")
    assert "report_to" not in config
    fields = trl_parity.trl_arm(objectives.get_objective("grpo")).config
    args = trl_backend.grpo_config(
        trl_backend.TrainerRequest(config, fields, "grpo", 11, 1, tmp_path),
        run_config.step_layout(config, 1),
    )
    assert args.report_to == []  # TRL's "none"
    raw = yaml.safe_load(resolve(CARD).read_text())
    for value, ok in (("tensorboard", True), ("mlflow", False)):
        path = tmp_path / f"{value}.yaml"
        path.write_text(yaml.safe_dump({**raw, "report_to": value}))
        if ok:
            assert run_config.load_run_config(path)["report_to"] == value
        else:
            with pytest.raises(ConfigError, match="report_to: must be one of"):
                run_config.load_run_config(path)


def _readme_study_lines():
    text = resolve("README.md").read_text()
    return [
        line.split("#")[0].strip()
        for line in text.splitlines()
        if line.startswith("python -m verifiable_grpo family study --backend trl")
    ]


def test_readme_node_recipes_dry_run_on_a_cpu(tmp_path, capsys):
    lines = _readme_study_lines()
    assert len(lines) >= 2 and any("--devices 0,1,2,3,4,5,6,7" in x for x in lines)
    for line in lines:
        argv = shlex.split(line)[3:]  # after `python -m verifiable_grpo`
        out = argv.index("--out") + 1
        argv[out] = str(tmp_path / argv[out])
        assert cli.main([*argv, "--dry-run"]) == 0, line
        printed = capsys.readouterr().out
        assert "dry run:" in printed and "slot 0" in printed
    assert not any(tmp_path.iterdir())


def test_slurm_script_dry_runs_each_nodes_share(tmp_path, capsys):
    """Node 1 of 2 through the script itself; node 0's share in this process."""
    out = tmp_path / "study"
    env = {**os.environ, "PYTHON": sys.executable, "OUT": str(out), "DEVICES": "0,1,2,3,4,5,6,7"}
    run = subprocess.run(
        ["bash", str(resolve(SLURM)), "--node", "--dry-run"],
        env={**env, "SLURM_NODEID": "1", "SLURM_NNODES": "2"},
        capture_output=True,
        text=True,
        cwd=str(tmp_path),
    )
    assert run.returncode == 0, run.stderr[-2000:]
    argv = ["family", "study", "--backend", "trl", "--config", CARD, "--out", str(out)]
    argv += ["--devices", env["DEVICES"], "--shard", "0/2", "--dry-run"]
    assert cli.main(argv) == 0
    shares = [run.stdout, capsys.readouterr().out]
    labels = [x.split(" slot ")[0].strip() for s in shares for x in s.splitlines()[1:]]
    assert len(labels) == len(set(labels)) == 1 + 5 * 8  # the base and 40 runs, once each
    assert not out.exists()
