"""Every TRL GRPOConfig comes from trl_config.grpo_config: each of its four callers builds,
for the recorded settings, the config it built before by hand (the old calls are copied
below as they were), and the builder refuses an option declared twice or by the wrong side.

One field is compared through TRL's own reading of it: the hand-written Part I configs left
`epsilon_high` unset, which GRPOTrainer reads as `epsilon` (grpo_trainer.py: `epsilon_high
if not None else epsilon`); trl_arm writes the clip's upper end out.
"""

from __future__ import annotations

import types

import pytest

from verifiable_grpo.core.config import load_config
from verifiable_grpo.part1 import band_bench, bench, bench_trl, fixed_prompts, fixed_prompts_trl
from verifiable_grpo.part2 import lock as lock_lib
from verifiable_grpo.part2.trl import backend as trl_backend
from verifiable_grpo.part2.trl import run_config
from verifiable_grpo.training import objectives, trl_config, trl_loss, trl_parity

trl = pytest.importorskip("trl")

LOCK = "configs/part2/lock.json"
SMOKE = "configs/part2/trl-smoke.yaml"


def _as_read(args) -> dict:
    fields = args.to_dict()
    if fields["epsilon_high"] is None:
        fields["epsilon_high"] = fields["epsilon"]
    return fields


# --------------------------------------------------------------------------- the old calls
def _old_bench(config: dict, shape: dict, sets: int, warmup: int, out: str):
    cfg, g = config, shape["group_size"]
    return trl.GRPOConfig(
        output_dir=out,
        per_device_train_batch_size=shape["prompts"] * g,
        gradient_accumulation_steps=1,
        steps_per_generation=1,
        num_generations=g,
        max_completion_length=shape["max_new_tokens"],
        temperature=1.0,
        top_p=1.0,
        top_k=0,
        num_iterations=shape["updates_per_rollout"],
        beta=shape["kl_coefficient"],
        loss_type="grpo",
        epsilon=cfg.grpo.clip_epsilon,
        learning_rate=cfg.grpo.learning_rate,
        weight_decay=cfg.grpo.weight_decay,
        max_grad_norm=cfg.grpo.max_grad_norm,
        lr_scheduler_type="constant",
        max_steps=(sets + warmup) * shape["updates_per_rollout"],
        use_cpu=True,
        bf16=False,
        fp16=False,
        report_to="none",
        logging_steps=10_000,
        save_strategy="no",
        shuffle_dataset=False,
        seed=cfg.seed,
        disable_tqdm=True,
        dataloader_num_workers=0,
    )


def _old_fixed_prompts(out: str, setting, cfg):
    g = setting.group_size
    return trl.GRPOConfig(
        output_dir=out,
        per_device_train_batch_size=setting.prompts * g,
        gradient_accumulation_steps=1,
        steps_per_generation=1,
        num_generations=g,
        max_completion_length=cfg.tokens.max_response,
        temperature=1.0,
        top_p=1.0,
        top_k=0,
        num_iterations=setting.updates_per_rollout,
        beta=setting.kl_coefficient,
        loss_type="grpo",
        epsilon=cfg.grpo.clip_epsilon,
        learning_rate=setting.learning_rate,
        weight_decay=cfg.grpo.weight_decay,
        max_grad_norm=cfg.grpo.max_grad_norm,
        lr_scheduler_type="constant",
        warmup_steps=0,
        max_steps=setting.iterations * setting.updates_per_rollout,
        use_cpu=True,
        bf16=False,
        fp16=False,
        report_to="none",
        logging_steps=1,
        save_strategy="no",
        shuffle_dataset=False,
        seed=cfg.seed,
        disable_tqdm=True,
        dataloader_num_workers=0,
    )


def _old_backend(config, fields, seed, updates, layout, folder, progress, generation):
    budget, cuda = config["budget"], config["device"] == "cuda"
    return trl.GRPOConfig(
        output_dir=str(folder / "checkpoints"),
        **layout,
        **fields,
        **{**config["trl_pins"], **generation},
        num_iterations=updates,
        max_completion_length=budget["max_completion_length"],
        temperature=budget["temperature"],
        learning_rate=budget["learning_rate"],
        lr_scheduler_type=budget["lr_scheduler"],
        warmup_steps=budget["warmup_steps"],
        weight_decay=budget["weight_decay"],
        max_grad_norm=budget["max_grad_norm"],
        max_steps=budget["steps"] * updates,
        save_strategy="steps",
        save_steps=budget["checkpoint_every_steps"] * updates,
        save_only_model=False,
        logging_steps=1,
        report_to=config.get("report_to", "none"),
        seed=seed,
        data_seed=seed,
        use_cpu=not cuda,
        bf16=cuda and config["model"]["dtype"] == "bfloat16",
        activation_checkpointing=budget["gradient_checkpointing"],
        disable_tqdm=not progress,
        dataloader_num_workers=0,
        log_completions=False,
        chat_template_kwargs=config["data"]["chat_template_kwargs"],
    )


def _old_stand_in(arm, max_completion_length: int, micro_batches: int):
    return trl.GRPOConfig(
        output_dir="unused",
        report_to=[],
        use_cpu=True,
        **{
            **trl_parity.STUDY_FIELDS,
            "beta": 0.0,  # in STUDY_FIELDS then, always overridden by the arm's
            "gradient_accumulation_steps": micro_batches,
            "generation_batch_size": None,
            "steps_per_generation": micro_batches,
            "max_completion_length": max_completion_length,
            **arm.config,
        },
    )


# --------------------------------------------------------------------------- each caller
def test_bench_and_band_bench_build_the_configs_they_built_by_hand(tmp_path):
    recorded = bench.BenchRun(bench.bench_config("tiny"), [], sets=5, warmup=1)
    band = band_bench.band_run(sets=3, warmup=1)
    for run in (recorded, band):
        new = bench_trl.trl_arguments(run, str(tmp_path), "cpu")
        old = _old_bench(run.config, run.shape, run.sets, run.warmup, str(tmp_path))
        assert _as_read(new) == _as_read(old)
    assert new.num_generations == band_bench.SHAPE["group_size"] == 8  # the band's own shape


def test_the_fixed_prompt_run_builds_the_config_it_built_by_hand(tmp_path):
    setting = fixed_prompts.RECORDED_SETTING
    cfg = fixed_prompts.setting_config(load_config("tiny"), setting)
    new = fixed_prompts_trl._grpo_args(
        str(tmp_path), setting, cfg, types.SimpleNamespace(type="cpu")
    )
    old = _old_fixed_prompts(str(tmp_path), setting, cfg)
    assert _as_read(new) == _as_read(old)
    assert new.use_bias_correction_kl is True and new.loss_type == "grpo"


def test_the_family_backend_builds_the_config_it_built_by_hand(tmp_path):
    for arm in trl_parity.trl_arms():
        for regime in ("on_policy", "two_updates"):
            lock, _, config, fields = trl_backend.check_request(
                LOCK, SMOKE, lock_lib.LockedRun(arm, 11, regime)
            )
            updates = lock["regimes"][regime]["updates_per_rollout"]
            layout = run_config.step_layout(config, 1)
            request = (config, fields, 11, updates, layout, tmp_path, False)
            old = _old_backend(*request, config["_generation"])
            new = trl_backend.TrainerRequest(config, fields, arm, 11, updates, tmp_path)
            assert trl_backend.grpo_config(new, layout).to_dict() == old.to_dict(), arm


def test_the_loss_stand_in_builds_the_config_it_built_by_hand():
    names = [n for n in objectives.OBJECTIVES if trl_parity_expressible(n)]
    assert {"grpo", "dapo", "dr_grpo", "cispo", "sapo", "grpo_tis"} <= set(names)
    for name in names:
        arm = trl_parity.trl_arm(objectives.get_objective(name))
        new = trl_loss._stand_in(arm, 8, 2).args
        assert new.to_dict() == _old_stand_in(arm, 8, 2).to_dict(), name


def trl_parity_expressible(name: str) -> bool:
    try:
        trl_parity.trl_arm(objectives.get_objective(name))
    except trl_parity.NotExpressibleInTRL:
        return False
    return True


# --------------------------------------------------------------------------- refusals
def test_an_option_is_declared_once_and_by_its_owner():
    fields = trl_config.part1_fields(0.2, 0.02)
    run = {"output_dir": "unused", "use_cpu": True}
    with pytest.raises(ValueError, match="'beta' is set by the objective and by the run"):
        trl_config.grpo_config(fields, {**run, "beta": 0.0})
    with pytest.raises(ValueError, match="no loss_type: derive them with trl_parity.trl_arm"):
        trl_config.grpo_config({k: v for k, v in fields.items() if k != "loss_type"}, run)
    with pytest.raises(ValueError, match="'sapo_temperature_pos' belongs to the objective"):
        trl_config.grpo_config(fields, {**run, "sapo_temperature_pos": 2.0})
    with pytest.raises(ValueError, match="'learning_rate' is not an objective's field"):
        trl_config.grpo_config({**fields, "learning_rate": 1e-6}, run)
    args = trl_config.grpo_config(fields, run)
    assert (args.loss_type, args.beta, args.epsilon_high) == ("grpo", 0.02, 0.2)
