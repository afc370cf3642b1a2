"""The `learn` verb's command-line arguments, apart from its runner (learning_command.py)
so that building the parser imports nothing heavy."""

from __future__ import annotations


def add_arguments(p, *, exploratory_help: str) -> None:
    """The `learn` verb's arguments after --config (cli.py adds that one)."""
    p.add_argument(
        "what",
        choices=[
            *("fixed-prompts", "fixed-prompts-trl", "objectives", "lift", "fresh"),
            *("band-screen", "band", "controls", "controls-first", "controls-second"),
            "controls-pass-at-k",
            *("thinking-screen", "thinking-compare"),
        ],
        help="fixed-prompts(-trl): GRPO (TRL) on 8 fixed prompts; objectives: chapter II.7's "
        "on them; lift: the held-out study; fresh: its decision on 1,000 fresh problems; "
        "band-screen / band: SmolLM2-135M-Instruct on small sums; controls-first, "
        "controls-second, controls-pass-at-k: the declared control study "
        "(configs/part1/controls.yaml) in its three stamped parts (controls: all runs in one "
        "folder); "
        "thinking-screen: SmolLM2 on the working families, answer-only and think-then-answer; "
        "thinking-compare: the declared comparison of the two",
    )
    p.add_argument("--exploratory", action="store_true", help=exploratory_help)
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="controls, thinking-compare: print the declared plan and its estimated time, "
        "compute nothing",
    )
    p.add_argument(
        "--declaration",
        default=None,
        help="controls: the declaration file (default configs/part1/controls.yaml)",
    )
    p.add_argument(
        "--objectives",
        nargs="*",
        default=None,
        help="objectives: only these entries (none named: only the --mismatch or "
        "--scale-matched runs)",
    )
    p.add_argument(
        "--mismatch", action="store_true", help="objectives: then GRPO, TIS, MIS, bfloat16 sampler"
    )
    p.add_argument(
        "--scale-matched",
        action="store_true",
        help="objectives: then the declared rerun of chapter II.7 (rloo, reinforce_pp, "
        "reinforce, reinforce_baseline with beta scaled to GRPO's advantage / KL ratio)",
    )
    p.add_argument("--out", default="runs/learn", help="folder (default runs/learn)")
    p.add_argument(
        "--candidates", nargs="+", default=None, help="lift: only these declared candidates"
    )
    p.add_argument(
        "--export", action="store_true", help="then record the finished run in data/recorded/"
    )
