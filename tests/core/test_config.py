"""Profiles: the same code path, the seed's counts where the profile promises them."""

import json

import pytest

from verifiable_grpo.cli import build_parser
from verifiable_grpo.core import config as cfg


def resolved_text(profile: str) -> str:
    """A shipped profile written out whole (its base merged in): a copy to edit line by line."""
    import yaml

    class FlowLists(yaml.SafeDumper):  # [2, 8] on one line, as the profiles write lists
        pass

    FlowLists.add_representer(
        list,
        lambda dumper, items: dumper.represent_sequence(
            "tag:yaml.org,2002:seq", items, flow_style=True
        ),
    )
    return yaml.dump(cfg.profile_settings(profile), Dumper=FlowLists, sort_keys=False)


SEED_COUNTS = {
    ("warmstart", "examples"): 128,
    ("warmstart", "epochs"): 3,
    ("warmstart", "batch_size"): 8,
    ("sft", "examples"): 872,
    ("sft", "epochs"): 2,
    ("sft", "batch_size"): 8,
    ("grpo", "iterations"): 100,
    ("grpo", "prompts_per_iteration"): 4,
    ("grpo", "group_size"): 4,
    ("grpo", "updates_per_rollout"): 2,
    ("grpo", "interrupt_at"): 40,
    ("grpo", "clip_epsilon"): 0.2,
    ("grpo", "kl_coefficient"): 0.02,
    ("grpo", "kl_block_size"): 4096,
    ("grpo", "advantage_epsilon"): 1e-8,
    ("grpo", "verify_tolerance"): 2e-4,
    ("exercise", "iterations"): 20,
    ("exercise", "group_sizes"): [2, 8],
    ("evaluation", "problems"): 200,
    ("evaluation", "draws"): 4,
    ("tokens", "max_prompt"): 256,
    ("tokens", "max_response"): 64,
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
        "float32",
        "eager",
        False,
    )
    assert model["expected_unique_parameters"] == 494032768
    assert model["eos_token_id"] == 151645
    config = cfg.load_config("qwen")
    assert config["warmstart"]["learning_rate"] == config["sft"]["learning_rate"] == 2e-5
    assert config["grpo"]["learning_rate"] == 1e-6


def test_profiles_share_their_keys():
    """Code branches on values only, so every profile must define the same keys."""

    def keys(value, prefix=""):
        if isinstance(value, dict):
            return {
                k
                for key, sub in value.items()
                if not key.startswith("_")
                for k in keys(sub, f"{prefix}{key}.")
            } | {prefix}
        return {prefix}

    # storage is the one section a profile may leave out: its absence reads as keep_states
    # all, and adding it to tiny or smoke would change their recorded config hashes
    shapes = {
        p: {k for k in keys(cfg.load_config(p)) if not k.startswith("storage.")}
        for p in ("qwen", "qwen-fast", "qwen-live", "tiny", "smoke")
    }
    assert (
        shapes["qwen"]
        == shapes["qwen-fast"]
        == shapes["qwen-live"]
        == shapes["tiny"]
        == shapes["smoke"]
    )


def test_truncated_sampling_is_refused(tmp_path):
    text = resolved_text("smoke").replace("top_k: 0", "top_k: 50")
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
    copy.write_text(resolved_text("smoke"))
    assert cfg.config_hash(cfg.load_config(copy)) == cfg.config_hash(smoke)
    copy.write_text(resolved_text("smoke").replace("draws: 4", "draws: 5"))
    assert cfg.config_hash(cfg.load_config(copy)) != cfg.config_hash(smoke)


def test_evidence_is_never_overwritten(tmp_path):
    target = tmp_path / "x.json"
    cfg.save_json(target, {"a": 1})
    with pytest.raises(FileExistsError, match="never overwritten"):
        cfg.save_json(target, {"a": 2})
    assert json.loads(target.read_text()) == {"a": 1}


def test_cli_lists_every_stage():
    parser = build_parser()
    for command in [
        "data",
        "warmstart",
        "sft",
        "grpo",
        "verify-resume",
        "evaluate",
        "exercise",
        "run",
        "build-tiny-base",
    ]:
        assert parser.parse_args(
            [command]
            + (["--out", "x"] if command == "data" else [])
            + (["--branch", "sft"] if command == "verify-resume" else [])
        )


# --------------------------------------------------------------------------- the schema
# Every case below was measured on the smoke profile before the schema existed: it failed
# minutes into a run, failed with an unclear message, or was silently accepted.


def edited_profile(tmp_path, edits: dict, profile: str = "smoke"):
    """A copy of a shipped profile where each 'section.key' (or top-level 'key') line is
    replaced by the given 'key: value' text, or dropped for None."""
    lines = resolved_text(profile).splitlines()
    section, found = None, set()
    for index, line in enumerate(lines):
        if line and not line[0].isspace() and not line.startswith("#"):
            section = line.split(":")[0]
            name = section
        elif section and line.startswith("  ") and not line.startswith("   ") and ":" in line:
            name = f"{section}.{line.split(':')[0].strip()}"
        else:
            continue
        if name in edits:
            found.add(name)
            new = edits[name]
            lines[index] = None if new is None else ("  " if "." in name else "") + new
    assert found == set(edits), f"no such lines: {set(edits) - found}"
    path = tmp_path / f"edited-{profile}.yaml"
    path.write_text("\n".join(line for line in lines if line is not None) + "\n")
    return path


def load_problems(path) -> list[str]:
    with pytest.raises(cfg.ConfigError) as caught:
        cfg.load_config(path)
    assert str(caught.value) == "\n".join(caught.value.problems)
    return caught.value.problems


@pytest.mark.parametrize(
    "edits, expected",
    [
        # found late (after 85-202 s of a smoke run)
        ({"evaluation.draws": "draws: 0"}, "evaluation.draws: must be >= 1, got 0"),
        (
            {"exercise.group_sizes": "group_sizes: [1, 8]"},
            "exercise.group_sizes: must be a list whose items are all >= 2",
        ),
        ({"grpo.group_size": "group_size: 1"}, "grpo.group_size: must be >= 2"),
        ({"grpo.iterations": "iterations: 0"}, "grpo.iterations: must be >= 2"),
        (
            {"grpo.clip_epsilon": "clip_epsilon: -0.2"},
            "grpo.clip_epsilon: must be in (0, 1), got -0.2",
        ),
        ({"grpo.clip_epsilon": None}, "grpo.clip_epsilon: missing"),
        # unclear messages
        (
            {"warmstart.learning_rate": "learning_rat: 2.0e-4"},
            "warmstart.learning_rat: unknown key; did you mean learning_rate?",
        ),
        ({"seed": "seed: abc"}, "seed: must be an integer, got 'abc' (str)"),
        ({"warmstart.batch_size": "batch_size: 0"}, "warmstart.batch_size: must be >= 1, got 0"),
        ({"warmstart.epochs": "epochs: 0"}, "warmstart.epochs: must be >= 2"),
        # silently accepted
        ({"warmstart.examples": "examples: -5"}, "warmstart.examples: must be >= 1, got -5"),
        (
            {"grpo.kl_coefficient": "kl_coefficient: -5"},
            "grpo.kl_coefficient: must be >= 0, got -5",
        ),
        (
            {"grpo.clip_epsilon": "clip_epsilion: 0.2"},
            "grpo.clip_epsilion: unknown key; did you mean clip_epsilon?",
        ),
        ({"device": "devcie: cuda"}, "devcie: unknown key; did you mean device?"),
        (
            {"sampling.use_kv_cache": "use_kv_cahce: true"},
            "sampling.use_kv_cahce: unknown key; did you mean use_kv_cache?",
        ),
    ],
)
def test_bad_values_are_named_at_load(tmp_path, edits, expected):
    path = edited_profile(tmp_path, edits)
    problems = load_problems(path)
    assert any(p.startswith(f"{path}: {expected}") for p in problems), problems


def test_a_misspelt_key_is_also_reported_missing(tmp_path):
    path = edited_profile(tmp_path, {"warmstart.learning_rate": "learning_rat: 2.0e-4"})
    assert load_problems(path) == [
        f"{path}: warmstart.learning_rate: missing (peak AdamW learning rate; a number > 0)",
        f"{path}: warmstart.learning_rat: unknown key; did you mean learning_rate?",
    ]


def test_every_problem_is_listed_at_once(tmp_path):
    path = edited_profile(
        tmp_path,
        {
            "seed": "seed: -1",
            "grpo.group_size": "group_size: 1",
            "evaluation.draws": "draws: 0",
            "device": "device: gpu",
        },
    )
    problems = load_problems(path)
    assert [p.split(": ")[1] for p in problems] == [
        "seed",
        "device",
        "grpo.group_size",
        "evaluation.draws",
    ]
    assert f"{path}: device: must be one of cpu, cuda, auto, got 'gpu'" in problems


def test_yaml11_float_strings_become_floats(tmp_path):
    path = edited_profile(
        tmp_path,
        {
            "warmstart.learning_rate": "learning_rate: 2e-4",
            "grpo.learning_rate": "learning_rate: 1e-5",
            "grpo.weight_decay": "weight_decay: 0",
        },
    )
    config = cfg.load_config(path)
    assert config["warmstart"]["learning_rate"] == 2e-4
    rate = config["grpo"]["learning_rate"]
    assert rate == 1e-5 and type(rate) is float
    assert config["grpo"]["weight_decay"] == 0 and type(config["grpo"]["weight_decay"]) is int


@pytest.mark.parametrize(
    "edits, expected",
    [
        (
            {"warmstart.epochs": "epochs: true"},
            "warmstart.epochs: must be an integer, got True (bool)",
        ),
        (
            {"warmstart.learning_rate": "learning_rate: fast"},
            "warmstart.learning_rate: must be a number, got 'fast' (str)",
        ),
        (
            {"sampling.use_kv_cache": "use_kv_cache: 1"},
            "sampling.use_kv_cache: must be true or false, got 1 (int)",
        ),
        (
            {"model.expected_unique_parameters": "expected_unique_parameters: 0"},
            "model.expected_unique_parameters: must be > 0, got 0",
        ),
        (
            {"model.expected_unique_parameters": "expected_unique_parameters: many"},
            "model.expected_unique_parameters: must be an integer or null, got 'many' (str)",
        ),
        (
            {"warmstart.examples": "examples: 129"},
            "warmstart.examples: must be <= 128 (the warmstart split's size), got 129",
        ),
        (
            {"sft.examples": "examples: 873"},
            "sft.examples: must be <= 872 (the train split's size)",
        ),
        (
            {"sft.validation_examples": "validation_examples: 201"},
            "sft.validation_examples: must be in 1..200, got 201",
        ),
        (
            {"warmstart.interrupt_after_epochs": "interrupt_after_epochs: 3"},
            "warmstart.interrupt_after_epochs: must be in 1..2",
        ),
        ({"grpo.interrupt_at": "interrupt_at: 4"}, "grpo.interrupt_at: must be in 1..3"),
        ({"exercise.interrupt_at": "interrupt_at: 0"}, "exercise.interrupt_at: must be >= 1"),
        (
            {"exercise.group_sizes": "group_sizes: [2, 2]"},
            "exercise.group_sizes: must be without repeats",
        ),
        ({"exercise.group_sizes": "group_sizes: []"}, "exercise.group_sizes: must be non-empty"),
        ({"evaluation.problems": "problems: 1"}, "evaluation.problems: must be in 2..200, got 1"),
        (
            {"grpo.warmup_fraction": "warmup_fraction: 1.5"},
            "grpo.warmup_fraction: must be in [0, 1], got 1.5",
        ),
        (
            {"grpo.checkpoint_every_iterations": "checkpoint_every_iterations: 0"},
            "grpo.checkpoint_every_iterations: must be >= 1, got 0",
        ),
        ({"sft.checkpoint_every_updates": None}, "sft.checkpoint_every_updates: missing"),
        (
            {"tokens.max_total": "max_total: 279"},
            "tokens.max_total: must be >= max_prompt + max_response = 280, got 279",
        ),
        ({"model.source": "source: hf"}, "model.source: must be one of hub, local, gguf, random"),
        ({"model.path": "path: null"}, "model.path: source local needs the model folder, got null"),
        ({"model.dtype": "dtype: bfloat16"}, "model.dtype: must be one of float32, got 'bfloat16'"),
        (
            {
                "model.source": "source: random",
                "model.attn_implementation": "attn_implementation: sdpa",
            },
            "model.attn_implementation: source random builds eager attention only",
        ),
        (
            {"sampling.temperature": "temperature: 0.7"},
            "sampling.temperature: must be 1.0 (sampling is temperature 1 over the full vocabulary",
        ),
        # once checked again by rollout, grpo, sft and evaluate; the schema holds them alone now
        (
            {"sampling.top_p": "top_p: 0.9"},
            "sampling.top_p: must be 1.0 (sampling is temperature 1 over the full vocabulary",
        ),
        (
            {"sampling.temperature": "temperature: true"},
            "sampling.temperature: must be a number, got True (bool)",
        ),
        (
            {"sampling.use_kv_cache": "use_kv_cache: true\n  min_p: 0.05"},
            "sampling.min_p: unknown key; sampling takes temperature, top_k, top_p, use_kv_cache",
        ),
        (
            {"grpo.updates_per_rollout": "updates_per_rollout: 0"},
            "grpo.updates_per_rollout: must be >= 1, got 0",
        ),
        ({"exercise.iterations": "iterations: 1"}, "exercise.iterations: must be >= 2"),
        (
            {"evaluation.draws": "draws: 2.0"},
            "evaluation.draws: must be an integer, got 2.0 (float)",
        ),
    ],
)
def test_ranges_types_and_cross_field_rules(tmp_path, edits, expected):
    path = edited_profile(tmp_path, edits)
    problems = load_problems(path)
    assert any(p.startswith(f"{path}: {expected}") for p in problems), problems


def test_hub_models_need_a_pinned_revision(tmp_path):
    path = edited_profile(tmp_path, {"model.revision": "revision: null"}, profile="qwen")
    assert load_problems(path) == [
        f"{path}: model.revision: source hub needs a pinned revision, got null"
    ]


def test_nested_keys_are_checked_too(tmp_path):
    text = resolved_text("smoke").replace(
        "num_key_value_heads: 1", "num_key_value_heads: 3\n    depth: 2"
    )
    path = tmp_path / "nested.yaml"
    path.write_text(text)
    problems = load_problems(path)
    assert (
        f"{path}: model.random_init.depth: unknown key; model.random_init takes hidden_size, "
        "num_hidden_layers, num_attention_heads, num_key_value_heads, intermediate_size, "
        "seed" in problems
    )
    assert (
        f"{path}: model.random_init.num_key_value_heads: must divide num_attention_heads "
        "(2), got 3" in problems
    )


def test_files_that_are_not_a_profile(tmp_path):
    path = tmp_path / "list.yaml"
    path.write_text("- 1\n- 2\n")
    assert load_problems(path) == [
        f"{path}: the file: must be a mapping of keys, got [1, 2] (list)"
    ]
    path.write_text("seed: [1\n")
    (problem,) = load_problems(path)
    assert problem.startswith(f"{path}: not valid YAML at line ")


@pytest.mark.parametrize("profile", ["qwen", "tiny", "smoke"])
def test_shipped_profiles_load_unchanged(profile):

    config = cfg.load_config(profile).as_dict()
    assert config.pop("_path") == str(cfg.config_path(profile))
    assert config == cfg.profile_settings(profile)


def test_typed_profile_is_frozen_and_complete(smoke_config):
    import dataclasses

    from verifiable_grpo.core import config_schema

    profile = smoke_config
    assert config_schema.section_names() == tuple(cfg.REQUIRED_SECTIONS) + cfg.OPTIONAL_SECTIONS
    assert profile.grpo.clip_epsilon == 0.2 and profile.exercise.group_sizes == (2, 8)
    assert profile.model.random_init.hidden_size == 32 and profile.warmstart.epochs == 3
    assert type(profile.sampling.temperature) is float
    with pytest.raises(dataclasses.FrozenInstanceError):
        profile.grpo.clip_epsilon = 0.3
    for cls in (
        config_schema.Profile,
        config_schema.Model,
        config_schema.RandomInit,
        config_schema.SFT,
        config_schema.GRPO,
    ):
        assert all(f.metadata["meaning"] for f in dataclasses.fields(cls))
    with pytest.raises(cfg.ConfigError, match="grpo.group_size: must be >= 2"):
        smoke_config.replaced(grpo={"group_size": 1})


def _pairs(section, raw, path=""):
    """(key path, typed value, dict value) of every field, optional ones included."""
    import dataclasses

    for f in dataclasses.fields(section):
        value = getattr(section, f.name)
        given = raw.get(f.name, f.metadata.get("absent"))
        if dataclasses.is_dataclass(value):
            yield from _pairs(value, given, f"{path}{f.name}.")
        else:
            yield f"{path}{f.name}", value, given


@pytest.mark.parametrize("profile", ["qwen", "tiny", "smoke"])
def test_typed_view_reads_what_the_dict_holds(profile):
    """Code reads by attribute; every value must be the mapping's, of the same type (a list
    reads as a tuple), so reading through the typed sections changes no number."""
    config = cfg.load_config(profile)
    pairs = list(_pairs(config, config))
    assert {
        "model.random_init.seed",
        "model.gguf_file",
        "exercise.group_sizes",
        "grpo.clip_epsilon",
    } <= {where for where, _, _ in pairs}
    for where, value, given in pairs:
        if isinstance(given, list):
            assert value == tuple(given) and type(value) is tuple, where
        elif isinstance(given, str | bool | int | float | type(None)):
            assert value == given and type(value) is type(given), where
        else:
            assert value == given and type(value) is type(given), where


def test_derived_profiles_are_new_checked_objects(smoke_config):
    """A changed setting is a new profile: typed again, checked again, the original intact."""
    hotter = smoke_config.replaced(grpo={"kl_coefficient": 0.05})
    assert (hotter.grpo.kl_coefficient, smoke_config.grpo.kl_coefficient) == (0.05, 0.02)
    assert (
        hotter["grpo"]["kl_coefficient"] == 0.05 and smoke_config["grpo"]["kl_coefficient"] == 0.02
    )
    decay = smoke_config.replaced(grpo={"weight_decay": 0}).grpo.weight_decay
    assert decay == 0.0 and type(decay) is float  # an integer for a number reads as that float
    llama = smoke_config.replaced(model={"architecture": "LlamaForCausalLM"})
    assert llama.model.architecture == "LlamaForCausalLM"

    def drop_architecture(settings):
        del settings["model"]["architecture"]

    assert llama.edited(drop_architecture).model.architecture == "Qwen2ForCausalLM"
    assert "architecture" not in llama.edited(drop_architecture)["model"]
    assert hotter.path == smoke_config.path


def test_validate_does_not_change_its_input(smoke_config):
    from verifiable_grpo.core import config_schema

    raw = {k: v for k, v in smoke_config.as_dict().items() if k != "_path"}
    raw["warmstart"]["learning_rate"] = "2e-4"
    assert config_schema.validate(raw, "x.yaml") == []
    assert raw["warmstart"]["learning_rate"] == "2e-4"
    assert config_schema.checked(raw, "x.yaml")["warmstart"]["learning_rate"] == 2e-4
    raw["model"]["random_init"], raw["grpo"] = 3, None
    assert config_schema.validate(raw, "x.yaml") == [
        "x.yaml: model.random_init: must be a mapping of keys, got 3 (int)",
        "x.yaml: grpo: must be a mapping of keys, got null",
    ]


# --------------------------------------------------------------------------- the CLI
def test_cli_reports_config_problems_without_a_traceback(tmp_path, capsys):
    from verifiable_grpo import cli

    path = edited_profile(tmp_path, {"grpo.clip_epsilon": "clip_epsilon: -0.2"})
    with pytest.raises(SystemExit) as caught:
        cli.main(["run", "--config", str(path), "--out", str(tmp_path / "run")])
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert err == f"error: {path}: grpo.clip_epsilon: must be in (0, 1), got -0.2\n"
    assert not (tmp_path / "run").exists()

    path = edited_profile(tmp_path, {"seed": "seed: abc", "device": "devcie: cpu"})
    with pytest.raises(SystemExit) as caught:
        cli.main(["grpo", "--config", str(path)])
    assert caught.value.code == 2
    assert capsys.readouterr().err.splitlines() == [
        "error: 3 problems in the config:",
        f"  {path}: seed: must be an integer, got 'abc' (str)",
        f"  {path}: device: missing (where to compute; a string, one of cpu, cuda, auto)",
        f"  {path}: devcie: unknown key; did you mean device?",
    ]


def test_cli_missing_config_is_a_one_line_error(capsys):
    from verifiable_grpo import cli

    with pytest.raises(SystemExit) as caught:
        cli.main(["evaluate", "--config", "no-such-profile"])
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: No config 'no-such-profile'; known profiles: [")
    assert err.count("\n") == 1


def test_cli_exit_code_from_a_shell(tmp_path):
    import os
    import subprocess
    import sys

    path = edited_profile(tmp_path, {"grpo.iterations": "iterations: 0"})
    env = os.environ | {"PYTHONPATH": str(cfg.PACKAGE_DIR.parent)}
    done = subprocess.run(
        [sys.executable, "-m", "verifiable_grpo", "report", "--config", str(path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert "grpo.iterations: must be >= 2" in done.stderr


def test_a_record_shows_paths_inside_the_repository_relative():
    from verifiable_grpo.core.config import repo_root, shown_path

    assert shown_path(repo_root() / "runs" / "part3" / "sft") == "runs/part3/sft"
    assert shown_path("/somewhere/else/model") == "/somewhere/else/model"


def test_provenance_names_the_program_and_config_relative_to_the_repository():
    from verifiable_grpo.core.config import load_config, provenance, repo_root

    record = provenance(
        load_config("tiny"), [str(repo_root() / "src/verifiable_grpo/__main__.py"), "run"]
    )
    assert record["command"] == "src/verifiable_grpo/__main__.py run"
    assert record["config_path"] == "configs/tiny.yaml"
    assert provenance(None, ["python", "-m", "x"])["command"] == "python -m x"  # as given
