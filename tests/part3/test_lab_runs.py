"""Labs 1, 2 and 6 end to end on a micro Llama with SmolLM2's real tokenizer: every step of
the real runs (data, masking, row re-draw, updates, evaluation, merge, suite, records) in
seconds. The 135M model itself is checked in test_lab_model.py."""

import os
import subprocess
import sys

import pytest
import torch

from verifiable_grpo import cli
from verifiable_grpo.core import files, runlock
from verifiable_grpo.core.settings_schema import from_flags
from verifiable_grpo.part3.lora_lab import lora as lora_lab
from verifiable_grpo.part3.lora_lab.settings import LoRASettings
from verifiable_grpo.part3.sft_lab import masked_sft
from verifiable_grpo.part3.sft_lab.settings import SFTSettings
from verifiable_grpo.part3.smollm2 import records
from verifiable_grpo.part3.suite_lab import greedy


@pytest.fixture(scope="module")
def micro_cache(tmp_path_factory, smollm2_tokenizer):
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = smollm2_tokenizer
    folder = tmp_path_factory.mktemp("micro-cache")
    torch.manual_seed(0)
    model = LlamaForCausalLM(
        LlamaConfig(
            vocab_size=49152,
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            num_key_value_heads=1,
            tie_word_embeddings=True,
            bos_token_id=1,
            eos_token_id=2,
            pad_token_id=2,
        )
    )
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    files.save_json(folder / "source.json", {"gguf_file": "micro (test)", "wheel": None})
    return folder


def test_lab2_runs_merges_and_records(micro_cache, tmp_path):
    out = tmp_path / "lora"
    result = lora_lab.run(out, cache=micro_cache, steps=3, log=lambda _: None)
    assert result["initial_logit_difference"] == 0.0
    assert result["wrapped"] == 7 and len(result["history"]) == 3
    assert result["merged_parameters"] == result["base_parameters"]
    assert result["merge_max_logit_difference"] < lora_lab.MERGE_TOLERANCE
    assert result["identical_decoded_outputs"] and result["identical_new_tokens"]
    assert result["train_rows"] == 400 and result["held_out_rows"] == 50
    assert result["chat_rows"]["after"]["cosine"] != result["chat_rows"]["before"]["cosine"]
    assert not (out / "crash").exists() or not any((out / "crash").iterdir())
    assert lora_lab.run(out, cache=micro_cache, log=lambda _: None) == result  # not redone


def test_lab2_with_a_chat_row_delta_folds_it_before_the_merge(micro_cache, tmp_path):
    result = lora_lab.run(
        tmp_path / "delta",
        cache=micro_cache,
        steps=2,
        init_rows=False,
        row_delta=True,
        log=lambda _: None,
    )
    assert result["settings"]["row_delta"] is True and result["initial_logit_difference"] == 0.0
    rows = result["chat_rows"]
    assert len(rows["delta_norms"]) == 2 and min(rows["delta_norms"]) > 0  # both rows moved
    assert rows["folded"]["cosine"] != rows["after"]["cosine"]  # W + D written
    assert result["merged_parameters"] == result["base_parameters"]  # nothing left over
    assert result["identical_decoded_outputs"]


def test_lab1_then_the_suite(micro_cache, tmp_path, monkeypatch):
    monkeypatch.setattr(greedy, "MAX_NEW_TOKENS", 8)  # a micro model: short replies do
    sft = masked_sft.run(tmp_path / "sft", cache=micro_cache, log=lambda _: None)
    assert sft["steps"] == 15 and len(sft["history"]) == 15 and sft["warmup"] == 1
    assert sft["train_rows"] == 240
    assert [t["token"] for t in sft["token_table"] if t["target"]][-1] == "<|im_end|>"
    assert set(sft["probe"]) == {"addition", "limit"}
    assert sft["after"]["loss"] < sft["before"]["loss"]  # 15 updates on 240 rows do learn
    policy = tmp_path / "sft" / masked_sft.POLICY
    suite = greedy.run(tmp_path / "suite", cache=micro_cache, policy=policy, log=lambda _: None)
    for label, result in suite["results"].items():
        assert len(result["passed"]) == 40
        refuse = [
            t for t, i in zip(result["transcripts"], suite["items"]) if i["category"] == "refuse"
        ]
        assert refuse == [None] * 5, label  # never stored
    assert len(suite["categories"]) == 2 * 6
    p = suite["paired"]
    assert p["only_first"] + p["only_second"] <= 40 and 0.0 <= p["mcnemar_p"] <= 1.0


def test_lab1_with_letters_then_the_failure_families(micro_cache, tmp_path, monkeypatch):
    from verifiable_grpo.part3.suite_lab import failure_families, families_run

    monkeypatch.setattr(greedy, "MAX_NEW_TOKENS", 4)  # a micro model: short replies do
    sft = masked_sft.run(
        tmp_path / "sft", cache=micro_cache, log=lambda _: None, letters=True, steps=2
    )
    assert sft["settings"]["letters"] is True
    assert sft["train_rows"] == 288 and sft["held_out_rows"] == 60 and len(sft["history"]) == 2
    assert list(sft["after"]["families"])[-1] == "letters"
    assert masked_sft.budget({"quick": True, "letters": True}, 288) == 18  # one epoch
    assert masked_sft.budget({"quick": True}, 240) == 15
    # the micro model itself stands in for the fine-tuned one
    run = families_run.run(
        tmp_path / "families", cache=micro_cache, policy=micro_cache, log=lambda _: None
    )
    assert [i["prompt"] for i in run["items"]] == [i["prompt"] for i in failure_families.ITEMS]
    for result in run["results"].values():
        assert result["passed"] == [
            failure_families.check(i, t)
            for i, t in zip(failure_families.ITEMS, result["transcripts"])
        ]
    assert [r["category"] for r in run["families"][::2]] == [*failure_families.FAMILIES, "overall"]


def _lab_lora(cache, out, fault=None):
    env = {**os.environ, "TQDM_DISABLE": "1"}
    if fault:
        env["VERIFIABLE_GRPO_FAULT"] = fault
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "verifiable_grpo",
            "lab",
            "lora",
            "--cache",
            str(cache),
            "--out",
            str(out),
            "--threads",
            "1",
        ],
        env=env,
        capture_output=True,
        text=True,
    )


def test_a_killed_model_lab_continues_to_the_uninterrupted_result(micro_cache, tmp_path):
    """kill -9 while the second crash checkpoint (update 12 of 24) is half written: the rerun
    continues from update 6 and ends on the uninterrupted run's losses and evaluations."""
    whole = _lab_lora(micro_cache, tmp_path / "whole")
    assert whole.returncode == 0, whole.stderr
    killed = tmp_path / "killed"
    assert _lab_lora(micro_cache, killed, "crash-between-state-and-note#2").returncode == -9
    assert records.finished(killed, "lora") is None
    again = _lab_lora(micro_cache, killed)
    assert again.returncode == 0, again.stderr
    assert "continuing lab-lora after update 6 (crash checkpoint)" in again.stdout
    first, second = (records.finished(p, "lora") for p in (tmp_path / "whole", killed))
    for key in ("history", "adapted", "merged", "merge_max_logit_difference", "chat_rows"):
        assert second[key] == first[key], key


def test_a_second_model_lab_on_a_held_folder_is_refused(micro_cache, tmp_path, capsys):
    with runlock.locked(tmp_path, "the first lab lora"):
        assert cli.main(["lab", "lora", "--cache", str(micro_cache), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "in use by another process" in err
    assert records.finished(tmp_path, "lora") is None


def test_lab_options_override_only_what_is_given(monkeypatch):
    """An option not given leaves the settings (and so the recorded hashes) as they were."""
    seen = []
    monkeypatch.setattr(lora_lab, "run", lambda out, **kw: seen.append(kw))
    monkeypatch.setattr(masked_sft, "run", lambda out, **kw: seen.append(kw))
    lora_lab.run_lab("x", LoRASettings())
    masked_sft.run_lab("x", SFTSettings())
    lora_lab.run_lab("x", LoRASettings(rank=2, alpha=4, targets=("o_proj", "q_proj")))
    masked_sft.run_lab("x", SFTSettings(no_row_init=True, steps=20))
    assert seen[0] == {"cache": None, "init_rows": True}
    assert "steps" not in seen[1]
    assert seen[2]["rank"] == 2 and seen[2]["alpha"] == 4.0 and type(seen[2]["alpha"]) is float
    assert seen[2]["targets"] == ["q_proj", "o_proj"]
    assert seen[3]["steps"] == 20 and seen[3]["init_rows"] is False
    # the default runs recorded before these options existed have the defaults' settings
    assert records.load_recorded("lora")["settings"] == lora_lab.DEFAULTS
    assert records.load_recorded("sft")["settings"] == masked_sft.DEFAULTS


def test_lab_option_parsing_and_refusals(tmp_path, capsys):
    parsed = cli.build_parser().parse_args(
        ["lab", "lora", "--targets", "o_proj, q_proj", "--rank", "2", "--alpha", "4"]
    )
    settings = from_flags(LoRASettings, parsed)
    assert settings == LoRASettings(rank=2, alpha=4.0, targets=("o_proj", "q_proj"))
    for bad, said in (
        (["--targets", "q_proj,attn"], "--targets: must be a list whose items are all one of"),
        (["--rank", "0"], "--rank: must be >= 1, got '0'"),
        (["--rank", "577"], "--rank: must be <= 576"),
        (["--alpha", "-1"], "--alpha: must be > 0, got '-1'"),
        (["--alpha", "nan"], "--alpha: must be a finite number, got 'nan'"),
        (["--steps", "two"], "--steps: must be an integer, got 'two'"),
    ):
        lab = "sft" if bad[0] == "--steps" else "lora"
        with pytest.raises(SystemExit) as stop:
            cli.main(["lab", lab, "--out", str(tmp_path / "o"), *bad])
        assert stop.value.code == 2, bad
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and said in err, (bad, err)
        assert not (tmp_path / "o").exists()  # refused before the run folder or the model
    assert cli.main(["lab", "suite", "--rank", "3"]) == 2  # an option of another lab
    assert capsys.readouterr().err == "error: lab suite does not take --rank\n"


def test_lab2_on_attention_only_at_rank_2(micro_cache, tmp_path):
    attention = ["q_proj", "k_proj", "v_proj", "o_proj"]
    result = lora_lab.run(
        tmp_path / "qkvo",
        cache=micro_cache,
        steps=2,
        rank=2,
        alpha=4.0,
        targets=attention,
        log=lambda _: None,
    )
    assert result["wrapped"] == 4 and result["settings"]["targets"] == attention
    # rank x (in + out) per projection of the micro model: q, o 16->16; k, v 16->8 (one KV head)
    assert result["trainable"] == 2 * ((16 + 16) * 2 + (16 + 8) * 2)
    assert result["merge_max_logit_difference"] < lora_lab.MERGE_TOLERANCE


def test_lab1_with_its_own_number_of_updates(micro_cache, tmp_path, monkeypatch):
    split = masked_sft.chat_data.split
    monkeypatch.setattr(
        masked_sft.chat_data,
        "split",  # 5 held-out rows: seconds saved
        lambda quick: (split(quick)[0], split(quick)[1][:5]),
    )
    items = masked_sft.probe.probe_items
    monkeypatch.setattr(masked_sft.probe, "probe_items", lambda family: items(family, n=5))
    sft = masked_sft.run(
        tmp_path / "sft", cache=micro_cache, steps=3, init_rows=False, log=lambda _: None
    )
    assert sft["steps"] == 3 and len(sft["history"]) == 3 and sft["settings"]["steps"] == 3
    assert sft["chat_rows"]["after"] == sft["chat_rows"]["before"]  # rows kept as loaded


def test_the_lora_settings_name_the_blocks_projections_as_training_does():
    from verifiable_grpo.part3.lora_lab.settings import PROJECTIONS
    from verifiable_grpo.training.lora import BLOCK_PROJECTIONS

    assert PROJECTIONS == BLOCK_PROJECTIONS
