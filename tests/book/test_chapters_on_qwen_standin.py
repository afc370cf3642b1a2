"""Chapters 4-7 as they run on a GPU, on a CPU: their live cells take the GPU profile
(qwen-live: Qwen2.5-0.5B's path, a few iterations) with a qwen-shaped stand-in in place of
the hub's weights: Qwen2 with the real vocabulary size (151,936) and tied embeddings, a
tiny hidden size so it runs in seconds, and the tiny base's tokenizer (its ids are a subset
of the vocabulary). Every cell must run: nothing may assume the tiny base's vocabulary (the
error cell of chapter 6 rescored with the tiny warm start, which cannot work there), and the
run folders the chapters make must be gone when the kernel ends."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import jupytext
import pytest
import yaml

from verifiable_grpo.book import notebook
from verifiable_grpo.core.config import profile_settings, repo_root

CHAPTERS = ("04_exact_kl", "05_supervised_branches", "06_grpo", "07_resume")
VOCABULARY = 151_936


@pytest.fixture(scope="module")
def standin_profile(tmp_path_factory):
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    folder = tmp_path_factory.mktemp("qwen-standin")
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(
        Qwen2Config(
            vocab_size=VOCABULARY,
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=2,
            num_key_value_heads=1,
            tie_word_embeddings=True,
            max_position_embeddings=512,
            attn_implementation="eager",
        )
    )
    model.save_pretrained(folder)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(repo_root() / "data" / "tiny-base" / name, folder / name)
    profile = profile_settings(notebook.LIVE_GPU_PROFILE)
    profile["device"] = "cpu"
    profile["model"].update(path=str(folder), expected_unique_parameters=None, eos_token_id=None)
    profile["threads"] = {"warmstart": 1, "stages": 1}
    path = folder / "qwen-live-standin.yaml"
    path.write_text(yaml.safe_dump(profile, sort_keys=False))
    return path


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_the_live_cells_run_on_a_qwen_shaped_standin(chapter, standin_profile, tmp_path):
    source = repo_root() / "notebooks" / "part1" / f"{chapter}.py"
    executed = tmp_path / f"{chapter}.ipynb"
    jupytext.write(jupytext.read(source), executed)
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    env = dict(
        os.environ,
        TMPDIR=str(temporary),
        OMP_NUM_THREADS="1",
        PYTHONPATH=str(repo_root() / "src"),
        **{notebook.LIVE_PROFILE_ENV: str(standin_profile)},
    )
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "nbconvert",
            "--to",
            "notebook",
            "--execute",
            "--inplace",
            "--ExecutePreprocessor.timeout=900",
            "--ExecutePreprocessor.kernel_name=python3",
            str(executed),
        ],
        cwd=source.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    outputs = "".join(
        o.get("text", "")
        for c in jupytext.read(executed).cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
    )
    assert "qwen-live" in outputs  # the live cells took the GPU profile
    leftovers = [p.name for p in temporary.iterdir() if p.name.startswith("verifiable-grpo-")]
    assert leftovers == [], f"{chapter} left {leftovers} in the temporary folder"


def test_the_gpu_profile_has_qwen_s_model_and_a_few_iterations():
    from verifiable_grpo.core.config import load_config

    live, qwen = load_config(notebook.LIVE_GPU_PROFILE), load_config("qwen")
    for key in ("source", "name", "revision", "expected_unique_parameters", "eos_token_id"):
        assert live["model"][key] == qwen["model"][key]
    assert live["sampling"] == qwen["sampling"] and live["tokens"] == qwen["tokens"]
    assert live["grpo"]["learning_rate"] == qwen["grpo"]["learning_rate"]
    assert live["grpo"]["iterations"] <= 4 and live["warmstart"]["examples"] <= 16
