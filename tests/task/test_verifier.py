"""The verifier: exact solver, strict one-object JSON, reward 1 only for a complete right answer."""

import random

import pytest

from verifiable_grpo.task.verifier import (
    MAX_RESPONSE_CHARS,
    compute_final_stock,
    generate_problem,
    normalized_problem,
    parse_generated_json,
    score_generated_json,
)

PROBLEM = {"initial": 10, "deliveries": [5, 7], "withdrawals": [3, 4]}  # 10+5+7-3-4 = 15
RIGHT = '{"final_stock": 15}'
INVALID = {"valid": False, "value": None, "reason": "invalid_json_schema"}


# ---------------------------------------------------------------------------------------
# Solver
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "problem, expected",
    [
        (PROBLEM, 15),
        ({"initial": 0, "deliveries": [0, 0], "withdrawals": [0, 0]}, 0),
        ({"initial": 100, "deliveries": [100, 100], "withdrawals": [0, 0]}, 300),
        ({"initial": 0, "deliveries": [30, 20], "withdrawals": [50, 0]}, 0),
        ({"initial": 1, "deliveries": [0, 99], "withdrawals": [100, 0]}, 0),
        ({"initial": 7, "deliveries": [1, 2], "withdrawals": [9, 1]}, 0),
    ],
    ids=[
        "fixture-15",
        "all-zero",
        "maximum-300",
        "empty-after-withdrawals",
        "delivery-before-withdrawal",
        "exactly-zero-at-end",
    ],
)
def test_solver_exact_values(problem, expected):
    assert compute_final_stock(problem) == expected
    assert type(compute_final_stock(problem)) is int


def test_deliveries_are_applied_before_withdrawals():
    # In statement order a withdrawal of 40 from 10 would go negative; deliveries come first.
    assert compute_final_stock({"initial": 10, "deliveries": [20, 10], "withdrawals": [40, 0]}) == 0


def _problem(**changes):
    problem = {"initial": 10, "deliveries": [5, 7], "withdrawals": [3, 4]}
    problem.update(changes)
    return problem


MALFORMED = [
    ("not-a-dict", [10, [5, 7], [3, 4]], "must be a dict"),
    ("none", None, "must be a dict"),
    ("missing-key", {"initial": 10, "deliveries": [5, 7]}, r"missing keys \['withdrawals'\]"),
    ("extra-key", _problem(note="x"), r"extra keys \['note'\]"),
    ("initial-bool", _problem(initial=True), "initial must be an integer"),
    ("initial-float", _problem(initial=10.0), "initial must be an integer"),
    ("initial-str", _problem(initial="10"), "initial must be an integer"),
    ("initial-negative", _problem(initial=-1), r"initial must be in 0\.\.100, got -1"),
    ("initial-101", _problem(initial=101), r"initial must be in 0\.\.100, got 101"),
    ("deliveries-tuple", _problem(deliveries=(5, 7)), "deliveries must be a list"),
    (
        "deliveries-one",
        _problem(deliveries=[5]),
        "deliveries must hold exactly two movements, got 1",
    ),
    ("deliveries-three", _problem(deliveries=[5, 7, 1]), "exactly two movements, got 3"),
    (
        "withdrawals-empty",
        _problem(withdrawals=[]),
        "withdrawals must hold exactly two movements, got 0",
    ),
    ("delivery-bool", _problem(deliveries=[5, False]), r"deliveries\[1\] must be an integer"),
    ("delivery-float", _problem(deliveries=[5.0, 7]), r"deliveries\[0\] must be an integer"),
    ("delivery-none", _problem(deliveries=[5, None]), r"deliveries\[1\] must be an integer"),
    ("delivery-101", _problem(deliveries=[101, 0]), r"deliveries\[0\] must be in 0\.\.100"),
    ("withdrawal-negative", _problem(withdrawals=[-3, 4]), r"withdrawals\[0\] must be in 0\.\.100"),
    ("withdrawal-str", _problem(withdrawals=[3, "4"]), r"withdrawals\[1\] must be an integer"),
    (
        "negative-after-first-withdrawal",
        _problem(initial=0, deliveries=[1, 1], withdrawals=[3, 0]),
        r"negative intermediate stock: withdrawals\[0\]=3 leaves -1",
    ),
    (
        "negative-after-second-withdrawal",
        _problem(withdrawals=[20, 3]),
        r"negative intermediate stock: withdrawals\[1\]=3 leaves -1",
    ),
]


@pytest.mark.parametrize(
    "problem, message", [(p, m) for _, p, m in MALFORMED], ids=[name for name, _, _ in MALFORMED]
)
def test_malformed_problem_is_refused_with_its_reason(problem, message):
    with pytest.raises(ValueError, match=message):
        compute_final_stock(problem)
    with pytest.raises(ValueError, match=message):
        normalized_problem(problem)
    with pytest.raises(ValueError, match=message):  # scoring never guesses an answer
        score_generated_json(RIGHT, "eos", problem)


def test_normalized_problem_collapses_permutations_only_within_a_kind():
    a = {"initial": 3, "deliveries": [9, 2], "withdrawals": [1, 8]}
    b = {"initial": 3, "deliveries": [2, 9], "withdrawals": [8, 1]}
    swapped = {"initial": 3, "deliveries": [1, 8], "withdrawals": [9, 2]}
    assert normalized_problem(a) == normalized_problem(b) == (3, (2, 9), (1, 8))
    assert normalized_problem(swapped) != normalized_problem(a)


@pytest.mark.parametrize("maximum", [50, 100])
def test_generator_yields_only_valid_problems_in_range(maximum):
    rng = random.Random(11)
    seen_top = 0
    for _ in range(2000):
        problem = generate_problem(rng, maximum)
        operands = [problem["initial"], *problem["deliveries"], *problem["withdrawals"]]
        assert all(type(v) is int and 0 <= v <= maximum for v in operands)
        assert 0 <= compute_final_stock(problem) <= 3 * maximum
        seen_top = max(seen_top, max(operands))
    assert seen_top == maximum  # the range is really used up to its bound


def test_generator_is_deterministic_for_a_seed():
    first = [generate_problem(random.Random(5), 50) for _ in range(3)]
    assert first == [generate_problem(random.Random(5), 50) for _ in range(3)]


@pytest.mark.parametrize("maximum", [0, 49, 75, 101, 50.0, "50"])
def test_generator_refuses_an_unnamed_range(maximum):
    with pytest.raises(ValueError, match="maximum must be one of"):
        generate_problem(random.Random(0), maximum)


# ---------------------------------------------------------------------------------------
# Parsing: accepted forms
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text, value",
    [
        ('{"final_stock": 15}', 15),
        ('{"final_stock":15}', 15),
        ('{"final_stock": 0}', 0),
        ('{"final_stock": 300}', 300),
        ('{"final_stock": -0}', 0),  # an integer literal in JSON's grammar
        ('{"final_\\u0073tock": 15}', 15),  # a JSON escape decodes to the same key
    ],
    ids=["canonical", "compact", "boundary-0", "boundary-300", "minus-zero-int", "escaped-key"],
)
def test_valid_responses(text, value):
    result = parse_generated_json(text, "eos")
    assert result == {"valid": True, "value": value, "reason": None}
    assert type(result["value"]) is int


@pytest.mark.parametrize(
    "text",
    [
        ' {"final_stock": 15}',
        '{"final_stock": 15}\n',
        '\n\t{"final_stock": 15} \r\n',
        '{ "final_stock" : 15 }',
    ],
    ids=["leading-space", "trailing-newline", "tabs-and-crlf", "inner-spaces"],
)
def test_json_whitespace_around_the_object_is_allowed(text):
    """Stated choice: JSON's own whitespace (space, tab, LF, CR) may surround the object."""
    assert parse_generated_json(text, "eos") == {"valid": True, "value": 15, "reason": None}


@pytest.mark.parametrize(
    "text",
    [
        '\u00a0{"final_stock": 15}',
        '{"final_stock": 15}\u3000',
        '\ufeff{"final_stock": 15}',
        '{"final_stock": 15}\x0b',
    ],
    ids=["nbsp-before", "ideographic-space-after", "byte-order-mark", "vertical-tab"],
)
def test_other_whitespace_is_not_allowed(text):
    assert parse_generated_json(text, "eos") == INVALID


# ---------------------------------------------------------------------------------------
# Parsing: every rejection
# ---------------------------------------------------------------------------------------
REJECTED = {
    "bool-true": '{"final_stock": true}',
    "bool-false": '{"final_stock": false}',
    "float-15.0": '{"final_stock": 15.0}',
    "float-exponent-1.5e1": '{"final_stock": 1.5e1}',
    "float-exponent-1e1": '{"final_stock": 1e1}',
    "float-minus-zero": '{"final_stock": -0.0}',
    "float-overflow-1e400": '{"final_stock": 1e400}',
    "string-number": '{"final_stock": "15"}',
    "null-value": '{"final_stock": null}',
    "nested-object": '{"final_stock": {"value": 15}}',
    "array-value": '{"final_stock": [15]}',
    "NaN": '{"final_stock": NaN}',
    "Infinity": '{"final_stock": Infinity}',
    "-Infinity": '{"final_stock": -Infinity}',
    "above-300": '{"final_stock": 301}',
    "negative-1": '{"final_stock": -1}',
    "leading-zero": '{"final_stock": 015}',
    "plus-sign": '{"final_stock": +15}',
    "hex": '{"final_stock": 0xF}',
    "extra-field": '{"final_stock": 15, "unit": "boxes"}',
    "duplicate-field-same-value": '{"final_stock": 15, "final_stock": 15}',
    "duplicate-field-other-value": '{"final_stock": 99, "final_stock": 15}',
    "wrong-key": '{"finalStock": 15}',
    "key-with-space": '{"final_stock ": 15}',
    "empty-object": "{}",
    "top-level-array": "[15]",
    "array-of-the-object": '[{"final_stock": 15}]',
    "top-level-null": "null",
    "bare-number": "15",
    "bare-string": '"15"',
    "empty-text": "",
    "only-whitespace": "  \n",
    "markdown-fence": '```json\n{"final_stock": 15}\n```',
    "inline-backticks": '`{"final_stock": 15}`',
    "prose-before": 'The answer is {"final_stock": 15}',
    "prose-after": '{"final_stock": 15} because 10+5+7-3-4=15',
    "trailing-garbage": '{"final_stock": 15}x',
    "trailing-comma-object": '{"final_stock": 15},',
    "leading-garbage": 'x{"final_stock": 15}',
    "truncated": '{"final_stock": 15',
    "single-quotes": "{'final_stock': 15}",
    "unquoted-key": "{final_stock: 15}",
    "trailing-comma-inside": '{"final_stock": 15,}',
    "python-literal": "dict(final_stock=15)",
    "deep-nesting": "[" * 200 + "]" * 20,
}


@pytest.mark.parametrize("text", list(REJECTED.values()), ids=list(REJECTED))
def test_rejected_forms(text):
    assert parse_generated_json(text, "eos") == INVALID
    assert score_generated_json(text, "eos", PROBLEM)["reward"] == 0


@pytest.mark.parametrize(
    "text",
    [
        '{"final_stock": 99}{"final_stock": 15}',
        '{"final_stock": 15}{"final_stock": 99}',
        '{"final_stock": 15} {"final_stock": 15}',
        '{"final_stock": 15}\n{"final_stock": 99}',
        '[{"final_stock": 15}, {"final_stock": 99}]',
    ],
    ids=[
        "wrong-then-right",
        "right-then-wrong",
        "right-twice",
        "newline-separated",
        "inside-an-array",
    ],
)
def test_error_to_diagnose_two_json_objects_one_of_them_correct(text):
    """The seed's error to diagnose: two objects, one correct, must not earn the reward."""
    assert parse_generated_json(text, "eos") == INVALID
    assert score_generated_json(text, "eos", PROBLEM) == {**INVALID, "reward": 0, "expected": 15}


def test_generated_text_is_never_executed(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    text = '__import__("pathlib").Path("pwned").write_text("x")'
    assert parse_generated_json(text, "eos") == INVALID
    assert not (tmp_path / "pwned").exists()


# ---------------------------------------------------------------------------------------
# Size, type, stop reason
# ---------------------------------------------------------------------------------------
def test_256_characters_accepted_257_refused():
    exact = RIGHT + " " * (MAX_RESPONSE_CHARS - len(RIGHT))
    assert len(exact) == 256
    assert parse_generated_json(exact, "eos") == {"valid": True, "value": 15, "reason": None}
    over = exact + " "
    assert parse_generated_json(over, "eos") == {
        "valid": False,
        "value": None,
        "reason": "oversized_or_nontext",
    }


@pytest.mark.parametrize(
    "text",
    [b'{"final_stock": 15}', None, 15, {"final_stock": 15}, ['{"final_stock": 15}']],
    ids=["bytes", "none", "int", "dict", "list-of-str"],
)
def test_non_text_is_refused(text):
    expected = {"valid": False, "value": None, "reason": "oversized_or_nontext"}
    assert parse_generated_json(text, "eos") == expected
    assert score_generated_json(text, "eos", PROBLEM) == {**expected, "reward": 0, "expected": 15}


@pytest.mark.parametrize("finish_reason", ["length", None, "EOS", "stop"])
def test_completion_without_eos_gets_zero_even_with_correct_json(finish_reason):
    expected = {"valid": False, "value": None, "reason": "completion_without_eos"}
    assert parse_generated_json(RIGHT, finish_reason) == expected
    assert score_generated_json(RIGHT, finish_reason, PROBLEM) == {
        **expected,
        "reward": 0,
        "expected": 15,
    }


def test_stop_reason_is_checked_before_size():
    assert parse_generated_json("x" * 1000, "length")["reason"] == "completion_without_eos"


# ---------------------------------------------------------------------------------------
# Reward
# ---------------------------------------------------------------------------------------
def test_reward_one_for_the_right_answer():
    result = score_generated_json(RIGHT, "eos", PROBLEM)
    assert result == {"valid": True, "value": 15, "reason": None, "reward": 1, "expected": 15}
    assert type(result["reward"]) is int and type(result["expected"]) is int


def test_reward_zero_for_a_valid_wrong_answer():
    assert score_generated_json('{"final_stock": 16}', "eos", PROBLEM) == {
        "valid": True,
        "value": 16,
        "reason": None,
        "reward": 0,
        "expected": 15,
    }


@pytest.mark.parametrize("value, reward", [(0, 1), (300, 1)], ids=["0", "300"])
def test_boundary_answers_score(value, reward):
    problem = (
        {"initial": 0, "deliveries": [0, 0], "withdrawals": [0, 0]}
        if value == 0
        else {"initial": 100, "deliveries": [100, 100], "withdrawals": [0, 0]}
    )
    assert score_generated_json(f'{{"final_stock": {value}}}', "eos", problem)["reward"] == reward


@pytest.mark.parametrize("value", [301, -1], ids=["301", "-1"])
def test_out_of_range_answers_are_invalid(value):
    result = score_generated_json(f'{{"final_stock": {value}}}', "eos", PROBLEM)
    assert result == {**INVALID, "reward": 0, "expected": 15}


def test_undecodable_token_invalidates_a_correct_response():
    assert score_generated_json(RIGHT, "eos", PROBLEM, tokenization_valid=False) == {
        "valid": False,
        "value": None,
        "reason": "undecodable_token",
        "reward": 0,
        "expected": 15,
    }


@pytest.mark.parametrize(
    "flag", [1, 0, "yes", None, 1.0], ids=["int-1", "int-0", "str", "none", "float"]
)
def test_tokenization_validity_must_be_a_bool(flag):
    with pytest.raises(ValueError, match="tokenization_valid must be True or False"):
        score_generated_json(RIGHT, "eos", PROBLEM, tokenization_valid=flag)
