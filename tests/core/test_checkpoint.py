"""Resume states: RNG round trips, gzip files, bitwise comparison, identity refusal."""

from __future__ import annotations

import argparse
import gzip
import json
import random

import numpy as np
import pytest
import torch

from verifiable_grpo.core import checkpoint as C


def draws():
    return (
        random.random(),
        float(np.random.rand()),
        torch.rand(3).tolist(),
        torch.randint(0, 1000, (2,)).tolist(),
    )


def test_rng_capture_and_restore_round_trip():
    random.seed(1)
    np.random.seed(2)
    torch.manual_seed(3)
    draws()
    state = C.capture_rng()
    first = draws()
    draws()  # move every stream on
    C.restore_rng(state)
    assert draws() == first
    assert state["cuda"] is None or isinstance(state["cuda"], list)


def test_restore_refuses_cuda_streams_without_cuda():
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    state = C.capture_rng()
    state["cuda"] = [torch.zeros(16, dtype=torch.uint8)]
    with pytest.raises(ValueError, match="no CUDA device"):
        C.restore_rng(state)


def sample_state():
    return {
        "model": {"w": torch.arange(6, dtype=torch.float32).reshape(2, 3)},
        "step": 3,
        "history": [{"loss": 0.25, "lr": 1e-4}],
        "rng": C.capture_rng(),
        "sampler": torch.Generator().manual_seed(5).get_state(),
        "timings": {"seconds": 1.5},
    }


def test_save_and_load_round_trip_gzip_level_1(tmp_path):
    state = sample_state()
    path = tmp_path / "s.pt.gz"
    info = C.save_state(path, state)
    raw = path.read_bytes()
    assert raw[:2] == b"\x1f\x8b" and raw[8] == 4  # gzip magic; XFL 4 = fastest (level 1)
    assert info["bytes"] == len(raw) and len(info["sha256"]) == 64 and info["seconds"] >= 0
    assert len(gzip.decompress(raw)) > 0
    assert C.compare_states(state, C.load_state(path), ignore=()) == []
    with pytest.raises(FileExistsError, match="never overwritten"):
        C.save_state(path, state)
    # same content, same bytes: the gzip header carries no timestamp
    assert C.save_state(tmp_path / "t.pt.gz", state)["sha256"] == info["sha256"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.pt.gz", "t.pt.gz"]  # no temp left


def test_compare_states_finds_every_kind_of_difference():
    a = sample_state()
    assert C.compare_states(a, sample_state()) == []
    cases = {
        "tensor values": lambda s: s["model"]["w"].__setitem__((0, 0), 1e-30),
        "tensor dtype": lambda s: s["model"].__setitem__("w", s["model"]["w"].double()),
        "tensor shape": lambda s: s["model"].__setitem__("w", s["model"]["w"].reshape(3, 2)),
        "signed zero": lambda s: s["model"]["w"].__setitem__((0, 0), -0.0),
        "float": lambda s: s["history"][0].__setitem__("loss", 0.25 + 2**-54),
        "int vs bool": lambda s: s.__setitem__("step", True),
        "list length": lambda s: s["history"].append({}),
        "extra key": lambda s: s.__setitem__("extra", 1),
        "rng": lambda s: s["rng"].__setitem__("python", random.Random(9).getstate()),
        "numpy rng": lambda s: s["rng"]["numpy"]["keys"].__setitem__(0, 7),
    }
    for name, change in cases.items():
        b = sample_state()
        change(b)
        assert C.compare_states(a, b), name
    b = sample_state()
    b["timings"] = {"seconds": 99.0}
    b["history"][0]["timings"] = 3  # ignored at any depth
    assert C.compare_states(a, b) == []
    assert C.compare_states(a, b, ignore=()) != []
    nan = {"x": torch.tensor([float("nan")]), "y": float("nan")}
    assert C.compare_states(nan, {"x": torch.tensor([float("nan")]), "y": float("nan")}) == []


def test_compare_states_reports_paths():
    a, b = sample_state(), sample_state()
    b["history"][0]["lr"] = 2e-4
    assert C.compare_states(a, b) == [".history[0].lr: 0.0001 != 0.0002"]


def test_identity_refusal_lists_what_differs():
    expected = {
        "config_sha256": "c" * 64,
        "data_sha256": "d" * 64,
        "code_sha256": "k" * 64,
        "template": {"sha256": "t" * 64, "ids": [1, 2]},
        "branch": "warmstart",
    }
    C.check_identity(expected, json.loads(json.dumps(expected)))  # a JSON round trip
    found = dict(expected, config_sha256="e" * 64, data_sha256="f" * 64)
    with pytest.raises(ValueError, match="differing identity fields: config_sha256, data_sha256"):
        C.check_identity(expected, found)
    nested = dict(expected, template={"sha256": "t" * 64, "ids": [1, 3]})
    with pytest.raises(ValueError, match="differing identity fields: template"):
        C.check_identity(expected, nested)


def test_verify_resume_writes_the_evidence(tmp_path, random_config):
    checkpoints = tmp_path / "checkpoints"
    model = {"model.embed_tokens.weight": torch.ones(2, 2), "model.norm.weight": torch.ones(2)}
    model["lm_head.weight"] = model["model.embed_tokens.weight"]
    same = {"model": model, "updates": 4, "timings": {"seconds": 1.0}}
    C.save_state(checkpoints / "warmstart-continuous.pt.gz", same)
    C.save_state(checkpoints / "warmstart-resume.pt.gz", dict(same, timings={"seconds": 2.0}))
    args = argparse.Namespace(config="smoke", out=str(tmp_path), branch="warmstart")
    assert C.command_verify_resume(args) == 0
    report = json.loads((tmp_path / "resume-warmstart.json").read_text())
    assert report["equal"] is True and report["differences"] == []
    assert report["continuous"]["model_digest"] == report["resume"]["model_digest"]
    assert report["continuous"]["bytes"] > 0 and len(report["resume"]["sha256"]) == 64
    with pytest.raises(FileExistsError):
        C.command_verify_resume(args)
    C.save_state(checkpoints / "sft-continuous.pt.gz", same)
    C.save_state(checkpoints / "sft-resume.pt.gz", dict(same, updates=5))
    args.branch = "sft"
    assert C.command_verify_resume(args) == 1
    report = json.loads((tmp_path / "resume-sft.json").read_text())
    assert report["equal"] is False and report["differences"] == [".updates: 4 != 5"]
    args.branch = "grpo"
    with pytest.raises(FileNotFoundError, match="missing"):
        C.command_verify_resume(args)


def test_seed_everything_fixes_every_stream():
    C.seed_everything(11)
    first = draws()
    draws()
    C.seed_everything(11)
    assert draws() == first
    C.seed_everything(12)
    assert draws() != first


def test_module_hash_covers_exactly_the_named_modules():
    from verifiable_grpo.core.code_identity import modules_sha256

    named = modules_sha256(["core/model.py", "training/sft.py"])
    assert named == modules_sha256(["training/sft.py", "core/model.py"])  # order-free
    assert named != modules_sha256(["core/model.py"])


def test_resume_identities_hash_the_code_their_entry_points_import():
    """GRPO, SFT and the family study hash what they import (entropy.py, once missing from
    the hand-kept GRPO list, included); SFT does not depend on the GRPO loop."""
    from verifiable_grpo.core import code_identity
    from verifiable_grpo.part2 import study
    from verifiable_grpo.training import grpo, sft

    grpo_code = code_identity.imported_modules(grpo.CODE_ENTRY)
    sft_code = code_identity.imported_modules(sft.CODE_ENTRY)
    study_code = code_identity.imported_modules(study.CODE_ENTRY)
    assert {
        "training/grpo.py",
        "training/entropy.py",
        "training/objectives.py",
        "core/checkpoint.py",
        "task/verifier.py",
    } <= set(grpo_code)
    assert "training/grpo.py" not in sft_code and "training/sft.py" in sft_code
    assert set(grpo_code) <= set(study_code) and "training/samplers.py" in study_code
    assert grpo.GRPORun.code_sha256() == code_identity.modules_sha256(grpo_code)
    assert sft.SFTRun.code_sha256() == code_identity.modules_sha256(sft_code)
    assert study.StudyRun.code_sha256() == code_identity.modules_sha256(study_code)
    assert (
        len({grpo.GRPORun.code_sha256(), sft.SFTRun.code_sha256(), study.StudyRun.code_sha256()})
        == 3
    )
