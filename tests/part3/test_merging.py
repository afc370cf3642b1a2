"""Merging operators on hand-made state dicts, and the adapter counter-example."""

import pytest
import torch

from verifiable_grpo.part3.merge_lab import merging as mg


def state(*values):
    return {"w": torch.tensor(values, dtype=torch.float64)}


def test_soup_and_task_arithmetic():
    base, a, b = state(0.0, 0.0), state(2.0, 0.0), state(0.0, 4.0)
    assert mg.soup([a, b])["w"].tolist() == [1.0, 2.0]
    assert mg.soup([a, b], [0.25, 0.75])["w"].tolist() == [0.5, 3.0]
    vectors = [mg.task_vector(a, base), mg.task_vector(b, base)]
    assert mg.task_arithmetic(base, vectors, 1.0)["w"].tolist() == [2.0, 4.0]
    # a uniform soup of k fine-tunes of one base is task arithmetic at scale 1/k
    assert mg.task_arithmetic(base, vectors, 0.5)["w"].tolist() == mg.soup([a, b])["w"].tolist()


def test_trim_keeps_the_largest_magnitudes():
    kept = mg.trim(state(0.1, -3.0, 0.5, 2.0), 0.5)["w"].tolist()
    assert kept == [0.0, -3.0, 0.0, 2.0]
    assert mg.sparsity({"w": torch.tensor(kept)}) == 0.5


def test_ties_elects_a_sign_and_averages_the_agreeing_entries():
    base = state(0.0, 0.0, 0.0)
    v1, v2, v3 = state(1.0, -2.0, 0.5), state(3.0, 1.0, -0.5), state(-1.0, -2.0, 0.0)
    merged = mg.ties(base, [v1, v2, v3], density=1.0)["w"].tolist()
    # entry 0: sum 3 > 0, agreeing 1 and 3 -> 2; entry 1: sum -3, agreeing -2, -2 -> -2;
    # entry 2: sum 0 -> sign 0, nothing agrees -> 0
    assert merged == [2.0, -2.0, 0.0]
    assert mg.ties(base, [v1], density=1.0)["w"].tolist() == v1["w"].tolist()


def test_dare_keeps_the_expectation():
    vector = {"w": torch.full((200_000,), 0.3, dtype=torch.float64)}
    sparse = mg.dare(vector, 0.9, torch.Generator().manual_seed(0))["w"]
    assert torch.allclose(sparse[sparse != 0], torch.tensor(3.0, dtype=torch.float64))
    assert abs(sparse.mean().item() - 0.3) < 0.01
    assert abs(mg.sparsity({"w": sparse}) - 0.9) < 0.005
    assert torch.equal(mg.dare(vector, 0.0, torch.Generator())["w"], vector["w"])


def test_adapters_merge_as_products():
    example = mg.adapter_merge_example()
    assert torch.equal(example["average_of_products"], 0.5 * torch.eye(2))
    assert torch.equal(example["product_of_averages"], torch.full((2, 2), 0.25))
    e1, e2 = torch.tensor([[1.0], [0.0]]), torch.tensor([[0.0], [1.0]])
    b, a = mg.stack_adapters([(e1, e1.T), (e2, e2.T)], [0.5, 0.5])
    assert b.shape == (2, 2) and torch.equal(b @ a, 0.5 * torch.eye(2))


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: mg.soup([state(1.0), {"v": torch.zeros(1)}]), "other parameters"),
        (lambda: mg.soup([state(1.0), state(1.0, 2.0)]), "shape"),
        (lambda: mg.soup([state(1.0), state(2.0)], [0.7, 0.7]), "summing to 1"),
        (lambda: mg.trim(state(1.0), 0.0), "density must lie in"),
        (lambda: mg.dare(state(1.0), 1.0, torch.Generator()), "drop must lie in"),
        (lambda: mg.soup([]), "at least one"),
    ],
)
def test_bad_input(call, message):
    with pytest.raises(ValueError, match=message):
        call()
