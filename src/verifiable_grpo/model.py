"""The policy network: load it, check it is the declared architecture, save and reload it.

Three sources, one code path afterwards:
- hub:    Qwen2.5-0.5B-Instruct at the config's revision (or a local snapshot in model.path);
- local:  a saved Qwen2 folder (the project's tiny base in data/tiny-base);
- random: a micro Qwen2 (model.random_init) on the local tokenizer, for tests and speed.

Every policy is FP32 with eager attention and TF32 off, fully trainable, in eval mode
(no dropout, during generation and updates alike). Weights are identified by a digest
over per-parameter SHA-256 hashes, so any change, however small, is visible.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import torch

from . import files
from .config import canonical_json, resolve, sha256_bytes, sha256_file

ARCHITECTURE = "Qwen2ForCausalLM"
POLICY_FORMAT = "verifiable-grpo-policy-v2"   # v2: the architecture has its own digest
LEGACY_POLICY_FORMATS = ("verifiable-grpo-policy-v1",)  # read only with the file's SHA-256
HEADER_KEYS = ("format", "model_digest", "model_config", "architecture_sha256")


class ModelUnavailableError(FileNotFoundError):
    """The configured weights cannot be found or fetched."""


def _unavailable(config: dict, detail: str, err: Exception | None = None) -> ModelUnavailableError:
    m = config["model"]
    where = m.get("path") or f"{m['name']}@{m.get('revision')}"
    if m["source"] == "hub":
        how = ("run on Colab with a GPU (the hub is reachable there), or download a snapshot "
               "of that revision elsewhere and pass its folder in model.path")
    else:
        how = ("build the tiny base with `python -m verifiable_grpo build-tiny-base`, point "
               "model.path at a saved Qwen2 folder, or use model.source: random for a quick check")
    return ModelUnavailableError(
        f"Cannot load model {where!r} (source {m['source']}): {detail}. To get it: {how}."
        + (f" Underlying error: {type(err).__name__}: {err}" if err else ""))


# ---------------------------------------------------------------- device and precision
def apply_precision_settings(config: dict) -> None:
    """TF32 off (config value) so FP32 matmuls are really FP32 on Ampere and later GPUs."""
    allow = bool(config["model"]["allow_tf32"])
    torch.backends.cuda.matmul.allow_tf32 = allow
    torch.backends.cudnn.allow_tf32 = allow


def resolve_device(config: dict) -> torch.device:
    wanted = config.get("device", "cpu")
    if wanted == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if wanted == "cuda":
        if not torch.cuda.is_available():
            raise ValueError("config device is 'cuda' but no CUDA GPU is available here; "
                             "use a GPU runtime (Colab) or set device: cpu|auto")
        # cuBLAS needs a fixed workspace for run-to-run identical results (exact resume).
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        return torch.device("cuda")
    if wanted == "cpu":
        return torch.device("cpu")
    raise ValueError(f"device must be cpu, cuda or auto; got {wanted!r}")


# ---------------------------------------------------------------- tokenizer
def synchronize(device: torch.device) -> None:
    """Wait for queued CUDA work so wall-clock timings measure it; a no-op on CPU."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _local_folder(config: dict) -> Path | None:
    path = config["model"].get("path")
    return resolve(path) if path else None


def load_tokenizer(config: dict):
    """The tokenizer of the configured model (random models use the local tokenizer)."""
    from transformers import AutoTokenizer

    m = config["model"]
    folder = _local_folder(config)
    if m["source"] == "hub" and folder is None:
        try:
            return AutoTokenizer.from_pretrained(m["name"], revision=m.get("revision"))
        except Exception as err:  # offline, missing revision, gated...: one clear message
            raise _unavailable(config, "the tokenizer could not be fetched", err) from err
    if folder is None:
        raise ValueError(f"model.source {m['source']!r} needs model.path (a tokenizer folder)")
    if not (folder / "tokenizer.json").is_file() and not (folder / "tokenizer_config.json").is_file():
        raise _unavailable(config, f"no tokenizer files in {folder}")
    return AutoTokenizer.from_pretrained(str(folder))


# ---------------------------------------------------------------- building / loading
def qwen2_parameter_count(model_config) -> int:
    """Unique parameters of a Qwen2 decoder with tied embeddings, from its shape alone."""
    h, f, layers = model_config.hidden_size, model_config.intermediate_size, model_config.num_hidden_layers
    head_dim = getattr(model_config, "head_dim", None) or h // model_config.num_attention_heads
    q = model_config.num_attention_heads * head_dim
    kv = model_config.num_key_value_heads * head_dim
    attention = (h * q + q) + 2 * (h * kv + kv) + q * h  # q,k,v have biases; o has none
    per_layer = attention + 3 * h * f + 2 * h            # gate, up, down; two RMSNorms
    head = 0 if model_config.tie_word_embeddings else model_config.vocab_size * h
    return model_config.vocab_size * h + layers * per_layer + h + head


def random_model_config(config: dict, tokenizer):
    """The micro Qwen2 of model.random_init, sized to the tokenizer."""
    from transformers import Qwen2Config

    shape = {k: v for k, v in config["model"]["random_init"].items() if k != "seed"}
    return Qwen2Config(
        vocab_size=len(tokenizer), max_position_embeddings=max(512, config["tokens"]["max_total"]),
        tie_word_embeddings=True, attn_implementation="eager",
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id, **shape)


def build_random_model(config: dict, tokenizer):
    from transformers import Qwen2ForCausalLM

    seed = int(config["model"]["random_init"]["seed"])
    with torch.random.fork_rng(devices=[]):  # leave the caller's RNG streams untouched
        torch.manual_seed(seed)
        model = Qwen2ForCausalLM(random_model_config(config, tokenizer))
    return model.to(torch.float32)


def _from_pretrained(config: dict, location: str, revision: str | None):
    from transformers import AutoModelForCausalLM

    m = config["model"]
    try:
        return AutoModelForCausalLM.from_pretrained(
            location, revision=revision, dtype=torch.float32,
            attn_implementation=m["attn_implementation"])
    except Exception as err:
        raise _unavailable(config, "the weights could not be loaded", err) from err


def load_base(config: dict):
    """(model, tokenizer): FP32, eager attention, TF32 off, checked, eval mode, on the device."""
    apply_precision_settings(config)
    device = resolve_device(config)
    m = config["model"]
    source = m["source"]
    if source == "hub":
        folder = _local_folder(config)
        if folder is not None and not folder.is_dir():
            raise _unavailable(config, f"model.path {folder} does not exist")
        tokenizer = load_tokenizer(config)
        model = _from_pretrained(config, str(folder) if folder else m["name"],
                                 None if folder else m.get("revision"))
    elif source == "local":
        folder = _local_folder(config)
        if folder is None or not (folder / "config.json").is_file():
            raise _unavailable(config, f"no model weights (config.json) in {folder}")
        tokenizer = load_tokenizer(config)
        model = _from_pretrained(config, str(folder), None)
    elif source == "random":
        tokenizer = load_tokenizer(config)
        model = build_random_model(config, tokenizer)
    else:
        raise ValueError(f"model.source must be hub, local or random; got {source!r}")
    return prepare_policy(model, config, device), tokenizer


def prepare_policy(model, config: dict, device: torch.device | None = None):
    """Eval mode, every parameter trainable, on the device; then the architecture checks."""
    model.config.use_cache = False
    for parameter in model.parameters():
        parameter.requires_grad_(True)
    model = model.to(device or resolve_device(config)).eval()
    check_architecture(model, config)
    return model


# ---------------------------------------------------------------- checks
def unique_parameters(model) -> list[torch.nn.Parameter]:
    """Each parameter once, even where two names share it (tied embeddings)."""
    seen, unique = set(), []
    for _, parameter in model.named_parameters(remove_duplicate=False):
        if id(parameter) not in seen:
            seen.add(id(parameter))
            unique.append(parameter)
    return unique


def expected_parameter_count(model, config: dict) -> int:
    """The config's count when given, else the base's BUILD.json, else the shape's formula."""
    declared = config["model"].get("expected_unique_parameters")
    if declared is not None:
        return int(declared)
    folder = _local_folder(config)
    if config["model"]["source"] == "local" and folder is not None and (folder / "BUILD.json").is_file():
        build = json.loads((folder / "BUILD.json").read_text())
        for key in ("unique_parameters", "parameters"):
            if isinstance(build.get(key), int):
                return build[key]
    return qwen2_parameter_count(model.config)


def check_architecture(model, config: dict) -> dict:
    """Refuse anything but a tied FP32 Qwen2 of the expected size, fully trainable."""
    problems = []
    name = type(model).__name__
    if name != ARCHITECTURE:
        problems.append(f"architecture is {name}, expected {ARCHITECTURE}")
    want_tied = bool(config["model"]["tie_word_embeddings"])
    tied = bool(getattr(model.config, "tie_word_embeddings", False))
    shared = model.get_output_embeddings().weight is model.get_input_embeddings().weight
    if want_tied and not (tied and shared):
        problems.append(f"embeddings not tied (config flag {tied}, lm_head.weight is the "
                        f"embedding tensor: {shared})")
    parameters = unique_parameters(model)
    count = sum(p.numel() for p in parameters)
    expected = expected_parameter_count(model, config)
    if count != expected:
        problems.append(f"{count:,} unique parameters, expected {expected:,}")
    dtypes = sorted({str(p.dtype) for p in parameters})
    if dtypes != ["torch.float32"]:
        problems.append(f"parameter dtypes {dtypes}, expected only torch.float32")
    frozen = sum(1 for p in parameters if not p.requires_grad)
    if frozen:
        problems.append(f"{frozen} parameter tensors do not require gradients")
    attention = getattr(model.config, "_attn_implementation", None)
    if attention != config["model"]["attn_implementation"]:
        problems.append(f"attention implementation {attention!r}, expected "
                        f"{config['model']['attn_implementation']!r}")
    if problems:
        raise ValueError("Model fails the architecture checks: " + "; ".join(problems))
    return {"architecture": name, "unique_parameters": count, "tied_embeddings": shared,
            "dtype": "float32", "attn_implementation": attention}


# ---------------------------------------------------------------- identity of weights
def tensor_sha256(tensor: torch.Tensor) -> str:
    """SHA-256 of dtype, shape and raw bytes: equal iff bit-identical."""
    flat = tensor.detach().cpu().contiguous().reshape(-1)
    header = f"{flat.dtype}|{tuple(tensor.shape)}|".encode()
    return sha256_bytes(header + flat.view(torch.uint8).numpy().tobytes())


def parameter_manifest(model) -> dict[str, str]:
    """{parameter name: sha256}; tied tensors appear once, under their first name."""
    return {name: tensor_sha256(p) for name, p in model.named_parameters()}


def manifest_digest(manifest: dict[str, str]) -> str:
    return sha256_bytes(canonical_json(manifest))


def model_digest(model) -> str:
    return manifest_digest(parameter_manifest(model))


def unique_state_dict(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """A state dict without the second name of shared tensors (safetensors refuses aliases)."""
    seen, unique = set(), {}
    for name, tensor in state.items():
        key = (tensor.untyped_storage().data_ptr(), tensor.storage_offset(), tuple(tensor.shape),
               tensor.stride(), tensor.device.type)
        if key in seen:
            continue
        seen.add(key)
        unique[name] = tensor
    return unique


def state_dict_digest(state: dict[str, torch.Tensor]) -> str:
    """model_digest computed from a saved state dict (same names as parameter_manifest)."""
    return manifest_digest({n: tensor_sha256(t) for n, t in unique_state_dict(state).items()})


# ---------------------------------------------------------------- save / strict reload
def save_policy(model, path: str | os.PathLike, metadata: dict[str, Any]) -> str:
    """Write the weights as safetensors with their digest and architecture; return file sha256.

    Refuses to overwrite. Metadata values are stored as JSON strings and come back decoded.
    """
    from safetensors.torch import save_file

    path = Path(path)
    if path.exists():
        raise FileExistsError(f"{path} exists; evidence is never overwritten")
    reserved = set(HEADER_KEYS) & set(metadata)
    if reserved:
        raise ValueError(f"metadata keys {sorted(reserved)} are written by save_policy itself")
    tensors = {n: t.detach().cpu().contiguous() for n, t in unique_state_dict(model.state_dict()).items()}
    header = {key: json.dumps(value, sort_keys=True) for key, value in metadata.items()}
    architecture = model.config.to_json_string(use_diff=False)
    header.update(format=POLICY_FORMAT, model_digest=model_digest(model),
                  model_config=architecture,
                  architecture_sha256=hashlib.sha256(architecture.encode()).hexdigest())
    def write(tmp: Path) -> None:
        save_file(tensors, str(tmp), metadata=header)
        canonical_safetensors_header(tmp)

    files.write_with(path, write)
    return sha256_file(path)


def canonical_safetensors_header(path: Path) -> None:
    """Rewrite a safetensors header with sorted keys, in place. safetensors serialises its
    metadata from a hash map whose order changes from process to process, so the same
    weights and metadata gave files with other bytes (and another SHA-256) on every run."""
    import struct

    with open(path, "r+b") as handle:
        (length,) = struct.unpack("<Q", handle.read(8))
        header = json.loads(handle.read(length))
        text = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
        if len(text) > length:
            raise ValueError(f"{path}: canonical header longer than the original")
        handle.seek(8)
        handle.write(text + b" " * (length - len(text)))  # same length: offsets unchanged


def read_policy_metadata(path: str | os.PathLike) -> dict[str, Any]:
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as handle:
        raw = handle.metadata() or {}
    if raw.get("format") not in (POLICY_FORMAT, *LEGACY_POLICY_FORMATS):
        raise ValueError(f"{path} is not a policy written by save_policy (format {raw.get('format')!r})")
    if raw["format"] == POLICY_FORMAT:
        found = hashlib.sha256(raw["model_config"].encode()).hexdigest()
        if found != raw.get("architecture_sha256"):
            raise files.DamagedFileError(
                f"{path}: the architecture in its metadata does not match its digest (the "
                "header was edited: another rope_theta, vocabulary or shape would change every "
                "logit); the file was altered")
    meta = {k: json.loads(v) for k, v in raw.items() if k not in HEADER_KEYS}
    meta.update(model_digest=raw["model_digest"], model_config=json.loads(raw["model_config"]),
                format=raw["format"])
    return meta


def reload_policy(path: str | os.PathLike, config: dict, expected_sha256: str | None = None):
    """(model, metadata): strict reload (no missing or unexpected tensor), digests verified:
    the tensors' and the architecture's. `expected_sha256` (from the record that listed the
    file) is checked first; a legacy v1 file, whose architecture has no digest, loads only
    with it."""
    from safetensors.torch import load_file
    from transformers import Qwen2Config, Qwen2ForCausalLM

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no policy file {path}")
    apply_precision_settings(config)
    files.check_sha256(path, expected_sha256, "policy file")
    metadata = read_policy_metadata(path)
    if metadata["format"] != POLICY_FORMAT and expected_sha256 is None:
        raise ValueError(f"{path} is a {metadata['format']} policy, whose architecture carries "
                         "no digest: load it with the SHA-256 its record lists "
                         "(expected_sha256=...)")
    model_config = Qwen2Config.from_dict(metadata["model_config"])
    model_config._attn_implementation = config["model"]["attn_implementation"]
    with torch.random.fork_rng(devices=[]):  # initial values are overwritten; keep RNG untouched
        model = Qwen2ForCausalLM(model_config).to(torch.float32)
    tensors = load_file(str(path))
    expected = set(unique_state_dict(model.state_dict()))
    missing, unexpected = sorted(expected - set(tensors)), sorted(set(tensors) - expected)
    if missing or unexpected:
        raise ValueError(f"{path}: strict reload failed; missing tensors {missing}, "
                         f"unexpected tensors {unexpected}")
    result = model.load_state_dict(tensors, strict=False)
    if result.unexpected_keys or set(result.missing_keys) - (set(model.state_dict()) - expected):
        raise ValueError(f"{path}: strict reload failed: {result}")
    model = prepare_policy(model, config)
    digest = model_digest(model)
    if digest != metadata["model_digest"]:
        raise ValueError(f"{path}: weights do not match their recorded digest "
                         f"({digest} != {metadata['model_digest']}); the file was altered")
    return model, metadata
