"""The policy network: load it, check it is the declared architecture, save and reload it.

Four sources (model_sources: hub at a pinned revision, a local folder, a GGUF file, a random
micro model), one code path afterwards: every policy is FP32 with the configured attention
kernel and TF32 off, in eval mode (no dropout, during generation and updates alike), and
passes the architecture checks of model_checks (Qwen2 and Llama). A full fine-tune trains
every tensor; model.trainable: adapters lets the base stay frozen under trainable adapters.
Weights are identified by a digest over per-parameter SHA-256 hashes, so any change,
however small, is visible; a saved policy records its architecture (class, model_type and
shape) and reloads as that class.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
from pathlib import Path
from typing import Any

import torch

from verifiable_grpo.core import files
from verifiable_grpo.core.config import canonical_json, sha256_bytes, sha256_file
from verifiable_grpo.core.config_schema import Profile
from verifiable_grpo.core.model_checks import (  # noqa: F401
    ARCHITECTURES,
    DEFAULT_ARCHITECTURE,
    all_unique_parameters,
    architecture_report,
    architecture_spec,
    decoder_parameter_count,
    expected_parameter_count,
    is_adapter_parameter,
    qwen2_parameter_count,
    trainable_mode,
    unique_parameters,
)
from verifiable_grpo.core.model_sources import (  # noqa: F401
    ModelUnavailableError,
    build_random_model,
    load_source,
    load_tokenizer,
    random_model_config,
)

POLICY_FORMAT = "verifiable-grpo-policy-v2"  # v2: the architecture has its own digest
LEGACY_POLICY_FORMATS = ("verifiable-grpo-policy-v1",)  # read only with the file's SHA-256
HEADER_KEYS = ("format", "model_digest", "model_config", "architecture_sha256")


# ---------------------------------------------------------------- device and precision
def apply_precision_settings(config: Profile) -> None:
    """TF32 off (config value) so FP32 matmuls are really FP32 on Ampere and later GPUs."""
    allow = config.model.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = allow
    torch.backends.cudnn.allow_tf32 = allow


def resolve_device(config: Profile) -> torch.device:
    wanted = config.device  # cpu, cuda or auto (config_schema.DEVICES)
    if wanted == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if wanted == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(
                "config device is 'cuda' but no CUDA GPU is available here; "
                "use a GPU runtime (Colab) or set device: cpu|auto"
            )
        # cuBLAS needs a fixed workspace for run-to-run identical results (exact resume).
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        return torch.device("cuda")
    return torch.device("cpu")


# ---------------------------------------------------------------- loading and checks
def synchronize(device: torch.device) -> None:
    """Wait for queued CUDA work so wall-clock timings measure it; a no-op on CPU."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def load_base(config: Profile):
    """(model, tokenizer): FP32, configured attention, TF32 off, checked, eval mode, on the device."""
    apply_precision_settings(config)
    device = resolve_device(config)
    model, tokenizer = load_source(config)
    return prepare_policy(model, config, device, tokenizer=tokenizer), tokenizer


def prepare_policy(
    model,
    config: Profile,
    device: torch.device | None = None,
    tokenizer=None,
    trainable: str | None = None,
):
    """Eval mode, on the device, trainable as declared; then the architecture checks.

    full: every parameter is made trainable and checked to be. adapters: the base weights are
    frozen (the declaration says they do not train) and the adapter code attaches trainable
    adapters next; `check_architecture(model, config)` then confirms them before training."""
    mode = trainable_mode(config, trainable)
    model.config.use_cache = False
    for name, parameter in model.named_parameters():
        parameter.requires_grad_(mode == "full" or is_adapter_parameter(name))
    model = model.to(device or resolve_device(config)).eval()
    adapters = any(is_adapter_parameter(n) for n, _ in model.named_parameters())
    architecture_report(model, config, tokenizer, mode, check_training=mode == "full" or adapters)
    return model


def check_architecture(
    model, config: Profile, tokenizer=None, trainable: str | None = None
) -> dict:
    """Refuse anything but the declared architecture (class, tied embeddings as configured,
    FP32 only, attention kernel, unique-parameter count, vocabulary >= tokenizer) trained as
    declared (full: every tensor; adapters: trainable adapter tensors exist)."""
    return architecture_report(model, config, tokenizer, trainable)


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
        key = (
            tensor.untyped_storage().data_ptr(),
            tensor.storage_offset(),
            tuple(tensor.shape),
            tensor.stride(),
            tensor.device.type,
        )
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
    adapters = [n for n, _ in model.named_parameters() if is_adapter_parameter(n)]
    if adapters:
        # reload_policy rebuilds the plain architecture, which has no place for them.
        raise ValueError(
            f"{path}: the model holds adapter tensors ({', '.join(adapters[:3])}, "
            "...); merge them into the base weights first (peft: "
            "merge_and_unload()), or save the adapters on their own"
        )
    tensors = {
        n: t.detach().cpu().contiguous() for n, t in unique_state_dict(model.state_dict()).items()
    }
    header = {key: json.dumps(value, sort_keys=True) for key, value in metadata.items()}
    architecture = architecture_json(model)
    header.update(
        format=POLICY_FORMAT,
        model_digest=model_digest(model),
        model_config=architecture,
        architecture_sha256=hashlib.sha256(architecture.encode()).hexdigest(),
    )

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


def architecture_json(model) -> str:
    """The model's full config as JSON, naming its class in `architectures`, so that a reload
    builds the same class (a model built from a bare config has architectures null)."""
    model_config = copy.deepcopy(model.config)
    model_config.architectures = [type(model).__name__]
    recorded = model_config.to_dict()
    recorded.pop("_name_or_path", None)  # where it was loaded from: the file must not depend on it
    return json.dumps(recorded, indent=2, sort_keys=True) + "\n"


def build_recorded_architecture(model_config: dict, attn_implementation: str):
    """An FP32 model of the class and shape a policy file records (values to be overwritten)."""
    from transformers import AutoConfig, AutoModelForCausalLM

    names = model_config.get("architectures") or [DEFAULT_ARCHITECTURE]  # v1 files: Qwen2 only
    spec = architecture_spec(names[0])
    model_type = model_config.get("model_type") or spec.model_type
    if model_type != spec.model_type:
        raise ValueError(
            f"the recorded architecture {spec.name} has model_type {model_type!r}, "
            f"expected {spec.model_type!r}"
        )
    rebuilt = AutoConfig.for_model(
        model_type, **{k: v for k, v in model_config.items() if k != "model_type"}
    )
    with torch.random.fork_rng(devices=[]):  # initial values are overwritten; keep RNG untouched
        model = AutoModelForCausalLM.from_config(rebuilt, attn_implementation=attn_implementation)
    if type(model).__name__ != spec.name:
        raise ValueError(
            f"the recorded config builds {type(model).__name__}, not the recorded {spec.name}"
        )
    return model.to(torch.float32)


def read_policy_metadata(path: str | os.PathLike) -> dict[str, Any]:
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as handle:
        raw = handle.metadata() or {}
    if raw.get("format") not in (POLICY_FORMAT, *LEGACY_POLICY_FORMATS):
        raise ValueError(
            f"{path} is not a policy written by save_policy (format {raw.get('format')!r})"
        )
    if raw["format"] == POLICY_FORMAT:
        found = hashlib.sha256(raw["model_config"].encode()).hexdigest()
        if found != raw.get("architecture_sha256"):
            raise files.DamagedFileError(
                f"{path}: the architecture in its metadata does not match its digest (the "
                "header was edited: another rope_theta, vocabulary or shape would change every "
                "logit); the file was altered"
            )
    meta = {k: json.loads(v) for k, v in raw.items() if k not in HEADER_KEYS}
    meta.update(
        model_digest=raw["model_digest"],
        model_config=json.loads(raw["model_config"]),
        format=raw["format"],
    )
    return meta


def reload_policy(path: str | os.PathLike, config: Profile, expected_sha256: str | None = None):
    """(model, metadata): strict reload (no missing or unexpected tensor), digests verified:
    the tensors' and the architecture's. `expected_sha256` (from the record that listed the
    file) is checked first; a legacy v1 file, whose architecture has no digest, loads only
    with it."""
    from safetensors.torch import load_file

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no policy file {path}")
    apply_precision_settings(config)
    files.check_sha256(path, expected_sha256, "policy file")
    metadata = read_policy_metadata(path)
    if metadata["format"] != POLICY_FORMAT and expected_sha256 is None:
        raise ValueError(
            f"{path} is a {metadata['format']} policy, whose architecture carries "
            "no digest: load it with the SHA-256 its record lists "
            "(expected_sha256=...)"
        )
    try:
        model = build_recorded_architecture(
            metadata["model_config"], config.model.attn_implementation
        )
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from err
    tensors = load_file(str(path))
    expected = set(unique_state_dict(model.state_dict()))
    missing, unexpected = sorted(expected - set(tensors)), sorted(set(tensors) - expected)
    if missing or unexpected:
        raise ValueError(
            f"{path}: strict reload failed; missing tensors {missing}, "
            f"unexpected tensors {unexpected}"
        )
    result = model.load_state_dict(tensors, strict=False)
    if result.unexpected_keys or set(result.missing_keys) - (set(model.state_dict()) - expected):
        raise ValueError(f"{path}: strict reload failed: {result}")
    model = prepare_policy(model, config)
    digest = model_digest(model)
    if digest != metadata["model_digest"]:
        raise ValueError(
            f"{path}: weights do not match their recorded digest "
            f"({digest} != {metadata['model_digest']}); the file was altered"
        )
    return model, metadata
