"""Lab 4 on SmolLM2: the pair checker, the pair refusals and sequence log-probabilities."""

from __future__ import annotations

import pytest
import torch

from verifiable_grpo.part3.smollm2 import preference
from verifiable_grpo.part3.smollm2.chat_data import END_ID


def test_the_checker_wants_the_answer_as_a_whole_word_and_a_stop():
    assert preference.answer_given("60", "18 + 42 = 60.", stopped=True)
    assert not preference.answer_given("60", "18 + 42 = 60.", stopped=False)
    assert not preference.answer_given("60", "The sum is 160.", stopped=True)
    assert not preference.answer_given("60", "It is 600 or 6.0", stopped=True)
    assert preference.answer_given("PASS", "PASS", stopped=True)
    assert not preference.answer_given("PASS", "PASSED", stopped=True)
    assert preference.answer_given("3500 g", "That is 3500 g.", stopped=True)


def test_the_pair_checker_is_lab_1s_exact_match():
    assert preference.exact_answer("60", "60", stopped=True)
    assert not preference.exact_answer("60", "60", stopped=False)
    assert not preference.exact_answer("60", "18 + 42 = 60.", stopped=True)


def test_cut_keeps_the_stop_token_and_nothing_after():
    assert preference.cut([5, 6, END_ID, 0, 0]) == ([5, 6, END_ID], True)
    assert preference.cut([5, 6, 7]) == ([5, 6, 7], False)


def _pair(**changes):
    pair = {
        "family": "addition",
        "user": "Add 18 and 42.",
        "expected": "60",
        "prompt_ids": [1, 2],
        "chosen_ids": [9, END_ID],
        "rejected_ids": [8, END_ID],
        "chosen": "60",
        "rejected": "61",
    }
    return {**pair, **changes}


def test_malformed_pairs_are_refused_before_training():
    preference.check_pairs([_pair()])
    with pytest.raises(ValueError, match="no preference pairs"):
        preference.check_pairs([])
    with pytest.raises(ValueError, match="identical"):
        preference.check_pairs([_pair(rejected_ids=[9, END_ID])])
    with pytest.raises(ValueError, match="the chosen reply '61' fails the checker"):
        preference.check_pairs([_pair(chosen="61")])
    with pytest.raises(ValueError, match="the rejected reply '60' passes the checker"):
        preference.check_pairs([_pair(rejected="60")])
    with pytest.raises(ValueError, match="the chosen reply '60' fails"):  # never stopped
        preference.check_pairs([_pair(chosen_ids=[9, 9])])


def test_sequence_logprobs_sum_the_reply_tokens_only():
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    model = LlamaForCausalLM(
        LlamaConfig(
            vocab_size=12,
            hidden_size=8,
            intermediate_size=16,
            num_hidden_layers=1,
            num_attention_heads=2,
            num_key_value_heads=1,
        )
    ).eval()
    prompts, replies = [[3, 4, 5], [6, 7]], [[8, 2], [9, 10, 11, 2]]
    with torch.no_grad():
        batched = preference.sequence_logprobs(model, prompts, replies)
        for row, (p, r) in enumerate(zip(prompts, replies)):  # each alone, by hand
            logp = torch.log_softmax(model(torch.tensor([p + r])).logits[0], dim=-1)
            by_hand = sum(float(logp[len(p) - 1 + t, token]) for t, token in enumerate(r))
            assert float(batched[row]) == pytest.approx(by_hand, abs=1e-5)


def test_the_dpo_loop_starts_at_log_2_and_widens_the_margin():
    """On a micro model and three hand-made pairs: at the reference the loss is log 2, and a
    few updates make the chosen replies gain on the rejected ones."""
    import math

    from transformers import LlamaConfig, LlamaForCausalLM

    from verifiable_grpo.part3.dpo_lab import dpo_smollm2

    torch.manual_seed(0)
    model = LlamaForCausalLM(
        LlamaConfig(
            vocab_size=12,
            hidden_size=8,
            intermediate_size=16,
            num_hidden_layers=1,
            num_attention_heads=2,
            num_key_value_heads=1,
        )
    ).eval()
    pairs = [
        _pair(prompt_ids=[3, 4], chosen_ids=[5, END_ID], rejected_ids=[6, 7, END_ID]),
        _pair(prompt_ids=[4, 3], chosen_ids=[8, END_ID], rejected_ids=[9, END_ID]),
        _pair(prompt_ids=[5, 5], chosen_ids=[10, 11, END_ID], rejected_ids=[10, END_ID]),
    ]
    reference = dpo_smollm2.all_logprobs(model, pairs, batch=2)
    settings = {**dpo_smollm2.DEFAULTS, "lr": 1e-2, "epochs": 8, "batch": 3, "beta": 0.5}
    history = dpo_smollm2.train(model, pairs, reference, settings, log=lambda _: None)
    assert len(history) == 8
    assert history[0]["loss"] == pytest.approx(math.log(2), abs=1e-6)
    assert history[-1]["loss"] < history[0]["loss"] - 0.1
    chosen, rejected = dpo_smollm2.all_logprobs(model, pairs, batch=3)
    assert bool(((chosen - reference[0]) > (rejected - reference[1])).all())


def test_collect_pairs_samples_each_prompt_with_its_own_seed(monkeypatch):
    """Prompt k of the rows tried gets the request's seed + k; a prompt with a right and a
    wrong reply gives a pair, one with only right replies gives none."""
    asked = []
    right, wrong = [40, END_ID], [50, END_ID]

    def sample(model, tokenizer, prompts, sampling):
        asked.append(sampling)
        return [[right, right] if len(asked) == 2 else [right, wrong]]

    class Tokens:
        def encode(self, text, add_special_tokens=False):
            return [1, 2]

        def decode(self, ids, skip_special_tokens=False):
            return "60" if ids[0] == 40 else "61"

    monkeypatch.setattr(preference, "sample_replies", sample)
    rows = [{"family": "sum", "user": f"q{k}", "reply": "60"} for k in range(4)]
    request = preference.ReplySampling(samples=2, temperature=0.7, max_new_tokens=9, seed=100)
    pairs, tried = preference.collect_pairs(None, Tokens(), rows, 2, request, log=None)
    assert tried == 3 and [p["user"] for p in pairs] == ["q0", "q2"]
    assert [s.seed for s in asked] == [100, 101, 102]
    assert {(s.samples, s.temperature, s.max_new_tokens) for s in asked} == {(2, 0.7, 9)}
    assert pairs[0]["chosen_ids"] == right and pairs[0]["rejected_ids"] == wrong
