"""Each hack detector fires on its hack and stays quiet on a well-formed response; the
batch signals count silent groups and a policy term that is zero by construction."""

from __future__ import annotations

import pytest

from verifiable_grpo.training import hack_detectors

GOOD = '<think>47 + 38: 7 + 8 = 15, carry 1; 4 + 3 + 1 = 8.</think>\n{"final_stock": 85}'
QUESTION = "What is 47 + 38?"


@pytest.mark.parametrize(
    "name, text, finish",
    [
        ("empty_thinking", '<think>  </think>{"final_stock": 85}', "eos"),
        ("copied_thinking", '<think>what is 47 +  38?</think>{"final_stock": 85}', "eos"),
        ("copied_thinking", '<think>47 + 38</think>{"final_stock": 85}', "eos"),
        ("repeated_answer", '{"final_stock": 85}{"final_stock": 85}', "eos"),
        ("unclosed_block", '<think>7 + 8 = 15 {"final_stock": 85}', "eos"),
        ("truncated", "<think>7 + 8 = 15, carry", "length"),
    ],
)
def test_each_detector_fires_on_its_hack(name, text, finish):
    assert hack_detectors.flags(text, finish, QUESTION)[name]


@pytest.mark.parametrize("text", [GOOD, '{"final_stock": 85}'])
def test_no_detector_fires_on_a_well_formed_response(text):
    assert not any(hack_detectors.flags(text, "eos", QUESTION).values())


def test_detectors_that_need_no_question_and_a_key_inside_the_block():
    # the working may name the key; only answers outside the block count as repeats
    text = '<think>the "final_stock" is 85</think>{"final_stock": 85}'
    assert not hack_detectors.repeated_answer(text)
    assert not hack_detectors.copied_thinking(GOOD, None)
    assert hack_detectors.unclosed_block("<think>a</think><think>b")
    assert not hack_detectors.unclosed_block("no block at all")


def _group(document_id, rewards, advantages, texts, finishes=None):
    finishes = finishes or ["eos"] * len(texts)
    return {
        "document_id": document_id,
        "rewards": rewards,
        "advantages": advantages,
        "zero_variance": len(set(rewards)) == 1,
        "responses": [{"text": t, "finish_reason": f} for t, f in zip(texts, finishes)],
    }


def test_the_iteration_signals_are_shares():
    groups = [
        _group("a", [1.0, 0.0], [1.0, -1.0], [GOOD, "<think></think>{}"]),
        _group("b", [0.0, 0.0], [0.0, 0.0], ["<think>x", GOOD], ["length", "eos"]),
    ]
    found = hack_detectors.signals(groups, {"a": QUESTION, "b": QUESTION})
    shares = found["hack_shares"]
    assert shares["empty_thinking"] == 0.25 and shares["truncated"] == 0.25
    assert shares["unclosed_block"] == 0.25 and shares["copied_thinking"] == 0.0
    assert found["silent_group_share"] == 0.5
    assert found["loss_zero_by_construction"] is False


def test_a_batch_of_silent_groups_has_a_policy_term_zero_by_construction():
    groups = [_group(d, [0.0, 0.0], [0.0, 0.0], ["x", "y"]) for d in "ab"]
    found = hack_detectors.signals(groups)
    assert found["silent_group_share"] == 1.0 and found["loss_zero_by_construction"] is True


def test_every_history_entry_carries_the_signals_and_the_terms_apart():
    from verifiable_grpo.training.grpo_record import history_entry

    group = _group("a", [1.1, 0.0], [1.0, -1.0], [GOOD, '{"final_stock": 1}'])
    group.update(reward_std=0.55, group_id="a/0")
    for row, terms in zip(
        group["responses"], ({"answer": 1.0, "format": 1.0}, {"answer": 0.0, "format": 0.0})
    ):
        row.update(response_tokens=5, tokenization_valid=True, reward_terms=terms)
    update = {
        k: 0.0 for k in ("mean_exact_kl", "mean_entropy", "clip_low_fraction", "clip_high_fraction")
    } | {"grad_norm": 1.0, "learning_rate": 1e-6, "loss": 0.5}
    entry = history_entry(
        0, [group], "digest", {"max_abs_difference": 0.0}, [update], {"a": QUESTION}
    )
    assert entry["signals"]["silent_group_share"] == 0.0
    assert entry["mean_reward_terms"] == {"answer": 0.5, "format": 0.5}
    assert entry["signals"]["answer_silent_signal_share"] == 0.0  # the answers differ
    only_format = _group("b", [0.1, 0.0], [1.0, -1.0], [GOOD, "<think>x"])
    only_format.update(reward_std=0.05, group_id="b/0")
    for row, form in zip(only_format["responses"], (1.0, 0.0)):
        row.update(response_tokens=5, tokenization_valid=True)
        row["reward_terms"] = {"answer": 0.0, "format": form}
    both = history_entry(0, [group, only_format], "d", {"max_abs_difference": 0.0}, [update])
    assert both["signals"]["answer_silent_signal_share"] == 0.5
    # a run whose responses carry no separate terms records none (as every run before)
    for row in group["responses"]:
        del row["reward_terms"]
    assert "mean_reward_terms" not in history_entry(
        0, [group], "d", {"max_abs_difference": 0.0}, [update]
    )
