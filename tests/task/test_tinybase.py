"""The tiny base: its tokenizer (Qwen-style, identical under both loaders) and its model."""

from __future__ import annotations

import json
import random

import pytest
from transformers import AutoTokenizer, PreTrainedTokenizerFast

from verifiable_grpo.core.config import repo_root, sha256_file
from verifiable_grpo.models import tiny_tokenizer
from verifiable_grpo.task import statements

BASE = repo_root() / "data" / "tiny-base"


@pytest.fixture(scope="module")
def auto_tokenizer():
    return AutoTokenizer.from_pretrained(str(BASE))


@pytest.fixture(scope="module")
def fast_tokenizer():
    return PreTrainedTokenizerFast(tokenizer_file=str(BASE / "tokenizer.json"))


def probe_strings() -> list[str]:
    """A few hundred strings: numbers, statements, JSON, whitespace, unicode."""
    rng = random.Random(0)
    probes = [str(n) for n in (0, 7, 10, 42, 99, 100, 101, 250, 300, 1000, 123456789, -5)]
    probes += ["3.14", "1e10", "0007", "x1y22z333", "Initial stock 12.", "  12  ", "\n\n7\n"]
    for _ in range(120):
        problem = {
            "initial": rng.randint(0, 100),
            "deliveries": [rng.randint(0, 100), rng.randint(0, 100)],
            "withdrawals": [rng.randint(0, 100), rng.randint(0, 100)],
        }
        text = statements.render_statement(problem, rng.randrange(len(statements.TEMPLATES)))
        key = rng.choice(tiny_tokenizer.PRETRAIN_KEYS + ("final_stock",))
        probes.append(statements.user_message(text, statements.json_instruction(key)))
        probes.append(statements.canonical_response(rng.randint(0, 300), key))
    probes += [
        '{"final_stock": 12, "x": true}',
        '```json\n{"final_stock": 1}\n```',
        '{"final_stock":1.5}',
        '{"a": [1, 2, {"b": null}]}',
        "[]",
        "{}",
        '"\\u00e9"',
    ]
    probes += [
        "café",
        "cafe\u0301",
        "naïve Ünïcödé",
        "日本語のテキスト 42",
        "emoji 🙂👍 7",
        "Ελληνικά",
        "русский текст 9",
        "tab\tseparated\tvalues",
        "CRLF\r\nline",
        "don't it's we're I'm you'll he'd THEY'VE",
        "mixed12ab34",
        "  leading",
        "trailing  ",
    ]
    probes += ["<|im_start|>user\nhi<|im_end|>\n", "text<|im_end|>", "<|endoftext|>"]
    probes += [
        "".join(chr(rng.randint(32, 0x2FFF)) for _ in range(rng.randint(1, 30))) for _ in range(40)
    ]
    return probes


def test_both_loaders_tokenise_identically(auto_tokenizer, fast_tokenizer):
    from tokenizers import Tokenizer

    raw = Tokenizer.from_file(str(BASE / "tokenizer.json"))
    probes = probe_strings()
    assert len(probes) > 250
    mismatches = [
        p
        for p in probes
        if not (
            auto_tokenizer(p)["input_ids"] == fast_tokenizer(p)["input_ids"] == raw.encode(p).ids
        )
    ]
    assert mismatches == []
    for p in probes:  # decoding round-trips (after NFC)
        ids = auto_tokenizer(p)["input_ids"]
        assert auto_tokenizer.decode(ids) == fast_tokenizer.decode(ids)


def test_digits_are_split_one_by_one(auto_tokenizer):
    tokens = auto_tokenizer.tokenize("Initial stock 1234.")
    assert tokens[-5:] == ["1", "2", "3", "4", "."]
    assert auto_tokenizer.tokenize('{"final_stock": 300}')[-4:] == ["3", "0", "0", "}"]


def test_special_tokens_and_ids(auto_tokenizer, fast_tokenizer):
    for tok in (auto_tokenizer, fast_tokenizer):
        ids = tok.convert_tokens_to_ids(list(tiny_tokenizer.SPECIAL_TOKENS))
        assert ids == [0, 1, 2]
        assert tok("<|im_end|>")["input_ids"] == [2]  # never split into pieces
    assert auto_tokenizer.eos_token == "<|im_end|>" and auto_tokenizer.eos_token_id == 2
    assert auto_tokenizer.pad_token == "<|endoftext|>" and auto_tokenizer.pad_token_id == 0
    assert auto_tokenizer.bos_token is None
    assert len(auto_tokenizer) == len(fast_tokenizer) <= tiny_tokenizer.VOCAB_SIZE


def test_chat_template_renders_chatml_without_system(auto_tokenizer):
    messages = [{"role": "user", "content": "Opening stock 3.\nReply with the number only."}]
    text = auto_tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert text == (
        "<|im_start|>user\nOpening stock 3.\nReply with the number only."
        "<|im_end|>\n<|im_start|>assistant\n"
    )
    closed = auto_tokenizer.apply_chat_template(
        messages + [{"role": "assistant", "content": '{"final_stock": 3}'}], tokenize=False
    )
    assert closed.endswith('<|im_start|>assistant\n{"final_stock": 3}<|im_end|>\n')
    ids = auto_tokenizer.apply_chat_template(messages, tokenize=True, add_generation_prompt=True)
    ids = ids["input_ids"] if hasattr(ids, "keys") else ids
    assert ids == auto_tokenizer(text)["input_ids"]
    assert ids[0] == 1 and ids.count(2) == 1


def test_task_words_are_single_tokens(auto_tokenizer):
    """Every word of every template is one token where it stands (after a space, or first)."""
    for template in statements.TEMPLATES:
        words = [w.strip(".:,") for w in template.split(" ") if "{" not in w]
        for i, word in enumerate(words):
            piece = word if template.startswith(word) and i == 0 else " " + word
            assert len(auto_tokenizer.tokenize(piece)) == 1, piece


def test_committed_tokenizer_is_reproduced_by_the_build_code(tmp_path):
    paths = tiny_tokenizer.save_tokenizer(tiny_tokenizer.train_tokenizer(), tmp_path)
    for path in paths:
        assert sha256_file(path) == sha256_file(BASE / path.name), path.name
    config = json.loads((BASE / "tokenizer_config.json").read_text())
    assert config["tokenizer_class"] == "Qwen2Tokenizer"


# ---------------------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def build_record():
    return json.loads((BASE / "BUILD.json").read_text())


def test_committed_files_match_build_record(build_record):
    from verifiable_grpo.models.tinybase import SHIPPED_FILES

    assert set(build_record["files_sha256"]) == set(SHIPPED_FILES)
    for name, digest in build_record["files_sha256"].items():
        assert sha256_file(BASE / name) == digest, name
    assert sum((BASE / n).stat().st_size for n in SHIPPED_FILES) < 20 * 1024 * 1024


def test_architecture_and_parameter_count(build_record):
    from transformers import AutoModelForCausalLM, Qwen2ForCausalLM

    from verifiable_grpo.models.tinybase import unique_parameters

    model = AutoModelForCausalLM.from_pretrained(str(BASE), attn_implementation="eager")
    assert type(model) is Qwen2ForCausalLM
    assert model.config.tie_word_embeddings
    assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()
    assert next(model.parameters()).dtype.is_floating_point
    assert all(p.dtype.itemsize == 4 for p in model.parameters())  # FP32
    assert unique_parameters(model) == build_record["unique_parameters"]
    assert model.config.vocab_size == build_record["vocab_size"] == 429
    assert model.config.eos_token_id == 2 and model.config.pad_token_id == 0


def test_build_is_deterministic(tmp_path):
    """Two builds of a few steps produce the same bytes (weights and BUILD's digests)."""
    from verifiable_grpo.models.tinybase import build_base

    records = [build_base(tmp_path / name, steps=2, measure=False) for name in ("a", "b")]
    assert records[0]["files_sha256"] == records[1]["files_sha256"]
    assert records[0]["loss_every_100_steps"] == records[1]["loss_every_100_steps"]
    assert records[0]["files_sha256"]["tokenizer.json"] == sha256_file(BASE / "tokenizer.json")


def test_pretraining_never_sees_the_task_key_or_dataset_problems():
    from verifiable_grpo.core.config import load_config
    from verifiable_grpo.models import tinybase
    from verifiable_grpo.task import verifier

    excluded = tinybase.dataset_problems(load_config("tiny")["data"]["seed"])
    assert len(excluded) == 1400
    rng = random.Random(0)
    for _ in range(2000):
        problem = tinybase.sample_problem(rng, 0.5, excluded)
        assert verifier.normalized_problem(problem) not in excluded
        user, answer = tinybase.turn(problem, rng, 0.8)
        assert "final_stock" not in user and "final_stock" not in answer
        value = json.loads(answer)
        value = value if isinstance(value, int) else next(iter(value.values()))
        assert value == verifier.compute_final_stock(problem)
    # a problem in the excluded set is never returned, even when it is the first draw
    first = tinybase.sample_problem(random.Random(5), 0.5, set())
    again = tinybase.sample_problem(random.Random(5), 0.5, {verifier.normalized_problem(first)})
    assert again != first


def test_labels_supervise_only_the_answer_and_eos(fast_tokenizer):
    from verifiable_grpo.models import tinybase

    ids, mask, labels = tinybase.encode_batch(
        fast_tokenizer, [("Opening stock 3.", "42"), ("x", '{"stock": 7}')]
    )
    supervised = [[t for t in row if t != -100] for row in labels.tolist()]
    assert supervised[0] == fast_tokenizer("42")["input_ids"] + [2]
    assert supervised[1] == fast_tokenizer('{"stock": 7}')["input_ids"] + [2]
    assert mask.sum().item() == sum(len(r) for r in supervised) + sum(
        len(fast_tokenizer(tinybase.chat_prompt(u))["input_ids"]) for u in ("Opening stock 3.", "x")
    )


def test_lr_schedule_warmup_and_decay():
    from verifiable_grpo.models.tinybase import lr_factor

    assert lr_factor(0, 100, 10, 0.1) == pytest.approx(0.1)
    assert lr_factor(9, 100, 10, 0.1) == pytest.approx(1.0)
    assert lr_factor(10, 100, 10, 0.1) == pytest.approx(1.0)
    assert lr_factor(99, 100, 10, 0.1) == pytest.approx(0.1)


def test_refuses_to_overwrite_without_force(tmp_path):
    from types import SimpleNamespace

    from verifiable_grpo.models.tinybase import command_build

    (tmp_path / "model.safetensors").write_bytes(b"x")
    with pytest.raises(SystemExit, match="--force"):
        command_build(SimpleNamespace(out=str(tmp_path), force=False, minutes=None))
    assert (tmp_path / "model.safetensors").read_bytes() == b"x"
