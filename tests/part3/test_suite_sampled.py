"""Lab 6 sampled: the clustered bootstrap on toy tables, seeded sampling that reproduces, and
refuse completions withheld end to end (a stand-in model, no weights)."""

import json
import sys
import types

import numpy as np
import pytest
import torch

from verifiable_grpo import cli
from verifiable_grpo.evaluation.statistics import percentile_bootstrap
from verifiable_grpo.part3.suite_lab import catalogue as S
from verifiable_grpo.part3.suite_lab import sampled as L
from verifiable_grpo.part3.suite_lab import stats as T


def test_whole_items_move_together_in_the_clustered_bootstrap():
    # two items, five samples each: one always passes, one never. A resample of two items
    # has mean 0, 1/2 or 1 (probabilities 1/4, 1/2, 1/4), so the 95 % interval is [0, 1].
    table = [[1] * 5, [0] * 5]
    assert T.clustered_bootstrap(table, np.random.default_rng(0)) == (0.0, 1.0)
    # treating the ten samples as ten items: Binomial(10, 1/2)/10 has P(<= 0.1) = 0.011 and
    # P(<= 0.2) = 0.055, so the 2.5 % quantile is 0.2 (and 0.8 by symmetry): too narrow
    assert percentile_bootstrap(np.ravel(table), np.random.default_rng(0)) == (0.2, 0.8)


def test_equal_clusters_give_the_item_bootstrap_of_the_row_means():
    table = np.array([[1, 0, 1], [0, 0, 0], [1, 1, 1], [0, 1, 0]])
    clustered = T.clustered_bootstrap(table, np.random.default_rng(3))
    of_means = percentile_bootstrap(table.mean(axis=1), np.random.default_rng(3))
    assert clustered == pytest.approx(of_means, abs=1e-12)
    assert T.clustered_bootstrap([[1, 1], [1, 1]], np.random.default_rng(0)) == (1.0, 1.0)


@pytest.mark.parametrize("table", [[1, 0, 1], [], [[]]])
def test_a_table_that_is_not_items_by_samples_is_refused(table):
    with pytest.raises(ValueError, match="items, samples"):
        T.clustered_bootstrap(table, np.random.default_rng(0))


def test_clustered_category_table():
    suite = [{"category": c, "prompt": f"{c}{k}"} for c, n in S.sizes().items() for k in range(n)]
    always = [[True] * 5 for _ in suite]
    once = [[True] + [False] * 4 for _ in suite]
    rows = {
        (r["category"], r["model"]): r
        for r in T.clustered_category_table(suite, {"a": always, "b": once})
    }
    assert len(rows) == 2 * (len(S.CATEGORIES) + 1)
    assert rows[("overall", "a")]["n"] == 40 and rows[("refuse", "b")]["n"] == 5
    assert rows[("format", "a")]["pass"] == 1.0 and rows[("format", "a")]["clustered"] == (1.0, 1.0)
    # every item passes exactly one sample in five: no item-to-item spread, so the
    # clustered interval has zero width, while the completion-level one does not
    assert rows[("task", "b")]["pass"] == 0.2 and rows[("task", "b")]["clustered"] == (0.2, 0.2)
    low, high = rows[("task", "b")]["unclustered"]
    assert low < 0.2 < high and rows[("task", "b")]["samples"] == 5


def tiny_model():
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=40,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=64,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=0,
    )
    return LlamaForCausalLM(config).eval()


def test_the_same_seed_samples_the_same_tokens_and_leaves_the_callers_rng_alone():
    model, rows = tiny_model(), [[5, 6, 7], [8, 9], [10, 11, 12, 13]]
    small = L.Sampling(max_new_tokens=12, batch=2)
    torch.manual_seed(123)
    first = L.sampled_ids(model, rows, seed=7001, sampling=small)
    after = torch.rand(3)
    torch.manual_seed(123)
    again = L.sampled_ids(model, rows, seed=7001, sampling=small)
    assert first == again and torch.equal(torch.rand(3), after)
    assert L.sampled_ids(model, rows, seed=7002, sampling=small) != first
    assert len(first) == 3 and all(0 < len(ids) <= 12 for ids in first)


def test_temperature_zero_is_refused_before_any_compute():
    with pytest.raises(ValueError, match="greedy"):
        L.sampled_ids(None, [[1]], seed=0, sampling=L.Sampling(temperature=0.0))


def test_the_sampled_command_never_prints_or_saves_a_refuse_completion(
    tmp_path, monkeypatch, capsys
):
    marker = "UNSAFE-COMPLETION-MARKER"
    refuse = [k for k, i in enumerate(S.SUITE) if i["category"] == "refuse"]

    class Tokenizer:  # one "token" per item: its index in the suite
        def encode(self, text, add_special_tokens):
            return [next(k for k, i in enumerate(S.SUITE) if i["prompt"] in text)]

        def decode(self, ids, skip_special_tokens):
            k, seed = ids
            if k in refuse:  # the first two rounds refuse, the other three comply
                return f"{marker} I can't help" if seed < 7003 else f"{marker} step one"
            return "I don't know"

    seeds_seen = []

    def stand_in(model, rows, seed, temperature=L.TEMPERATURE):
        seeds_seen.append(seed)
        return [[row[0], seed] for row in rows]

    cache, policy = tmp_path / "cache", tmp_path / "policy"
    cache.mkdir(), policy.mkdir()
    (cache / "source.json").write_text(json.dumps({"gguf_file": "stand-in", "wheel": None}))
    (policy / "config.json").write_text("{}")
    fake_transformers = types.ModuleType("transformers")
    fake_transformers.AutoModelForCausalLM = types.SimpleNamespace(
        from_pretrained=lambda path: types.SimpleNamespace(eval=lambda: "tuned model")
    )
    monkeypatch.setitem(sys.modules, "transformers", fake_transformers)
    from verifiable_grpo.models import smollm2 as loader

    monkeypatch.setattr(loader, "load", lambda cache=None: ("model", Tokenizer()))
    monkeypatch.setattr(L, "sampled_ids", stand_in)
    assert (
        cli.main(
            [
                "lab",
                "suite-sampled",
                "--out",
                str(tmp_path / "out"),
                "--cache",
                str(cache),
                "--policy",
                str(policy),
            ]
        )
        == 0
    )
    written = (tmp_path / "out" / f"{L.NAME}-metrics.json").read_text()
    assert marker not in written and marker not in capsys.readouterr().out
    assert seeds_seen == list(L.SEEDS) * 2  # the recorded seeds, the same for both models
    record = json.loads(written)
    assert record["seeds"] == list(L.SEEDS) and record["settings"]["temperature"] == 0.7
    for outcome in record["results"].values():
        assert [outcome["transcripts"][k] for k in refuse] == [[None] * 5] * 5
        assert [outcome["passed"][k] for k in refuse] == [[True, True, False, False, False]] * 5
    rows = {(r["category"], r["model"]): r for r in record["categories"]}
    assert rows[("refuse", "instruct")]["pass"] == 0.4
    assert rows[("refuse", "instruct")]["clustered"] == [0.4, 0.4]  # every item alike
