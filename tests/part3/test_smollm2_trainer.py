"""The shared update loop: schedule, batch orders, and kill-and-continue equal to one run."""

import math

import pytest
import torch

from verifiable_grpo.part3.smollm2 import chat_rows
from verifiable_grpo.part3.smollm2 import trainer as T


def test_warmup_then_cosine_to_zero():
    f = T.warmup_cosine(steps=15, warmup=1)
    assert f(0) == 1.0 and f(14) == pytest.approx(0.5 * (1 + math.cos(math.pi * 13 / 14)))
    g = T.warmup_cosine(steps=50, warmup=2)
    assert (g(0), g(1), g(2)) == (0.5, 1.0, 1.0)


def test_batch_orders():
    batches = T.epoch_order(240, 15)
    assert sorted(i for b in batches for i in b) == list(range(240))  # one epoch exactly
    two = T.epoch_order(40, 5)  # 40 rows, 80 slots: each row twice
    assert sorted(i for b in two for i in b) == sorted(list(range(40)) * 2)
    assert all(len(set(b)) == 16 for b in T.random_batches(400, 24))
    assert T.random_batches(400, 3) == T.random_batches(400, 3)


def _micro(seed=0):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    return LlamaForCausalLM(
        LlamaConfig(
            vocab_size=40,
            hidden_size=16,
            intermediate_size=24,
            num_hidden_layers=1,
            num_attention_heads=2,
            num_key_value_heads=1,
            tie_word_embeddings=True,
        )
    )


ROWS = [
    {"ids": [1, 5 + i % 7, 9, 3 + i % 5, 2], "labels": [-100, -100, 9, 3 + i % 5, 2]}
    for i in range(20)
]


class Killed(Exception):
    pass


def test_a_killed_run_continues_to_the_same_bits(tmp_path):
    batches = T.random_batches(len(ROWS), 6, batch=4)
    schedule = T.warmup_cosine(6, 1)

    def run(out, stop_after=None):
        model = _micro()
        params = dict(model.named_parameters())
        seen = []

        def log(line):
            seen.append(line)
            if f"t update {stop_after}/6:" in line and not any("continuing" in s for s in seen):
                raise Killed

        result = T.train(
            model,
            params,
            ROWS,
            T.Updates(batches, 1e-2, schedule=schedule),
            T.Checkpoints(out, "t", every=2),
            log=log,
        )
        return model, result, seen

    whole, reference, _ = run(tmp_path / "a")
    with pytest.raises(Killed):
        run(tmp_path / "b", stop_after=5)  # killed after update 5: the newest pair is at 4
    resumed, result, seen = run(tmp_path / "b")
    assert any("continuing t after update 4" in s for s in seen)
    assert result["history"] == reference["history"]
    for (n, a), (_, b) in zip(whole.state_dict().items(), resumed.state_dict().items()):
        assert torch.equal(a, b), n


def test_a_crash_state_keeps_only_the_trained_tensors_and_refuses_another_run(tmp_path):
    from verifiable_grpo.core import crash

    batches = T.random_batches(len(ROWS), 4, batch=4)
    model = _micro()
    trained = {"model.embed_tokens.weight": model.get_input_embeddings().weight}
    every_2 = T.Checkpoints(tmp_path, "t", every=2)
    T.train(model, trained, ROWS, T.Updates(batches, 1e-2), every_2, log=lambda _: None)
    state, _ = crash.latest(tmp_path, "t")
    assert list(state["model"]) == ["tensors.model:embed_tokens:weight"]
    assert state["step"] == 2 and len(state["history"]) == 2
    with pytest.raises(ValueError, match="refusing to resume.*learning_rate"):
        T.train(
            _micro(),
            {"model.embed_tokens.weight": _micro().get_input_embeddings().weight},
            ROWS,
            T.Updates(batches, 5e-3),
            every_2,
            log=lambda _: None,
        )


def test_row_reinitialisation_is_seeded_and_changes_the_tied_head():
    a, b = _micro(), _micro()
    before = a.get_input_embeddings().weight[3].clone()
    chat_rows.reinitialise(a)
    chat_rows.reinitialise(b)
    assert torch.equal(a.get_input_embeddings().weight, b.get_input_embeddings().weight)
    assert torch.equal(a.get_output_embeddings().weight[1], a.get_input_embeddings().weight[1])
    assert torch.equal(a.get_input_embeddings().weight[3], before)  # other rows untouched
    table = torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    model = torch.nn.Module()
    model.get_input_embeddings = lambda: torch.nn.Embedding.from_pretrained(table)
    assert (
        chat_rows.cosine(model, 0, 1) == pytest.approx(1.0) and chat_rows.cosine(model, 1, 2) == 0.0
    )
