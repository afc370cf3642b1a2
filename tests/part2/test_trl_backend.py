"""The TRL backend's refusals (before any model loads) and its samplers inside
GRPOTrainer: on fixed rewards, dapo's and aero's groups and advantages are our
sampler's (training/samplers.py), row for row."""

import copy
import re

import pytest
import yaml

from verifiable_grpo import cli
from verifiable_grpo.core import files
from verifiable_grpo.core.config import ConfigError, resolve
from verifiable_grpo.part2 import gsm8k
from verifiable_grpo.part2 import lock as lock_lib
from verifiable_grpo.part2.trl import backend as trl_backend
from verifiable_grpo.part2.trl import commands, run_config
from verifiable_grpo.part2.trl import trainer as backend_trainer
from verifiable_grpo.training import objectives, samplers

CARD = "configs/part2/card-qwen3-8b-gsm8k.yaml"
SMOKE = "configs/part2/trl-smoke.yaml"


# --------------------------------------------------------------------------- the card
def test_card_configuration_pins_the_cards_setup():
    card = run_config.load_run_config(CARD)
    assert card["model"]["name_or_path"] == "Qwen/Qwen3-8B"
    assert card["model"]["revision"] == "b968826d9c46dd6066d109eabc6255188de91218"
    assert card["data"]["revision"] == "740312add88f781978c0658806c59bc2815b9866"
    assert card["model"]["lora"] == {
        "r": 16,
        "alpha": 32,
        "dropout": 0.0,
        "target_modules": "all-linear",
    }
    b = card["budget"]
    assert (b["steps"], b["prompts_per_step"], b["group_size"]) == (30, 4, 4)
    assert (b["learning_rate"], b["beta"], b["temperature"]) == (1e-6, 0.0, 1.0)
    assert (b["max_completion_length"], b["checkpoint_every_steps"]) == (1024, 5)
    assert card["heldout"]["problems"] == 500
    # one GPU: 16 rows per step as 4 micro-batches of 4, one generation per step
    assert run_config.step_layout(card, 1) == {
        "per_device_train_batch_size": 4,
        "gradient_accumulation_steps": 4,
        "steps_per_generation": 4,
        "num_generations": 4,
    }


def test_accelerate_configs_state_their_process_counts():
    assert run_config.read_process_count("configs/accelerate/one-gpu.yaml") == 1
    several = yaml.safe_load(resolve("configs/accelerate/multi-gpu-zero3.yaml").read_text())
    assert several["distributed_type"] == "DEEPSPEED"
    assert several["deepspeed_config"]["zero_stage"] == 3
    assert run_config.read_process_count("configs/accelerate/multi-gpu-zero3.yaml") == 4


# --------------------------------------------------------------------------- refusals
def test_cuda_config_without_cuda_is_refused_before_loading():
    card = run_config.load_run_config(CARD)
    with pytest.raises(ConfigError, match="no CUDA GPU; nothing was loaded"):
        run_config.check_machine(card, 1, "plain", cuda_count=0)


def test_process_count_must_fit_the_gpus_and_the_batch():
    card = run_config.load_run_config(CARD)
    with pytest.raises(ConfigError, match="num_processes is 4 but this machine has 2"):
        run_config.check_machine(card, 4, "plain", cuda_count=2)
    with pytest.raises(ConfigError, match="not 3: set accelerate"):
        run_config.check_machine(card, 3, "plain", cuda_count=8)
    run_config.check_machine(card, 2, "plain", cuda_count=2)  # 2 x (2 micro-batches of 4)
    assert run_config.step_layout(card, 2)["gradient_accumulation_steps"] == 2
    for sampler in ("dynamic", "aero"):
        with pytest.raises(ConfigError, match="one-gpu.yaml"):
            run_config.check_machine(card, 2, sampler, cuda_count=2)


# The run configuration's identity (trl-run-config.json, every checkpoint's identity): the
# committed configurations hash as they did before their keys moved to run_schema.py.
RUN_CONFIG_SHA256 = {
    SMOKE: "2a7a4a739cd5a7a0ebab666fbfa7ca3115a286286d55705ec10c9c314740f9b4",
    CARD: "152bd8a556b7a6c7a0bb88fecab594d5c59f01fe021f183c854726780ac1b387",
}


@pytest.mark.parametrize("path", sorted(RUN_CONFIG_SHA256))
def test_a_committed_run_configuration_keeps_its_identity_hash(path):
    from verifiable_grpo.core.config import config_hash, read_yaml

    config = run_config.load_run_config(path)
    assert config_hash(config) == RUN_CONFIG_SHA256[path]
    assert config["data"]["chat_template_kwargs"] == {} and config["_source_file"] == path
    # what the file says, and nothing else, besides the stated default of the kwargs
    raw = read_yaml(resolve(path))
    assert {k: v for k, v in config.items() if k != "_source_file"} == {
        **raw,
        "data": {"chat_template_kwargs": {}, **raw["data"]},
    }


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda c: c["budget"].pop("steps"), "budget.steps: missing"),
        (lambda c: c["budget"].update(steps="30"), "budget.steps: must be an integer"),
        (lambda c: c["model"].update(dtype="int8"), "model.dtype"),
        (lambda c: c["model"]["lora"].pop("alpha"), "model.lora.alpha: missing"),
        (lambda c: c["data"].pop("revision"), "data.revision: missing"),
        (lambda c: c["budget"].update(stepz=3), "budget.stepz: unknown key; did you mean steps?"),
        (lambda c: c.pop("schema"), "schema: missing"),
        (lambda c: c["budget"].update(temperature=0.7), "budget.temperature"),
        (lambda c: c.update(device="tpu"), "device: must be one of cpu, cuda"),
        (lambda c: c["trl_pins"].update(beta=0.04), "trl_pins.beta: set by the lock"),
        # an objective's own field, refused here rather than when the trainer is built
        (
            lambda c: c["trl_pins"].update(sapo_temperature_pos=2.0),
            "trl_pins.sapo_temperature_pos: set by the lock",
        ),
    ],
)
def test_bad_run_configuration_names_the_key(tmp_path, edit, message):
    config = yaml.safe_load(resolve(CARD).read_text())
    edit(config)
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(config))
    with pytest.raises(ConfigError, match=re.escape(message)):
        run_config.load_run_config(path)


def test_an_arm_trl_cannot_express_is_refused():
    lock, _ = lock_lib.read_lock()
    forged = copy.deepcopy(lock)
    forged["arms"]["part1"] = forged["arms"]["grpo"]  # exact prefix KL: no TRL field
    with pytest.raises(ConfigError, match="cannot run on the TRL backend"):
        trl_backend.arm_fields(forged, "part1")
    forged["arms"]["gspo"]["trl"]["config"]["importance_sampling_level"] = "token"
    with pytest.raises(ConfigError, match="differ from training/trl_parity"):
        trl_backend.arm_fields(forged, "gspo")
    assert trl_backend.arm_fields(lock, "dapo")["epsilon_high"] == 0.28


def test_changed_lock_is_refused_with_exit_2_before_compute(tmp_path, capsys):
    lock, sha = lock_lib.read_lock()
    path = tmp_path / "lock.json"
    files.save_json(
        lock_lib.pin_path(path), {"lock_sha256": sha, "choices": lock_lib._choices(lock)}
    )
    changed = copy.deepcopy(lock)
    changed["budget"]["learning_rate"] = 1e-6
    files.save_json(path, changed)
    code = cli.main(
        [
            "family",
            "run",
            "--backend",
            "trl",
            "--config",
            SMOKE,
            "--lock",
            str(path),
            "--out",
            str(tmp_path / "out"),
            "--arm",
            "grpo",
            "--seed",
            "11",
        ]
    )
    assert code == 2
    assert "differs from its pre-registration" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_cli_needs_a_config_and_builds_the_launch_line(tmp_path, capsys):
    assert (
        cli.main(
            [
                "family",
                "run",
                "--backend",
                "trl",
                "--out",
                str(tmp_path),
                "--arm",
                "grpo",
                "--seed",
                "11",
            ]
        )
        == 2
    )
    assert "needs --config" in capsys.readouterr().err
    args = cli.build_parser().parse_args(
        [
            "family",
            "run",
            "--backend",
            "trl",
            "--config",
            CARD,
            "--accelerate-config",
            "configs/accelerate/one-gpu.yaml",
            "--arm",
            "drgrpo",
            "--seed",
            "107",
        ]
    )
    line = commands.launch_command(args, "drgrpo", 107, "on_policy")
    assert line[1:5] == [
        "-m",
        "accelerate.commands.launch",
        "--config_file",
        "configs/accelerate/one-gpu.yaml",
    ]
    assert line[line.index("--config") + 1] == CARD
    assert "--accelerate-config" not in line


# --------------------------------------------------------------------------- samplers
def _scripted(document_id: str, draw: int) -> float:
    """Fixed rewards: item 0 always wrong, item 1 always right, the rest 1,0,0,1,..."""
    index = int(document_id.split("-")[1])
    if index in (0, 1):
        return float(index)
    return float(draw % 4 in (0, 3))


class _Script:
    def __init__(self):
        self.draws = {}

    def next(self, document_id):
        draw = self.draws.get(document_id, 0)
        self.draws[document_id] = draw + 1
        return _scripted(document_id, draw)


@pytest.fixture(scope="module")
def trainer(tmp_path_factory):
    config = run_config.load_run_config(SMOKE)
    lock, _ = lock_lib.read_lock()
    fields = trl_backend.arm_fields(lock, "dapo")
    trainer, _ = trl_backend.build_trainer(
        trl_backend.TrainerRequest(config, fields, "dapo", 11, 1, tmp_path_factory.mktemp("trl"))
    )
    return trainer


def _fake_generate(trainer, script):
    by_prompt = {e["prompt"][0]["content"]: e for e in trainer.family_pool}
    eos = trainer._tokenizer.eos_token_id

    def generate(prompts):
        texts, completion_ids = [], []
        for prompt in prompts:
            example = by_prompt[prompt[0]["content"]]
            right = script.next(example["document_id"]) == 1.0
            answer = gsm8k.final_integer(example["answer"])
            texts.append(f"#### {answer if right else answer + 1}")
            completion_ids.append([5, 6, eos] if right else [7, eos])
        prompt_ids = [[3, 4] for _ in prompts]
        return prompt_ids, completion_ids, None, texts, None, {}, None, []

    return generate


class _Reference:
    """Our sampler's source: the trainer's prompt rule, the same fixed rewards."""

    def __init__(self, prompts, script):
        self.prompt_source, self.script = prompts, script

    def prompts(self, count):
        return self.prompt_source.prompts(count)

    def draw(self, example, count, group_id):
        return [
            {
                "reward": self.script.next(example["document_id"]),
                "response_tokens": 0,
                "document_id": example["document_id"],
            }
            for _ in range(count)
        ]


@pytest.mark.parametrize("arm, first", [("dapo", [0, 2]), ("aero", [0, 3]), ("aero", [1, 5])])
def test_trainer_groups_equal_our_samplers(trainer, monkeypatch, arm, first):
    objective = objectives.get_objective(arm)
    monkeypatch.setattr(trainer, "family_objective", objective)
    monkeypatch.setattr(trainer, "family_telemetry", [])
    monkeypatch.setattr(trainer, "_generate", _fake_generate(trainer, _Script()))
    size, step = trainer.num_generations, 3
    examples = [trainer.family_pool[i] for i in first]
    inputs = [e for e in examples for _ in range(size)]
    output = trainer._sampled_batch(inputs, step, 0.0)

    source = _Reference(backend_trainer.TrainerSource(trainer, examples, step), _Script())
    batch = samplers.collect(
        source,
        objective.sampler,
        len(first),
        size,
        step,
        backend_trainer.step_generator(11, step, backend_trainer.CURATION_SEED_OFFSET),
    )
    record = trainer.family_telemetry[-1]
    assert record["document_ids"] == [g["document_id"] for g in batch.groups]
    assert record["rewards"] == [g["rewards"] for g in batch.groups]
    assert record["strategies"] == [g["strategy"] for g in batch.groups]
    assert record["rollouts_discarded"] == batch.cost.rollouts_discarded
    expected, real = [], []
    for g in batch.groups:
        one = len(g["rewards"]) == 1
        scored = objectives.with_advantages(
            g, objective, g["successes"] if one else None, g["observations"] if one else None
        )
        expected += scored["advantages"] + [0.0] * (size - len(g["rewards"]))
        real += [True] * len(g["rewards"]) + [False] * (size - len(g["rewards"]))
    assert output["advantages"].tolist() == pytest.approx(expected, abs=1e-6)
    assert (output["completion_mask"].sum(1) > 0).tolist() == real
    assert output["completion_ids"].shape[0] == len(first) * size
    if arm == "dapo":  # item 0's constant group was discarded and refilled
        assert "train-00000" not in record["document_ids"]
        assert all(len(set(r)) > 1 for r in record["rewards"])
        assert batch.cost.generation_batches > 1
    else:  # one-rollout groups keep a posterior advantage, padded to 4 slots
        assert any(s.startswith("single") for s in record["strategies"])
        assert not all(a == 0.0 for a in expected)


def test_a_study_folder_keeps_one_run_configuration(tmp_path):
    smoke = run_config.load_run_config(SMOKE)
    trl_backend.bind_run_config(tmp_path, smoke)
    trl_backend.bind_run_config(tmp_path, copy.deepcopy(smoke))  # the same content: fine
    other = copy.deepcopy(smoke)
    other["budget"]["learning_rate"] = 1e-6
    with pytest.raises(ConfigError, match="a study keeps one configuration"):
        trl_backend.bind_run_config(tmp_path, other)


def test_off_policy_regime_gets_old_logprobs_from_the_policy(trainer, monkeypatch):
    """two_updates (num_iterations 2): the batch carries the policy's log-probs at
    sampling time, so TRL's second update has a ratio to clip."""
    monkeypatch.setattr(trainer, "family_objective", objectives.get_objective("dapo"))
    monkeypatch.setattr(trainer, "family_telemetry", [])
    monkeypatch.setattr(trainer, "_generate", _fake_generate(trainer, _Script()))
    monkeypatch.setattr(trainer, "num_iterations", 2)
    examples = [trainer.family_pool[i] for i in (2, 3)]
    output = trainer._sampled_batch([e for e in examples for _ in range(4)], 0, 0.0)
    old = output["old_per_token_logps"]
    assert old.shape == output["completion_ids"].shape
    real = output["completion_mask"].bool()
    assert bool((old[real] < 0).all())  # log-probabilities of sampled tokens
