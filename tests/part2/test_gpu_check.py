"""scripts/gpu_check.py, the one command for a lent GPU: on a CPU its --dry-run builds and
checks the plan (the run configurations pass every refusal of `family run`, the Qwen3
stand-in has Qwen3-8B's shape) and writes nothing; without a GPU the real run is refused
in one line; the cost chapter's reader turns a record into its table rows."""

import importlib.util

import torch

from verifiable_grpo.core.config import resolve
from verifiable_grpo.part2 import card_cost


def _script():
    spec = importlib.util.spec_from_file_location("gpu_check", resolve("scripts/gpu_check.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_dry_run_checks_the_plan_and_writes_nothing(tmp_path, capsys):
    script = _script()
    out = tmp_path / "records"
    assert script.main(["--dry-run", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "card_standin (Qwen3-8B shape, 2 layers" in printed and "nothing written" in printed
    assert not out.exists()
    if not torch.cuda.is_available():
        assert script.main(["--out", str(out)]) == 2
        assert "no CUDA GPU here" in capsys.readouterr().err
        assert not out.exists()


def test_the_standin_has_qwen3_8b_layers():
    script = _script()
    config = script.qwen3_standin_config(2)
    shape = card_cost.QWEN3_8B
    assert (config.hidden_size, config.intermediate_size, config.vocab_size) == (
        shape.hidden,
        shape.ffn,
        shape.vocab,
    )
    assert (config.num_attention_heads, config.num_key_value_heads, config.head_dim) == (
        shape.heads,
        shape.kv_heads,
        shape.head_dim,
    )
    assert config.num_hidden_layers == 2 and not config.tie_word_embeddings


def test_the_cost_chapter_reads_the_records(tmp_path):
    assert card_cost.gpu_checks(str(tmp_path / "none")) == []
    part = {"seconds_per_step": [3.0, 1.0, 2.0], "peak_memory_bytes": 4e9}
    record = {
        "device": "a GPU",
        "trl_smoke": part,
        "card_standin": part,
        "part1_standin": {"sft_update_8x96_seconds": 0.5, "peak_memory_bytes": 2e9},
    }
    from verifiable_grpo.core import files

    files.save_json(tmp_path / "a-gpu.json", record)
    rows = card_cost.gpu_check_rows(card_cost.gpu_checks(str(tmp_path)))
    assert rows[0] == ["a GPU", "trl_smoke", 2.0, 4.0]
    assert rows[2] == ["a GPU", "part1_standin sft 8x96", 0.5, 2.0]
