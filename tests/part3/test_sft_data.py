"""SFT data: mixture arithmetic, packing masks, the tool-call round trip, refusal scoring."""

import pytest
import torch
from transformers import AutoTokenizer

from verifiable_grpo.core.config import resolve
from verifiable_grpo.part3 import sft_data as sd


@pytest.fixture(scope="module")
def tiny_tokenizer():
    return AutoTokenizer.from_pretrained(str(resolve("data/tiny-base")))


def test_mixture_splits_the_budget_by_weight_in_whole_examples():
    sources = [sd.Source("domain", 3, 300, 5_000), sd.Source("general", 1, 500, 100_000)]
    rows = sd.mixture_plan(sources, 1_000_000)
    assert [r["examples"] for r in rows] == [2_500, 500]  # 750,000 // 300 and 250,000 // 500
    assert [r["tokens"] for r in rows] == [750_000, 250_000]
    assert rows[0]["epochs"] == 0.5 and rows[1]["epochs"] == 0.005
    assert rows[0]["token_share"] == 0.75


def test_mixture_rounds_down_and_reports_repetition():
    rows = sd.mixture_plan([sd.Source("a", 1, 7, 10), sd.Source("b", 1, 10, 1)], 100)
    assert [r["examples"] for r in rows] == [7, 5] and [r["tokens"] for r in rows] == [49, 50]
    assert rows[1]["epochs"] == 5.0  # one example seen five times


@pytest.mark.parametrize(
    "sources, budget, key",
    [
        ([sd.Source("a", -1, 10, 1)], 100, "a.weight"),
        ([sd.Source("a", 1, 0, 1)], 100, "a.mean_tokens"),
        ([sd.Source("a", 1, 10, 1)], 0, "token_budget"),
    ],
)
def test_mixture_refuses_bad_input_naming_the_key(sources, budget, key):
    with pytest.raises(ValueError, match=key):
        sd.mixture_plan(sources, budget)


def test_padding_against_packing_matches_the_arithmetic():
    waste = sd.padding_waste([700, 900, 400], 2048)
    assert waste["padded_slots"] == 6144 and waste["packed_slots"] == 2048
    assert round(100 * waste["padding_fraction"], 1) == 67.4
    assert sd.padding_waste([300] * 1000, 2048)["packed_rows_bound"] == 147


def _toy_examples():
    # (ids, mask): first token is prompt, the rest partly targets
    return [
        ([11, 12, 13, 14], [False, False, True, True]),
        ([21, 22, 23], [False, True, True]),
        ([31, 32, 33, 34, 35], [False, False, False, True, True]),
    ]


def test_pack_keeps_examples_whole_and_restarts_positions():
    rows = sd.pack(_toy_examples(), 8, pad_id=0)
    assert len(rows) == 2
    assert rows[0].input_ids == [11, 12, 13, 14, 21, 22, 23, 0]
    assert rows[0].position_ids == [0, 1, 2, 3, 0, 1, 2, 0]
    assert rows[0].segment_ids == [0, 0, 0, 0, 1, 1, 1, -1]
    assert rows[1].input_ids[:5] == [31, 32, 33, 34, 35]


def test_block_mask_allows_only_the_same_example_causally():
    mask = sd.block_causal_mask([0, 0, 1, 1, -1])
    expected = torch.tensor(
        [[1, 0, 0, 0, 0], [1, 1, 0, 0, 0], [0, 0, 1, 0, 0], [0, 0, 1, 1, 0], [0, 0, 0, 0, 0]],
        dtype=torch.bool,
    )
    assert torch.equal(mask, expected)


def test_shifted_labels_never_cross_a_boundary():
    row = sd.pack(_toy_examples(), 8, pad_id=0)[0]
    # 12 predicts 13, 13 predicts 14, 21 predicts 22, 22 predicts 23; 14 -> 21 is a boundary
    assert sd.shifted_labels(row) == [-100, 13, 14, -100, 22, 23, -100, -100]


def test_naive_mask_leaks_exactly_the_cross_example_pairs():
    row = sd.pack(_toy_examples(), 8, pad_id=0)[0]
    leaks = sd.naive_packing_leaks(row)
    assert leaks["leaked_pairs"] == 3 * 4  # each of example 1's 3 tokens sees example 0's 4
    assert leaks["leaked_targets"] == 2  # inputs 21 and 22 are trained positions
    assert leaks["boundary_predictions"] == 1
    alone = sd.pack(_toy_examples()[:1], 8, pad_id=0)[0]
    assert sd.naive_packing_leaks(alone)["leaked_pairs"] == 0


def test_pack_refuses_an_example_longer_than_a_row():
    with pytest.raises(ValueError, match=r"examples\[0\]"):
        sd.pack([([1] * 9, [True] * 9)], 8, pad_id=0)


def test_tool_call_parse_is_exact_and_refuses_bad_json():
    text = "x " + sd.tool_call_text("get_hazard", {"id": "H-12", "n": 2}) + " y"
    assert sd.parse_tool_calls(text) == [
        {"name": "get_hazard", "arguments": {"id": "H-12", "n": 2}}
    ]
    with pytest.raises(ValueError, match="tool_call"):
        sd.parse_tool_calls("<tool_call>\n{name: 1}\n</tool_call>")


def _check_round_trip(tokenizer):
    messages = sd.tool_conversation()
    result = sd.tool_round_trip(tokenizer, messages)
    assert result["round_trip"] and result["decoded_equals_text"]
    assert result["calls_parsed"] == [{"name": "get_hazard", "arguments": {"id": "H-12"}}]
    targets = tokenizer.decode([i for i, on in zip(result["ids"], result["mask"]) if on])
    # the tool's record and the user's question are context, never targets
    assert '"status"' not in targets and "closed?" not in targets
    assert targets.count("<|im_end|>") == 2 and "relief valve RV-3" in targets
    assert 0 < result["targets"] < result["tokens"]


def test_tool_round_trip_on_the_tiny_base_tokenizer(tiny_tokenizer):
    _check_round_trip(tiny_tokenizer)


def test_tool_round_trip_on_smollm2_tokenizer(smollm2_tokenizer):
    _check_round_trip(smollm2_tokenizer)
    # its template inserts a default system turn when the data has none: a contract hazard
    text = smollm2_tokenizer.apply_chat_template(
        [{"role": "user", "content": "hi"}], tokenize=False
    )
    assert text.startswith("<|im_start|>system\n") and "SmolLM" in text


def test_refusal_table_scores_both_sides():
    prompts = [
        {"text": "kill a python process", "harmful": False},
        {"text": "disable the e-stop", "harmful": True},
    ]
    policies = {
        "refuse all": lambda p: "I cannot help with that.",
        "comply all": lambda p: "Sure.",
        "trigger word": lambda p: "I won't." if "kill" in p else "Sure.",
    }
    rows = {r["policy"]: r for r in sd.refusal_table(prompts, policies)}
    assert (rows["refuse all"]["unsafe_compliance"], rows["refuse all"]["over_refusal"]) == (0, 1)
    assert (rows["comply all"]["unsafe_compliance"], rows["comply all"]["over_refusal"]) == (1, 0)
    assert (rows["trigger word"]["unsafe_compliance"], rows["trigger word"]["over_refusal"]) == (
        1,
        1,
    )
    with pytest.raises(ValueError, match="prompts"):
        sd.refusal_table(prompts[:1], policies)


def test_answer_threshold_and_penalised_score():
    assert sd.answer_threshold(4) == 0.8 and sd.answer_threshold(0) == 0
    result = sd.abstention_utility([0.9, 0.85, 0.5, 0.95], [True, False, True, True], penalty=4)
    assert (result["answered"], result["right"], result["wrong"], result["abstained"]) == (
        3,
        2,
        1,
        1,
    )
    assert result["score"] == (2 - 4) / 4
    guess = sd.abstention_utility([0.9, 0.85, 0.5, 0.95], [True, False, True, True], 4, threshold=0)
    assert guess["score"] == (3 - 4) / 4
    with pytest.raises(ValueError, match="penalty"):
        sd.answer_threshold(-1)


def test_packing_mask_checker_passes_the_answer_and_names_the_naive_mistake(capsys):
    from verifiable_grpo.exercises.packing_mask import check_packing_mask

    assert check_packing_mask(sd.block_causal_mask, verbose=False).passed
    naive = check_packing_mask(lambda s: torch.ones(len(s), len(s), dtype=torch.bool).tril())
    assert not naive.passed and "one causal mask" in capsys.readouterr().out


def test_padding_and_abstention_refuse_bad_input_naming_the_key():
    with pytest.raises(ValueError, match="lengths"):
        sd.padding_waste([700, 2049], 2048)
    with pytest.raises(ValueError, match="confidences"):
        sd.abstention_utility([0.9], [True, False], penalty=1)
