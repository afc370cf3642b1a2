"""The exact per-prefix entropy used in GRPO telemetry: by hand, against a float64
reference, blockwise, with zero-probability tokens, and bad input."""

import math

import pytest
import torch

from verifiable_grpo.training import entropy


def test_uniform_and_one_hot_by_hand():
    uniform = torch.zeros(2, 3, 10)
    assert entropy.exact_token_entropy(uniform).flatten().tolist() == pytest.approx(
        [math.log(10)] * 6, rel=1e-6
    )
    one_hot = torch.full((1, 5), float("-inf"))
    one_hot[0, 2] = 0.0
    assert entropy.exact_token_entropy(one_hot).tolist() == [0.0]  # no NaN from 0 * -inf


def test_blocks_agree_with_a_float64_reference():
    logits = torch.randn(3, 4, 37, generator=torch.Generator().manual_seed(0)) * 3
    p = torch.softmax(logits.double(), -1)
    want = -(p * p.log()).sum(-1)
    for block in (1, 5, 37, 4096):
        got = entropy.exact_token_entropy(logits, block_size=block)
        torch.testing.assert_close(got.double(), want, rtol=1e-5, atol=1e-6)


def test_masked_mean_counts_only_response_tokens():
    logits = torch.zeros(2, 3, 4)
    logits[1, 2] = torch.tensor([50.0, 0.0, 0.0, 0.0])  # nearly one-hot, masked out below
    mask = torch.tensor([[True, True, False], [True, True, False]])
    got = entropy.masked_mean_entropy(logits, mask)
    assert got.tolist() == pytest.approx([math.log(4), math.log(4)], rel=1e-6)


@pytest.mark.parametrize("bad", [0, -1, 2.5, True])
def test_bad_block_size_is_refused(bad):
    with pytest.raises(ValueError, match="block_size"):
        entropy.exact_token_entropy(torch.zeros(2, 3), block_size=bad)
