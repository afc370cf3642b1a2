"""Lab 1's data rules, rendering contract, labels, loss and plain-text probe, on cases a
reader can check by hand. Prompts are parsed back here, so a template change that broke a
family's rule fails these tests."""

import math
import random
import re
from collections import Counter

import pytest
import torch

from verifiable_grpo.part3.sft_lab import probe as P
from verifiable_grpo.part3.smollm2 import chat_data as D

KILO = {"kW": "W", "kg": "g", "MPa": "kPa", "L": "mL", "km": "m", "kN": "N"}  # each x 1000


class Scripted:
    """A stand-in for random.Random whose randint returns the scripted values in turn."""

    def __init__(self, *values):
        self.values = list(values)

    def randint(self, low, high):
        value = self.values.pop(0)
        assert low <= value <= high
        return value


def parse(pattern, text):
    found = re.fullmatch(pattern, text)
    assert found, (pattern, text)
    return found.groups()


def test_each_family_follows_its_rule():
    rng, positions = random.Random(5), Counter()
    for _ in range(200):
        row = D.example("conversion", rng)
        value, large, small = parse(r"Express ([0-9.]+) (\w+) in (\w+)\.", row["user"])
        assert KILO[large] == small and row["reply"] == f"{round(float(value) * 1000)} {small}"

        row = D.example("addition", rng)
        a, b = map(int, parse(r"Add (\d+) and (\d+)\.", row["user"]))
        assert 10 <= a <= 99 and 10 <= b <= 99 and row["reply"] == str(a + b)

        row = D.example("extraction", rng)
        fields = parse(r"Log [PKC]-\d\d: (.*)\. Give the bearing temperature\.", row["user"])[
            0
        ].split("; ")
        bearing = [f for f in fields if f.startswith("bearing ")]
        assert len(fields) == 3 and len(bearing) == 1
        assert row["reply"] == bearing[0][len("bearing ") :]
        positions[fields.index(bearing[0])] += 1

        row = D.example("limit", rng)
        alarm, measured = map(
            int,
            parse(r"Alarm limit (\d+) C, measured (\d+) C\. Answer PASS or FAIL\.", row["user"]),
        )
        assert row["reply"] == ("PASS" if measured <= alarm else "FAIL")

        row = D.example("sorting", rng)
        parts = parse(r"Put these in alphabetical order: (.*)\.", row["user"])[0].split(", ")
        assert len(set(parts)) == 3 and row["reply"] == ", ".join(sorted(parts))
    assert set(positions) == {0, 1, 2}  # the wanted field moves around


def test_a_reading_equal_to_the_limit_passes():
    assert D.example("limit", Scripted(80, 0))["reply"] == "PASS"
    assert D.example("limit", Scripted(80, 1))["reply"] == "FAIL"
    assert (
        D.example("limit", Scripted(65, -30))["user"]
        == "Alarm limit 65 C, measured 35 C. Answer PASS or FAIL."
    )


def test_an_unknown_family_is_named():
    with pytest.raises(ValueError, match="unknown family 'division'"):
        D.example("division", random.Random(0))


def test_splits_have_the_specified_sizes_and_no_shared_prompt():
    for quick, size in ((True, 240), (False, 400)):
        train, held = D.split(quick)
        assert len(train) == size and len(held) == 50
        assert len(D.prompts(train)) == size and len(D.prompts(held)) == 50
        assert not D.prompts(train) & D.prompts(held)
        assert Counter(r["family"] for r in held) == dict.fromkeys(D.FAMILIES, 10)
        assert Counter(r["family"] for r in train) == dict.fromkeys(D.FAMILIES, size // 5)
        assert [r["family"] for r in train[:5]] == list(D.FAMILIES)  # rounds: prefixes balanced
    assert D.make_data(3, seed=1) == D.make_data(3, seed=1)
    assert D.make_data(3, seed=1) != D.make_data(3, seed=4)


def test_excluded_prompts_are_avoided_and_exhaustion_is_an_error():
    first = D.make_data(20, seed=7)
    again = D.make_data(20, seed=7, exclude=D.prompts(first))
    assert not D.prompts(first) & D.prompts(again) and len(again) == 100
    # 10 parts give 10 * 9 * 8 = 720 ordered triples: the 721st sorting prompt cannot exist
    with pytest.raises(ValueError, match="no unused sorting prompt"):
        D.make_data(721, seed=0)


def test_the_rendering_contract():
    expected = (
        "<|im_start|>system\ns<|im_end|>\n<|im_start|>user\nu<|im_end|>\n<|im_start|>assistant\n"
    )
    assert D.render_prompt("u", "s") == expected
    assert D.render_prompt("u") == D.render_prompt("u", D.SYSTEM)


class CharTokenizer:
    """One id per character, except that `merge` (if given) becomes one token: a stand-in
    for a BPE merge across the prompt/reply boundary. '<|im_end|>' is id 2."""

    def __init__(self, merge=None):
        self.merge = merge

    def encode(self, text, add_special_tokens=False):
        ids, i = [], 0
        while i < len(text):
            if text.startswith("<|im_end|>", i):
                ids.append(2)
                i += len("<|im_end|>")
            elif self.merge and text.startswith(self.merge, i):
                ids.append(1000)
                i += len(self.merge)
            else:
                ids.append(ord(text[i]) + 3)
                i += 1
        return ids

    def decode(self, ids, skip_special_tokens=False):
        return "".join("<|im_end|>" if i == 2 else chr(i - 3) for i in ids)


def test_labels_cover_the_reply_and_end_of_turn_only():
    row = {"user": "u", "reply": "ab"}
    encoded = D.encode(CharTokenizer(), row, system="s")
    n = encoded["prompt_length"]
    assert n == len(CharTokenizer().encode(D.render_prompt("u", "s")))
    assert encoded["labels"][:n] == [-100] * n
    assert encoded["labels"][n:] == [ord("a") + 3, ord("b") + 3, 2]
    assert (
        D.encode(CharTokenizer(), row, mask_prompt=False)["labels"]
        == D.encode(CharTokenizer(), row, mask_prompt=False)["ids"]
    )
    table = D.token_table(CharTokenizer(), encoded)
    assert [t["token"] for t in table if t["target"]] == ["a", "b", "<|im_end|>"]
    assert table[-1]["position"] == len(encoded["ids"]) - 1


def test_rows_and_encoded_rows_hold_exactly_their_record_fields():
    row = D.example("addition", random.Random(0))
    assert set(row) == set(D.ChatRow.__annotations__) and row["family"] == "addition"
    encoded = D.encode(CharTokenizer(), row, system="s")
    assert set(encoded) == set(D.EncodedRow.__annotations__)
    assert len(encoded["labels"]) == len(encoded["ids"]) > encoded["prompt_length"]


def test_a_merge_across_the_boundary_is_refused():
    with pytest.raises(ValueError, match="BPE merge across the prompt/reply seam"):
        D.encode(CharTokenizer(merge="\nab"), {"user": "u", "reply": "ab"})


def test_collate_pads_right_and_the_loss_is_a_token_sum():
    rows = [{"ids": [5, 6, 7], "labels": [-100, 6, 7]}, {"ids": [5, 8], "labels": [-100, 8]}]
    batch = D.collate(rows)
    assert batch["input_ids"].tolist() == [[5, 6, 7], [5, 8, 0]]
    assert batch["labels"].tolist() == [[-100, 6, 7], [-100, 8, -100]]
    assert batch["attention_mask"].tolist() == [[1, 1, 1], [1, 1, 0]]

    model = micro_llama()
    torch.nn.init.zeros_(model.lm_head.weight)  # every next token has probability 1/64
    for grad in (True, False):  # the whole-logits path and the target-positions path
        with torch.set_grad_enabled(grad):
            total, count = D.batch_loss(model, rows)
        assert count == 3
        assert torch.isclose(total, torch.tensor(3 * math.log(64.0)))
    assert D.trained_fraction(rows) == 3 / 3
    assert (
        D.trained_fraction([{"ids": [1, 2, 3, 4, 5], "labels": [-100, -100, -100, 4, 5]}]) == 2 / 4
    )


def test_the_probe_shots_are_correct_and_the_items_follow_the_rules():
    for line in P.SHOTS["addition"].splitlines():
        a, b, total = map(int, parse(r"(\d+) \+ (\d+) = (\d+)", line))
        assert a + b == total
    for line in P.SHOTS["limit"].splitlines():
        alarm, measured, verdict = parse(r"alarm (\d+), measured (\d+) -> (PASS|FAIL)", line)
        assert verdict == ("PASS" if int(measured) <= int(alarm) else "FAIL")
    items = P.probe_items("addition")
    assert len(items) == 50 and items == P.probe_items("addition")
    for query, answer in items:
        a, b = map(int, parse(r"(\d+) \+ (\d+) =", query))
        assert answer == str(a + b)
    for query, answer in P.probe_items("limit"):
        alarm, measured = map(int, parse(r"alarm (\d+), measured (\d+) ->", query))
        assert answer == ("PASS" if measured <= alarm else "FAIL")
    with pytest.raises(ValueError, match="the plain probe covers addition, limit"):
        P.probe_items("sorting")


@pytest.mark.parametrize(
    "text, word", [(" PASS\n12 + 3", "PASS"), ("\n\n 81 = x", "81"), ("  \n", "")]
)
def test_first_word(text, word):
    assert P.first_word(text) == word


def test_the_probe_scores_against_the_majority_baseline():
    class AlwaysPass:  # appends " PASS" to whatever it is given
        def generate(self, input_ids, max_new_tokens, **_):
            tail = torch.tensor([ord(c) + 3 for c in " PASS"]).expand(len(input_ids), -1)
            return torch.cat([input_ids, tail], dim=1)

    answers = [answer for _, answer in P.probe_items("limit")]
    result = P.plain_probe(AlwaysPass(), CharTokenizer(), "limit")
    assert result["exact"] == answers.count("PASS") / 50
    passes = answers.count("PASS")
    assert result["majority_baseline"] == max(passes, 50 - passes) / 50
    assert result["predictions"] == ["PASS"] * 10


def micro_llama(tied: bool = False):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    return LlamaForCausalLM(
        LlamaConfig(
            vocab_size=64,
            hidden_size=32,
            intermediate_size=48,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            tie_word_embeddings=tied,
        )
    )


def _ragged_rows():
    # ragged lengths, prompt positions skipped, targets at different places in each row
    return [
        {"ids": [5, 6, 7, 8, 9, 10], "labels": [-100, -100, -100, 8, 9, 10]},
        {"ids": [3, 4, 11], "labels": [-100, 4, 11]},
        {"ids": [12, 13, 14, 15, 16], "labels": [-100, -100, -100, -100, 16]},
    ]


def _whole_logits_loss(model, rows):
    batch = D.collate(rows)
    logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
    return torch.nn.functional.cross_entropy(
        logits[:, :-1].flatten(0, 1), batch["labels"][:, 1:].flatten(), reduction="sum"
    )


def _output_rows(model, rows, grad: bool) -> list[int]:
    """How many positions the output layer saw while batch_loss ran."""
    seen = []
    hook = model.lm_head.register_forward_hook(lambda m, args, out: seen.append(args[0].shape))
    with torch.set_grad_enabled(grad):
        D.batch_loss(model, rows)
    hook.remove()
    return [shape.numel() // shape[-1] for shape in seen]


def test_a_frozen_output_layer_gets_logits_at_the_target_positions_only():
    rows = _ragged_rows()
    model = micro_llama()
    assert _output_rows(model, rows, grad=True) == [3 * 6]  # trained: every position
    assert _output_rows(model, rows, grad=False) == [6]  # evaluation: the 6 targets
    model.lm_head.weight.requires_grad_(False)
    assert _output_rows(model, rows, grad=True) == [6]  # frozen (LoRA): the 6 targets


@pytest.mark.parametrize("tied", [False, True])
def test_the_target_positions_path_gives_the_whole_logits_loss_and_gradients(tied):
    rows = _ragged_rows()
    model = micro_llama(tied)
    model.get_output_embeddings().weight.requires_grad_(False)  # as under LoRA (tied: so is
    trained = [p for p in model.parameters() if p.requires_grad]  # the input embedding)
    reference = _whole_logits_loss(model, rows)
    expected = torch.autograd.grad(reference, trained)
    total, count = D.batch_loss(model, rows)
    assert count == 6
    # on SmolLM2 the bits are equal (measured); kernels may round a smaller matmul otherwise
    torch.testing.assert_close(total, reference, rtol=1e-6, atol=0)
    for got, want in zip(torch.autograd.grad(total, trained), expected):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-7)


def test_a_batch_without_targets_sums_to_zero():
    model = micro_llama()
    with torch.no_grad():
        total, count = D.batch_loss(model, [{"ids": [1, 2, 3], "labels": [-100, -100, -100]}])
    assert count == 0 and total.item() == 0.0


def test_the_letters_family_holds_out_its_own_words():
    from verifiable_grpo.part3.smollm2 import chat_data

    train, held_out = chat_data.letters_split()
    assert len(train) == 48 and len(held_out) == chat_data.LETTERS_HELD_OUT
    word = lambda row: row["user"].rsplit(" ", 1)[1].rstrip("?")
    assert {word(r) for r in train}.isdisjoint(word(r) for r in held_out)
    assert all(
        r["reply"] == str(len(word(r))) and r["family"] == "letters" for r in train + held_out
    )
    assert chat_data.letters_split() == (train, held_out)  # seeded
    with pytest.raises(ValueError, match="train_rows must be between 1 and 54"):
        chat_data.letters_split(55)


def test_the_sixth_family_joins_the_five_without_moving_them():
    from verifiable_grpo.part3.smollm2 import chat_data

    train, held_out = chat_data.split(quick=True)
    mixed, mixed_held = chat_data.split_with_letters(quick=True)
    assert [r for r in mixed if r["family"] != "letters"] == train  # same rows, same order
    assert mixed_held[: len(held_out)] == held_out
    assert [r["family"] for r in mixed[:6]] == [*chat_data.FAMILIES, "letters"]
    assert chat_data.prompts(mixed).isdisjoint(chat_data.prompts(mixed_held))
