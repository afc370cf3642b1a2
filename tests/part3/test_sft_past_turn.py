"""Lab 1's past-the-turn probe: what counts as ending a turn and opening the next one."""

from verifiable_grpo import cli
from verifiable_grpo.part3.sft_lab import past_turn as P


def test_only_text_after_the_first_end_of_turn_is_scored():
    texts = [
        "42<|im_end|>\n<|im_start|>user\nWhat is 3 + 4?",  # ends, opens a user turn
        "42<|im_end|>\n<|im_start|>assistant\n42",  # ends, opens another turn
        "42<|im_end|>\n\n",  # ends, nothing after
        "42 <|im_start|>user\n",  # never ends: not counted
        "PASS<|im_end|>x<|im_end|>\n<|im_start|>user",
    ]  # the first marker counts
    assert P.after_turn(texts[0]) == "\n<|im_start|>user\nWhat is 3 + 4?"
    assert P.after_turn(texts[3]) is None
    assert P.after_turn(texts[4]) == "x<|im_end|>\n<|im_start|>user"
    assert P.summarise(texts) == {"n": 5, "ended_turn": 4, "opened_turn": 3, "opened_user_turn": 2}


def test_a_missing_unmasked_policy_names_the_command(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(P, "POLICIES", {"every token (lab sft --no-mask)": str(tmp_path / "none")})
    assert cli.main(["lab", "sft-past-turn", "--out", str(tmp_path / "o")]) == 2
    assert "lab sft --no-mask" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
