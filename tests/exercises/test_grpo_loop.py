"""The GRPO loop checker passes a loop written here the way a learner would (one response at
a time, plain torch, no package loss), and names each common mistake seeded into it."""

from __future__ import annotations

import pytest
import torch

from verifiable_grpo.exercises import check_grpo_loop, grpo_loop
from verifiable_grpo.exercises.micro_task import EOS, MicroTask, answer, micro_policy
from verifiable_grpo.training.losses import exact_prefix_kl


def learner_loop(mistake=None, rewards_dtype=torch.float64):
    """A learner-style iteration; `mistake` seeds one error, written independently of the
    package's seeded mistakes."""

    def iteration(policy, reference, optimizer, task, group_size, epsilon, beta, updates):
        samples = [[task.sample(policy, p) for _ in range(group_size)] for p in task.prompts]
        rewards = torch.tensor(
            [[task.reward(p, r) for r, _ in group] for p, group in zip(task.prompts, samples)],
            dtype=rewards_dtype,
        )
        mean = rewards.mean(1, keepdim=True)
        std = rewards.std(1, keepdim=True, correction=1 if mistake == "sample_std" else 0)
        centred = rewards if mistake == "no_centring" else rewards - mean
        advantages = centred / (std + 1e-8)
        losses = []
        for _ in range(1 if mistake == "one_update" else updates):
            if mistake != "no_zero_grad":
                optimizer.zero_grad()
            prompt_terms, all_tokens = [], []
            for prompt, group, group_advantages in zip(task.prompts, samples, advantages):
                response_terms = []
                for (response, old), a in zip(group, group_advantages):
                    logits = task.logits(policy, prompt, response)
                    with torch.no_grad():
                        frozen = task.logits(reference, prompt, response)
                    current = torch.log_softmax(logits, -1)[range(len(response)), response]
                    if mistake == "old_recomputed":
                        old = current.detach()
                    ratio = torch.exp(current - old)
                    pick = torch.maximum if mistake == "clip_wrong_side" else torch.minimum
                    surrogate = pick(ratio * a, ratio.clamp(1 - epsilon, 1 + epsilon) * a)
                    sign = -1.0 if mistake == "kl_sign" else 1.0
                    tokens = -surrogate + sign * beta * exact_prefix_kl(logits, frozen)
                    all_tokens.append(tokens)
                    response_terms.append(tokens.mean())
                prompt_terms.append(torch.stack(response_terms).mean())
            if mistake == "batch_token_mean":
                loss = torch.cat(all_tokens).mean()
            else:
                loss = torch.stack(prompt_terms).mean()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        return {"rewards": rewards, "advantages": advantages, "losses": losses}

    return iteration


def test_the_micro_task_gives_every_iteration_something_to_learn_from():
    trace = grpo_loop.reference_trace()
    for rewards, advantages, losses in zip(trace.rewards, trace.advantages, trace.losses):
        assert 0 < rewards.mean() < 1
        assert (advantages != 0).any()
        assert len(losses) == grpo_loop.UPDATES
    # The second update of the first set moves ratios past the clip: the clip side matters.
    assert grpo_loop.differences(grpo_loop.reference_trace("clip_wrong_side"), trace)[0][:2] == (
        1,
        "losses",
    )


def test_the_micro_task_verifies_and_samples_reproducibly():
    task = MicroTask()
    prompt = task.prompts[0]
    assert task.reward(prompt, [answer(prompt), EOS]) == 1.0
    assert task.reward(prompt, [EOS, answer(prompt)]) == 0.0  # after EOS does not count
    policy = micro_policy()
    first, second = MicroTask().sample(policy, prompt), MicroTask().sample(policy, prompt)
    assert first[0] == second[0] and torch.equal(first[1], second[1])
    rescored = torch.log_softmax(task.logits(policy, prompt, first[0]), -1)[
        range(len(first[0])), first[0]
    ]
    assert torch.allclose(rescored, first[1], atol=1e-12, rtol=0)


def test_batched_logits_match_one_response_at_a_time():
    task, policy = MicroTask(), micro_policy()
    pairs = [((1, 2, 4), [3, 0, EOS]), ((2, 2), [5]), ((4, 1, 5, 3), [1, 1, 1, 1])]
    for (prompt, response), batched in zip(pairs, task.logits_of_many(policy, pairs)):
        assert torch.allclose(batched, task.logits(policy, prompt, response), atol=1e-12, rtol=0)


def test_the_checker_passes_a_learner_style_loop_and_the_package_loop(capsys):
    assert check_grpo_loop(learner_loop()).passed
    assert "all 13 checks pass" in capsys.readouterr().out
    assert check_grpo_loop(grpo_loop.grpo_iteration, verbose=False).passed


def test_rewards_kept_in_float32_are_no_mistake():
    assert check_grpo_loop(learner_loop(rewards_dtype=torch.float32), verbose=False).passed


@pytest.mark.parametrize("mistake", sorted(grpo_loop.MISTAKES))
def test_the_checker_names_each_seeded_mistake(mistake, capsys):
    result = check_grpo_loop(learner_loop(mistake))
    assert result.attempted and not result.passed
    out = capsys.readouterr().out
    assert f"hint: {grpo_loop.MISTAKES[mistake]}" in out
    others = [m for m in grpo_loop.MISTAKES if m != mistake]
    assert not any(grpo_loop.MISTAKES[m] in out for m in others)


def test_a_stub_a_crash_and_a_moved_reference_are_reported(capsys):
    def stub(*args, **kwargs):
        raise NotImplementedError

    assert not check_grpo_loop(stub).attempted
    assert "not attempted yet" in capsys.readouterr().out

    def crash(*args, **kwargs):
        raise KeyError("advantages")

    result = check_grpo_loop(crash, verbose=False)
    assert result.attempted and not result.passed and "raised KeyError" in result.failures[0]

    def steps_the_reference(policy, reference, optimizer, task, **settings):
        out = learner_loop()(policy, reference, optimizer, task, **settings)
        with torch.no_grad():
            next(reference.parameters()).add_(1.0)
        return out

    result = check_grpo_loop(steps_the_reference, verbose=False)
    assert not result.passed and grpo_loop.FROZEN_REFERENCE in result.failures


def test_an_unknown_loop_gets_the_hint_of_the_stage_where_it_parts():
    def member_major(policy, reference, optimizer, task, group_size, **settings):
        # Samples response 0 of every prompt, then response 1...: other draws, other rewards.
        by_member = [[task.sample(policy, p) for p in task.prompts] for _ in range(group_size)]
        rewards = torch.tensor(
            [
                [task.reward(p, by_member[g][i][0]) for g in range(group_size)]
                for i, p in enumerate(task.prompts)
            ],
            dtype=torch.float64,
        )
        return {"rewards": rewards, "advantages": rewards * 0, "losses": [0.0, 0.0]}

    failures = "\n".join(check_grpo_loop(member_major, verbose=False).failures)
    assert grpo_loop.STAGE_HINTS["rewards"] in failures
    assert not any(hint in failures for hint in grpo_loop.MISTAKES.values())


# --------------------------------------------------------------------------- the real task
def test_the_package_loop_runs_on_stock_arithmetic_with_the_verifier(
    micro_model, random_config, learning_view_dir, one_thread
):
    import copy

    from verifiable_grpo.exercises.stock_task import StockTask
    from verifiable_grpo.task import data, prompts, verifier

    policy, tokenizer = micro_model
    examples = data.read_examples(learning_view_dir, "train")[:2]
    task = StockTask(tokenizer, examples, random_config, seed=0)
    prompt, problem = task.prompts[0], examples[0]["problem"]
    right = prompts.response_ids(
        tokenizer, f'{{"final_stock": {verifier.compute_final_stock(problem)}}}', random_config
    )
    wrong = prompts.response_ids(
        tokenizer, f'{{"final_stock": {verifier.compute_final_stock(problem) + 1}}}', random_config
    )
    assert (
        task.reward(prompt, right),
        task.reward(prompt, wrong),
        task.reward(prompt, right[:-1]),
    ) == (1.0, 0.0, 0.0)  # without EOS: no reward

    response, old = task.sample(policy, prompt)
    rescored = torch.log_softmax(task.logits(policy, prompt, response), -1)[
        range(len(response)), response
    ]
    assert float((rescored.detach() - old).abs().max()) <= 2e-4  # the training loop's own check

    reference = copy.deepcopy(policy).requires_grad_(False)
    before = [p.clone() for p in reference.parameters()]
    optimizer = torch.optim.AdamW(policy.parameters(), lr=1e-3)
    out = grpo_loop.grpo_iteration(policy, reference, optimizer, task, group_size=2)
    assert out["rewards"].shape == out["advantages"].shape == (2, 2)
    assert len(out["losses"]) == 2 and all(torch.isfinite(torch.tensor(out["losses"])))
    assert all(torch.equal(a, b) for a, b in zip(before, reference.parameters()))
