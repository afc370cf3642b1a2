"""The tiny base's tokenizer: a Qwen-style byte-level BPE trained on the task's own words.

It copies Qwen2's text pipeline exactly (NFC normaliser, Qwen2's pre-tokenizer regex that
splits every digit on its own, then byte-level mapping without a second regex) so that
`transformers.AutoTokenizer` -- which rebuilds a tokenizer declared as `Qwen2Tokenizer`
with that regex -- and the raw `tokenizer.json` split text identically. Any other digit
rule would be silently re-split by AutoTokenizer (REFERENCE.md).

The BPE merges are learned, deterministically, from a synthetic corpus of statements,
instructions and answers; a few hundred merges are enough to make every word of the
task a single token.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

from verifiable_grpo.task import statements

# Qwen2's pre-tokenizer regex (the same string as transformers' Qwen2Tokenizer).
QWEN2_PRETOKENIZE_REGEX = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"""
    r"""| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)
PAD_TOKEN = "<|endoftext|>"
IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
SPECIAL_TOKENS = (PAD_TOKEN, IM_START, IM_END)  # ids 0, 1, 2

VOCAB_SIZE = 512
CORPUS_SEED = 7
CORPUS_LINES = 6000

# ChatML like Qwen's, but without a default system message: prompts stay short.
CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)

# JSON keys the base sees in pretraining (never final_stock; see tinybase.py). The
# tokenizer corpus also holds final_stock, because the warm start must write it.
PRETRAIN_KEYS = (
    "stock",
    "total",
    "result",
    "remaining",
    "answer",
    "value",
    "count",
    "left",
    "balance",
    "units",
    "amount",
    "quantity",
    "end_stock",
    "new_stock",
    "stock_left",
    "closing_stock",
    "final_total",
    "final_count",
    "final_value",
    "final_answer",
)
FILLER_WORDS = (
    "system",
    "user",
    "assistant",
    "The",
    "answer",
    "is",
    "stock",
    "total",
    "JSON",
    "number",
    "integer",
    "Reply",
    "only",
    "with",
)


def pretokenizer() -> pre_tokenizers.PreTokenizer:
    return pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(QWEN2_PRETOKENIZE_REGEX), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )


def corpus_lines(seed: int = CORPUS_SEED, lines: int = CORPUS_LINES) -> list[str]:
    """Synthetic chat turns with the task's words, numbers 0..300 and JSON answers."""
    rng = random.Random(seed)
    keys = PRETRAIN_KEYS + (statements.ANSWER_KEY,)
    out = []
    for _ in range(lines):
        problem = {
            "initial": rng.randint(0, 100),
            "deliveries": [rng.randint(0, 100), rng.randint(0, 100)],
            "withdrawals": [rng.randint(0, 100), rng.randint(0, 100)],
        }
        statement = statements.render_statement(problem, rng.randrange(len(statements.TEMPLATES)))
        if rng.random() < 0.8:
            key = rng.choice(keys)
            instruction = statements.json_instruction(key)
            answer = statements.canonical_response(rng.randint(0, 300), key)
        else:
            instruction = statements.number_instruction()
            answer = str(rng.randint(0, 300))
        out.append(f"user\n{statements.user_message(statement, instruction)}\nassistant\n{answer}")
        if rng.random() < 0.05:
            out.append(" ".join(rng.choice(FILLER_WORDS) for _ in range(8)))
    return out


def train_tokenizer(vocab_size: int = VOCAB_SIZE, seed: int = CORPUS_SEED) -> Tokenizer:
    """A deterministic byte-level BPE with Qwen2's normaliser, pre-tokenizer and decoder."""
    tokenizer = Tokenizer(
        models.BPE(
            unk_token=None,
            continuing_subword_prefix="",
            end_of_word_suffix="",
            fuse_unk=False,
            byte_fallback=False,
        )
    )
    tokenizer.normalizer = normalizers.NFC()
    tokenizer.pre_tokenizer = pretokenizer()
    tokenizer.decoder = decoders.ByteLevel(
        add_prefix_space=False, trim_offsets=False, use_regex=False
    )
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(corpus_lines(seed), trainer=trainer)
    return tokenizer


def tokenizer_config() -> dict:
    """tokenizer_config.json in Qwen's style: <|im_end|> ends a turn, <|endoftext|> pads."""
    added = {
        str(i): {
            "content": token,
            "lstrip": False,
            "normalized": False,
            "rstrip": False,
            "single_word": False,
            "special": True,
        }
        for i, token in enumerate(SPECIAL_TOKENS)
    }
    return {
        "tokenizer_class": "Qwen2Tokenizer",
        "added_tokens_decoder": added,
        "additional_special_tokens": [IM_START, IM_END],
        "bos_token": None,
        "eos_token": IM_END,
        "pad_token": PAD_TOKEN,
        "unk_token": None,
        "add_prefix_space": False,
        "clean_up_tokenization_spaces": False,
        "errors": "replace",
        "model_max_length": 512,
        "split_special_tokens": False,
        "chat_template": CHAT_TEMPLATE,
    }


def save_tokenizer(tokenizer: Tokenizer, out_dir: str | Path) -> list[Path]:
    """Write tokenizer.json and tokenizer_config.json; returns the written paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "tokenizer.json", out / "tokenizer_config.json"]
    tokenizer.save(str(paths[0]), pretty=True)
    paths[1].write_text(
        json.dumps(tokenizer_config(), indent=2, sort_keys=True) + "\n", encoding="utf-8"
    )
    return paths
