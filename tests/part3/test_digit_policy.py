"""The digit policy's text <-> ids conventions, its EOS mask and its sampler, by hand."""

import torch

from verifiable_grpo.part3.digits import policy as dp


def test_prompts_are_a_major_and_answers_are_their_sums():
    assert dp.ALL_PROMPTS.shape == (100, 2) and dp.ALL_PROMPTS.dtype == torch.long
    assert dp.ALL_PROMPTS[13].tolist() == [1, 3] and dp.ALL_PROMPTS[-1].tolist() == [9, 9]
    assert dp.answers(torch.tensor([[7, 8], [0, 0]])) == ["15", "0"]


def test_encode_pads_with_eos_and_decode_stops_at_the_first():
    ids = dp.encode_responses(["7", "15", "1234"])
    assert ids.tolist() == [[7, 10, 10, 10, 10], [1, 5, 10, 10, 10], [1, 2, 3, 4, 10]]
    assert dp.encode_responses([]).shape == (0, dp.MAXLEN)
    assert dp.decode(torch.tensor([[3, 10, 4, 4, 4], [1, 2, 3, 4, 5]])) == ["3", "12345"]


def test_mask_keeps_tokens_through_the_first_eos():
    policy = dp.DigitPolicy()
    targets = torch.tensor([[1, 5, 10, 10, 10], [10, 3, 10, 10, 10]])
    per_token, mask = dp.token_logprobs(policy, torch.tensor([[7, 8], [0, 0]]), targets)
    assert mask.tolist() == [[1, 1, 1, 0, 0], [1, 0, 0, 0, 0]]
    assert torch.equal(
        dp.sequence_logprob(policy, torch.tensor([[7, 8], [0, 0]]), targets),
        (per_token * mask).sum(1),
    )


def test_sampler_is_seeded_and_ends_in_eos_and_evaluation_leaves_the_generator_alone():
    torch.manual_seed(0)
    policy = dp.DigitPolicy()
    prompts = dp.ALL_PROMPTS.repeat_interleave(4, 0)
    torch.manual_seed(5)
    first = dp.sample(policy, prompts)
    torch.manual_seed(5)
    assert torch.equal(first, dp.sample(policy, prompts))
    for row in first.tolist():  # after the first EOS, only EOS
        if dp.EOS in row:
            assert set(row[row.index(dp.EOS) :]) == {dp.EOS}
    torch.manual_seed(1)
    expected = torch.rand(3)
    torch.manual_seed(1)
    dp.task_metrics(policy, policy, per_prompt=1)
    assert torch.equal(torch.rand(3), expected)
