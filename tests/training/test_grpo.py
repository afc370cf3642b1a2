"""The GRPO loop on the micro random Qwen2: ratios, clipping, the frozen reference, the
reduction of the loss, rollout bookkeeping and bit-for-bit interrupt/resume."""

from __future__ import annotations

import copy
import random
import shutil

import pytest
import torch

from verifiable_grpo.core import checkpoint, schedule
from verifiable_grpo.core import model as model_lib
from verifiable_grpo.core.config import load_config, read_json, save_json
from verifiable_grpo.core.runfolder import MODES
from verifiable_grpo.training import grpo, losses, rollout

WARMSTART = "checkpoints/warmstart-resume.safetensors"


pytestmark = pytest.mark.usefixtures("one_thread")


def micro_config(**changes):
    """The smoke profile on the micro random policy, with `changes` (sections key by key)."""
    changes["model"] = {"source": "random", **changes.get("model", {})}
    return load_config("smoke").replaced(**changes)


def make_run_folder(folder, learning_view_dir, config):
    """OUT with a learning view and a warm start (the micro random policy)."""
    shutil.copytree(learning_view_dir, folder / "learning-data")
    model, _ = model_lib.load_base(config)
    model_lib.save_policy(model, folder / WARMSTART, {"branch": "warmstart"})
    return folder


@pytest.fixture(scope="module")
def runs(tmp_path_factory, learning_view_dir):
    """One smoke-size branch run three ways: continuous, interrupt, resume."""
    torch.set_num_threads(1)
    config = micro_config()
    out = make_run_folder(tmp_path_factory.mktemp("grpo-run"), learning_view_dir, config)
    records = {}
    for scramble, mode in enumerate(MODES):
        # Each run starts from another process RNG state: the result must not depend on it.
        random.seed(100 + scramble)
        torch.manual_seed(100 + scramble)
        torch.rand(scramble + 1)
        records[mode] = grpo.run_grpo_branch(config, out, mode=mode, progress=False)
    states = {
        mode: checkpoint.load_state(out / "checkpoints" / f"grpo-{mode}.pt.gz") for mode in MODES
    }
    return {"config": config, "out": out, "records": records, "states": states}


# --------------------------------------------------------------------------- budget, order
def test_branch_budgets_come_from_the_config():
    config = load_config("tiny")
    assert grpo.branch_budget(config) == {
        "branch": "grpo",
        "group_size": 4,
        "iterations": 100,
        "interrupt_at": 40,
        "prompts_per_iteration": 4,
        "updates_per_rollout": 2,
        "total_updates": 200,
    }
    g2 = grpo.branch_budget(config, "grpo-g2")
    g8 = grpo.branch_budget(config, "grpo-g8")
    assert (g2["group_size"], g2["iterations"], g2["interrupt_at"], g2["total_updates"]) == (
        2,
        20,
        8,
        40,
    )
    assert (g8["group_size"], g8["iterations"]) == (8, 20)
    assert grpo.branch_budget(config, "grpo-g8", iterations=3, interrupt_at=1)["iterations"] == 3
    with pytest.raises(ValueError, match="not in exercise.group_sizes"):
        grpo.branch_budget(config, "grpo-g3")
    with pytest.raises(ValueError, match="unknown GRPO branch"):
        grpo.branch_budget(config, "sft")
    with pytest.raises(ValueError, match="names group size 2"):
        grpo.branch_budget(config, "grpo-g2", group_size=8)
    with pytest.raises(ValueError, match="interrupt_at"):
        grpo.branch_budget(config, "grpo", interrupt_at=100)


def test_prompt_order_is_without_replacement_and_resumes_exactly():
    order = grpo.PromptOrder(10, seed=5)
    first_pass = order.take(4) + order.take(4) + order.take(2)
    assert sorted(first_pass) == list(range(10))
    saved = copy.deepcopy(order.state())
    continued = [order.take(3) for _ in range(5)]  # crosses into a third pass
    assert order.passes == 3
    resumed = grpo.PromptOrder(10, seed=5)
    resumed.load(saved)
    assert [resumed.take(3) for _ in range(5)] == continued
    assert grpo.PromptOrder(10, seed=5).take(10) == first_pass
    with pytest.raises(ValueError, match="covers 10 prompts"):
        grpo.PromptOrder(11, seed=5).load(saved)


# --------------------------------------------------------------------------- one update
def _policy_reference_groups(config, learning_view_dir, advantages):
    from verifiable_grpo.task import data

    policy, tokenizer = model_lib.load_base(config)
    reference = copy.deepcopy(policy).requires_grad_(False)
    examples = data.read_examples(learning_view_dir, "train")[:2]
    generator = torch.Generator().manual_seed(0)
    groups = [
        rollout.sample_group(
            rollout.Sampler(policy, tokenizer, config, generator),
            e,
            len(advantages),
            group_id=f"p{i}",
        )
        for i, e in enumerate(examples)
    ]
    for group in groups:  # real rollouts, constructed advantages (a random policy earns none)
        group["advantages"] = list(advantages)
    return policy, reference, groups


def test_ratio_is_one_on_the_first_update_and_clipping_acts_on_the_second(learning_view_dir):
    # Bit-exact unit ratios need the update to read whole rows as generation did; a shared
    # prompt reorders the sums (ratios within float rounding of 1, tested in test_batched).
    # The learning rate is large enough to leave the clip interval.
    config = micro_config(
        sampling={"use_kv_cache": False}, grpo={"share_prompts": False, "learning_rate": 0.05}
    )
    policy, reference, groups = _policy_reference_groups(
        config, learning_view_dir, [1.0, -1.0, 1.0, -1.0]
    )
    reference_digest = model_lib.model_digest(reference)
    rows = [r for g in groups for r in g["responses"]]
    assert rollout.verify_captured_logprobs(policy, rows, 2e-4)["max_abs_difference"] == 0.0
    optimizer = torch.optim.AdamW(model_lib.unique_parameters(policy), lr=0.05)
    scheduler = schedule.make_scheduler(
        optimizer, 2, config["grpo"]["warmup_fraction"], config["grpo"]["final_lr_fraction"]
    )
    trainee = grpo.Trainee(policy, reference, optimizer, scheduler)
    first = grpo.grpo_update(trainee, groups, config)
    second = grpo.grpo_update(trainee, groups, config)
    # Update 1: the policy is the behaviour policy, so every ratio is exactly 1 and the
    # policy equals the reference, so the exact KL is exactly 0.
    assert first["ratio_min"] == first["ratio_max"] == 1.0
    assert all(r == 1.0 for resp in first["responses"] for r in resp["ratios"])
    assert (
        first["clip_low_fraction"],
        first["clip_high_fraction"],
        first["outside_fraction"],
        first["mean_exact_kl"],
    ) == (0.0, 0.0, 0.0, 0.0)
    # Balanced advantages and unit ratios: the surrogate's mean is -mean(A) = 0.
    assert first["surrogate"] == 0.0
    # Update 2: the old log-probs are still the captured ones, the policy has moved.
    assert second["outside_fraction"] > 0
    assert second["clip_low_fraction"] + second["clip_high_fraction"] > 0
    assert second["mean_exact_kl"] > 0
    assert second["learning_rate"] == schedule.learning_rate(1, 2, 0.05, 0.1, 0.1)
    # The reference never moved and never received a gradient.
    assert model_lib.model_digest(reference) == reference_digest
    assert all(p.grad is None and not p.requires_grad for p in reference.parameters())
    assert model_lib.model_digest(policy) != reference_digest


def test_accumulated_gradient_equals_the_batched_objective(learning_view_dir):
    """Per-response backward with weight 1/(P*G) == one grpo_objective on the padded batch."""
    config = micro_config(sampling={"use_kv_cache": False})
    policy, reference, groups = _policy_reference_groups(config, learning_view_dir, [1.0, -0.5])
    with torch.no_grad():  # move the policy away from the reference so the KL term acts
        for p in model_lib.unique_parameters(policy):
            p.add_(0.02 * torch.randn(p.shape, generator=torch.Generator().manual_seed(1)))
    grpo.accumulate_gradients(policy, reference, groups, config)
    accumulated = [p.grad.clone() for p in model_lib.unique_parameters(policy)]
    policy.zero_grad(set_to_none=True)

    rows = [(r, g["advantages"][i]) for g in groups for i, r in enumerate(g["responses"])]
    width = max(len(r["response_ids"]) for r, _ in rows)
    current, old, kl, mask = [], [], [], []
    for row, _ in rows:
        n = len(row["response_ids"])
        ids = torch.tensor([row["prompt_ids"] + row["response_ids"]])
        start = len(row["prompt_ids"]) - 1
        cur = policy(input_ids=ids).logits.float()[:, start : start + n]
        with torch.no_grad():
            ref = reference(input_ids=ids).logits.float()[:, start : start + n]
        lp = torch.log_softmax(cur, -1).gather(-1, torch.tensor([row["response_ids"]])[..., None])
        pad = (0, width - n)
        current.append(torch.nn.functional.pad(lp[0, :, 0], pad))
        old.append(torch.nn.functional.pad(torch.tensor(row["behaviour_logprobs"]), pad))
        kl.append(torch.nn.functional.pad(losses.exact_prefix_kl(cur, ref)[0], pad))
        mask.append(torch.arange(width) < n)
    loss, _ = losses.grpo_objective(
        losses.TokenLogProbs(torch.stack(current), torch.stack(old), torch.stack(mask)),
        torch.tensor([a for _, a in rows]),
        torch.stack(kl),
        group_size=2,
        clip=losses.ClipRange(config["grpo"]["clip_epsilon"]),
        kl_coefficient=config["grpo"]["kl_coefficient"],
    )
    loss.backward()
    for got, want in zip(accumulated, (p.grad for p in model_lib.unique_parameters(policy))):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-9)


# --------------------------------------------------------------------------- the branch
def test_interrupt_then_resume_equals_continuous_bit_for_bit(runs):
    states = runs["states"]
    assert checkpoint.compare_states(states["continuous"], states["resume"]) == []
    # The comparison is not vacuous: the interrupted state differs from the final one.
    assert checkpoint.compare_states(states["interrupt"], states["continuous"])
    assert states["interrupt"]["iteration"] == runs["config"]["grpo"]["interrupt_at"] == 2
    assert states["continuous"]["updates"] == 4 * 2
    assert "timings" in states["resume"]
    out = runs["out"]
    digest = model_lib.state_dict_digest(states["resume"]["model"])
    reloaded, _ = model_lib.reload_policy(
        out / "checkpoints" / "grpo-resume.safetensors", runs["config"]
    )
    assert model_lib.model_digest(reloaded) == digest
    assert runs["records"]["resume"]["final_model_digest"] == digest
    assert digest != runs["records"]["continuous"]["initial_model_digest"]


def test_rollouts_are_recorded_once_each(runs):
    config, out, state = runs["config"], runs["out"], runs["states"]["continuous"]
    section = config["grpo"]
    consumed = state["consumed_rollout_ids"]
    assert (
        len(consumed)
        == len(set(consumed))
        == (section["iterations"] * section["prompts_per_iteration"] * section["group_size"])
    )
    files = sorted((out / "rollouts" / "grpo-continuous").iterdir())
    assert [f.name for f in files] == [f"iteration-{i:04d}.json" for i in range(4)]
    assert [f.name for f in sorted((out / "rollouts" / "grpo-resume").iterdir())] == [
        "iteration-0002.json",
        "iteration-0003.json",
    ]
    evidence = read_json(files[0])
    recorded = [r["rollout_id"] for g in evidence["groups"] for r in g["responses"]]
    assert recorded == consumed[: len(recorded)]
    response = evidence["groups"][0]["responses"][0]
    for key in (
        "prompt_ids",
        "response_ids",
        "text",
        "finish_reason",
        "behaviour_logprobs",
        "tokenization_valid",
        "verifier",
        "policy_digest",
        "seconds",
    ):
        assert key in response
    assert (
        evidence["policy_digest"]
        == response["policy_digest"]
        == (runs["records"]["continuous"]["initial_model_digest"])
    )
    assert evidence["verification"]["max_abs_difference"] <= section["verify_tolerance"]
    assert [len(u["responses"]) for u in evidence["updates"]] == [8, 8]


def test_learning_record_and_reference(runs):
    record = runs["records"]["continuous"]
    config = runs["config"]
    assert (
        record["reference_digest_before"]
        == record["reference_digest_after"]
        == (record["initial_model_digest"])
    )
    assert len(record["history"]) == len(record["telemetry"]) == 4
    rates = [u["learning_rate"] for h in record["history"] for u in h["updates"]]
    assert rates == [
        schedule.learning_rate(s, 8, config["grpo"]["learning_rate"], 0.1, 0.1) for s in range(8)
    ]
    step = record["telemetry"][0]
    for key in (
        "mean_reward",
        "zero_variance_fraction",
        "mean_exact_kl",
        "clip_low_fraction",
        "clip_high_fraction",
        "grad_norm",
        "learning_rate",
        "loss",
        "document_ids",
    ):
        assert key in step and key in record["history"][0]
    assert set(step["times"]) >= {
        "generation_seconds",
        "verification_seconds",
        "optimisation_seconds",
        "iteration_seconds",
    }
    assert "times" not in record["history"][0]
    assert record["costs"]["state_bytes"] > 0
    assert record["timings"]["total_seconds"] >= record["timings"]["loop_seconds"] > 0
    # The random policy never answers: every group is constant, never given a winner.
    assert all(h["zero_variance_fraction"] == 1.0 for h in record["history"])
    assert all(a == 0.0 for h in record["history"] for g in h["groups"] for a in g["advantages"])
    resume = runs["records"]["resume"]
    assert resume["iterations_run"] == [2, 4]
    assert resume["history"] == record["history"]


def _copy_without_resume(runs, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(runs["out"], out, ignore=shutil.ignore_patterns("grpo-resume*"))
    return out


def test_a_rollout_is_never_consumed_twice(runs, tmp_path):
    out = _copy_without_resume(runs, tmp_path)
    path = out / "checkpoints" / "grpo-interrupt.pt.gz"
    state = checkpoint.load_state(path)
    state["consumed_rollout_ids"].append("grpo/iteration-0002/prompt-01/response-03")
    path.unlink()
    saved = checkpoint.save_state(path, state)
    record_path = out / "learning" / "grpo-interrupt.json"  # as if the project had written it
    record = read_json(record_path)
    record["costs"]["state_sha256"] = saved["sha256"]
    save_json(record_path, record, overwrite=True)
    with pytest.raises(ValueError, match="consumed twice.*iteration-0002/prompt-01/response-03"):
        grpo.run_grpo_branch(runs["config"], out, mode="resume", progress=False)


def test_resume_refuses_another_run(runs, tmp_path):
    out = _copy_without_resume(runs, tmp_path)
    config = runs["config"].replaced(grpo={"kl_coefficient": 0.05})
    with pytest.raises(ValueError, match="belongs to another run.*config_sha256"):
        grpo.run_grpo_branch(config, out, mode="resume", progress=False)
    with pytest.raises(ValueError, match="belongs to another run.*group_size"):
        other_size = runs["config"].replaced(grpo={"group_size": 3})
        grpo.run_grpo_branch(other_size, out, mode="resume", progress=False)
    torch.set_num_threads(2)  # other arithmetic: a bitwise resume is not promised
    with pytest.raises(ValueError, match="belongs to another run.*compute"):
        grpo.run_grpo_branch(runs["config"], out, mode="resume", progress=False)


def test_existing_evidence_is_never_overwritten(runs, tmp_path):
    with pytest.raises(FileExistsError, match="never overwritten"):
        grpo.run_grpo_branch(runs["config"], runs["out"], mode="continuous", progress=False)
    with pytest.raises(FileNotFoundError, match="warm start"):
        grpo.run_grpo_branch(runs["config"], tmp_path, mode="continuous", progress=False)
    out = _copy_without_resume(runs, tmp_path)
    (out / "checkpoints" / "grpo-interrupt.pt.gz").unlink()
    with pytest.raises(FileNotFoundError, match="interrupt first"):
        grpo.run_grpo_branch(runs["config"], out, mode="resume", progress=False)


def test_command_line_runs_an_exercise_branch(tmp_path, learning_view_dir, capsys):
    from verifiable_grpo.cli import main

    config = micro_config()
    make_run_folder(tmp_path, learning_view_dir, config)
    config_file = tmp_path / "micro.yaml"
    config_file.write_text("extends: smoke\nmodel:\n  source: random\n")
    assert (
        main(
            [
                "grpo",
                "--config",
                str(config_file),
                "--out",
                str(tmp_path),
                "--branch",
                "grpo-g2",
                "--mode",
                "interrupt",
            ]
        )
        == 0
    )
    record = read_json(tmp_path / "learning" / "grpo-g2-interrupt.json")
    assert record["budget"]["group_size"] == 2
    assert record["iterations_run"] == [0, config["exercise"]["interrupt_at"]]
    assert [len(g["rewards"]) for g in record["history"][0]["groups"]] == [2, 2]
    assert "GRPO grpo-g2 (interrupt)" in capsys.readouterr().out


def test_after_iteration_sees_every_finished_iteration_once(tmp_path, learning_view_dir):
    """The hook a study uses for a held-out curve: called after each iteration with the
    policy as that iteration left it."""
    torch.set_num_threads(1)
    config = micro_config()
    out = make_run_folder(tmp_path, learning_view_dir, config)
    seen = []
    record = grpo.run_grpo_branch(
        config,
        out,
        mode="continuous",
        progress=False,
        after_iteration=lambda run: seen.append(
            (run.iteration, model_lib.model_digest(run.policy))
        ),
    )
    assert [i for i, _ in seen] == list(range(1, len(record["history"]) + 1))
    assert len({d for _, d in seen}) == len(seen)  # every update moved the policy
