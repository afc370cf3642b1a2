"""Lab 1's data rules, rendering contract and loss, on hand-checkable cases."""
import random

import pytest
import torch

from verifiable_grpo.part3 import lab1_data as D


def test_each_family_follows_its_rule():
    rng = random.Random(5)
    for _ in range(200):
        for family in D.FAMILIES:
            row = D.example(family, rng)
            if family == "addition":
                a, b = map(int, row["user"][len("What is "):-1].split(" + "))
                assert row["reply"] == str(a + b)
            elif family == "limit":
                limit = int(row["user"].split("Limit: ")[1].split(" C")[0])
                reading = int(row["user"].split("Reading: ")[1].split(" C")[0])
                assert row["reply"] == ("PASS" if reading <= limit else "FAIL")
            elif family == "sorting":
                parts = row["user"][len("Sort alphabetically: "):-1].split(", ")
                assert len(set(parts)) == 3 and row["reply"] == ", ".join(sorted(parts))
            elif family == "conversion":
                value = float(row["user"].split()[1])
                assert float(row["reply"].split()[0]) == 1000 * value
            else:
                assert row["reply"] == row["user"].split("bearing ")[1].split(";")[0]


def test_splits_have_the_modules_sizes_and_no_shared_prompt():
    for quick, size in ((True, 240), (False, 400)):
        train, held = D.split(quick)
        assert len(train) == size and len(held) == 50
        assert len({r["user"] for r in train}) == size
        assert not {r["user"] for r in train} & {r["user"] for r in held}
        assert [sum(r["family"] == f for r in held) for f in D.FAMILIES] == [10] * 5
    assert D.make_data(3, seed=1) == D.make_data(3, seed=1)
    with pytest.raises(ValueError, match="unknown family"):
        D.example("division", random.Random(0))


class CharTokenizer:
    """One id per character, except that `merge` (if given) becomes one token: a stand-in
    for a BPE merge across the prompt/reply boundary. '<|im_end|>' is id 2."""
    def __init__(self, merge=None):
        self.merge = merge

    def encode(self, text, add_special_tokens=False):
        ids, i = [], 0
        while i < len(text):
            if text.startswith("<|im_end|>", i):
                ids.append(2); i += len("<|im_end|>")
            elif self.merge and text.startswith(self.merge, i):
                ids.append(1000); i += len(self.merge)
            else:
                ids.append(ord(text[i]) + 3); i += 1
        return ids


def test_labels_cover_the_reply_and_end_of_turn_only():
    row = {"user": "u", "reply": "ab"}
    encoded = D.encode(CharTokenizer(), row)
    n = encoded["prompt_length"]
    assert encoded["labels"][:n] == [-100] * n
    assert encoded["labels"][n:] == [ord("a") + 3, ord("b") + 3, 2]


def test_a_merge_across_the_boundary_is_refused():
    with pytest.raises(ValueError, match="BPE changed the response boundary"):
        D.encode(CharTokenizer(merge="\nab"), {"user": "u", "reply": "ab"})


def test_collate_pads_right_and_the_loss_is_a_token_sum():
    rows = [{"ids": [5, 6, 7], "labels": [-100, 6, 7]}, {"ids": [5, 8], "labels": [-100, 8]}]
    batch = D.collate(rows)
    assert batch["input_ids"].tolist() == [[5, 6, 7], [5, 8, 0]]
    assert batch["labels"].tolist() == [[-100, 6, 7], [-100, 8, -100]]
    assert batch["attention_mask"].tolist() == [[1, 1, 1], [1, 1, 0]]

    class Uniform(torch.nn.Module):  # every next token has probability 1/10
        def forward(self, input_ids, attention_mask):
            return type("Out", (), {"logits": torch.zeros(*input_ids.shape, 10, dtype=torch.float64)})
    total, count = D.batch_loss(Uniform(), rows)
    assert count == 3
    assert torch.isclose(total, torch.tensor(3 * torch.log(torch.tensor(10.0, dtype=torch.float64)).item(),
                                             dtype=total.dtype))
    assert D.trained_fraction(rows) == 3 / 3
    assert D.trained_fraction([{"ids": [1, 2, 3, 4, 5], "labels": [-100, -100, -100, 4, 5]}]) == 2 / 4
