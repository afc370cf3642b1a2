"""Profiles: the same code path, the seed's counts where the profile promises them."""
import json

import pytest

from verifiable_grpo import config as cfg
from verifiable_grpo.cli import build_parser

SEED_COUNTS = {
    ("warmstart", "examples"): 128, ("warmstart", "epochs"): 3, ("warmstart", "batch_size"): 8,
    ("sft", "examples"): 872, ("sft", "epochs"): 2, ("sft", "batch_size"): 8,
    ("grpo", "iterations"): 100, ("grpo", "prompts_per_iteration"): 4,
    ("grpo", "group_size"): 4, ("grpo", "updates_per_rollout"): 2, ("grpo", "interrupt_at"): 40,
    ("grpo", "clip_epsilon"): 0.2, ("grpo", "kl_coefficient"): 0.02,
    ("grpo", "kl_block_size"): 4096, ("grpo", "advantage_epsilon"): 1e-8,
    ("grpo", "verify_tolerance"): 2e-4, ("exercise", "iterations"): 20,
    ("exercise", "group_sizes"): [2, 8], ("evaluation", "problems"): 200,
    ("evaluation", "draws"): 4, ("tokens", "max_prompt"): 256, ("tokens", "max_response"): 64,
    ("tokens", "max_total"): 320,
}


@pytest.mark.parametrize("profile", ["qwen", "tiny"])
def test_full_profiles_keep_the_seed_counts(profile):
    config = cfg.load_config(profile)
    for (section, key), expected in SEED_COUNTS.items():
        assert config[section][key] == expected, (profile, section, key)


def test_qwen_profile_is_the_seed_model():
    model = cfg.load_config("qwen")["model"]
    assert model["name"] == "Qwen/Qwen2.5-0.5B-Instruct"
    assert model["revision"] == "7ae557604adf67be50417f59c2c2f167def9a775"
    assert (model["dtype"], model["attn_implementation"], model["allow_tf32"]) == (
        "float32", "eager", False)
    assert model["expected_unique_parameters"] == 494032768
    assert model["eos_token_id"] == 151645
    config = cfg.load_config("qwen")
    assert config["warmstart"]["learning_rate"] == config["sft"]["learning_rate"] == 2e-5
    assert config["grpo"]["learning_rate"] == 1e-6


def test_profiles_share_their_keys():
    """Code branches on values only, so every profile must define the same keys."""
    def keys(value, prefix=""):
        if isinstance(value, dict):
            return {k for key, sub in value.items() if not key.startswith("_")
                    for k in keys(sub, f"{prefix}{key}.")} | {prefix}
        return {prefix}
    shapes = {p: keys(cfg.load_config(p)) for p in ("qwen", "tiny", "smoke")}
    assert shapes["qwen"] == shapes["tiny"] == shapes["smoke"]


def test_truncated_sampling_is_refused(tmp_path):
    text = cfg.config_path("smoke").read_text().replace("top_k: 0", "top_k: 50")
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    with pytest.raises(ValueError, match="full vocabulary"):
        cfg.load_config(bad)


def test_unknown_profile_names_the_known_ones():
    with pytest.raises(FileNotFoundError, match="smoke"):
        cfg.load_config("no-such-profile")


def test_config_hash_tracks_content_not_location(tmp_path):
    smoke = cfg.load_config("smoke")
    copy = tmp_path / "copy.yaml"
    copy.write_text(cfg.config_path("smoke").read_text())
    assert cfg.config_hash(cfg.load_config(copy)) == cfg.config_hash(smoke)
    copy.write_text(cfg.config_path("smoke").read_text().replace("draws: 4", "draws: 5"))
    assert cfg.config_hash(cfg.load_config(copy)) != cfg.config_hash(smoke)


def test_evidence_is_never_overwritten(tmp_path):
    target = tmp_path / "x.json"
    cfg.save_json(target, {"a": 1})
    with pytest.raises(FileExistsError, match="never overwritten"):
        cfg.save_json(target, {"a": 2})
    assert json.loads(target.read_text()) == {"a": 1}


def test_cli_lists_every_stage():
    parser = build_parser()
    for command in ["data", "warmstart", "sft", "grpo", "verify-resume", "evaluate", "exercise",
                    "run", "build-tiny-base"]:
        assert parser.parse_args([command] + (["--out", "x"] if command == "data" else [])
                                 + (["--branch", "sft"] if command == "verify-resume" else []))
