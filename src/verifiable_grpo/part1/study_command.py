"""`python -m verifiable_grpo study {list,run,export,check} NAME`: every recorded study of
the STUDIES table (part1/studies.py) through its one protocol. Light to import: the parser
is built from it, and a study's own code loads only when that study is asked for."""

from __future__ import annotations

from pathlib import Path

from verifiable_grpo.part1 import studies

ACTIONS = ("list", "run", "export", "check")


def add_arguments(p, *, exploratory_help: str) -> None:
    """The `study` verb's arguments after --config (cli.py adds that one)."""
    p.add_argument(
        "action",
        choices=ACTIONS,
        help="list: every study and whether it is recorded; run: run (or continue) it; "
        "export: record its finished folder in data/recorded/; check: its record against "
        "its declaration",
    )
    p.add_argument("name", nargs="?", choices=list(studies.STUDIES), help="the study")
    p.add_argument("--out", default="runs/learn", help="runs folder (default runs/learn)")
    p.add_argument("--exploratory", action="store_true", help=exploratory_help)
    p.add_argument("--export", action="store_true", help="run: then record the finished run")


def list_lines() -> list[str]:
    """One line per study: name, state, its module and the chapter that reads it."""
    width = max(map(len, studies.STUDIES))
    return [
        f"{name:{width}}  {studies.state(name):8}  {study.module}  -> {study.chapter}"
        for name, study in studies.STUDIES.items()
    ]


def command_study(args) -> int:
    if args.action == "list":
        print("\n".join(list_lines()))
        return 0
    if args.name is None:  # refused before anything is imported or written
        raise ValueError(f"study {args.action}: name a study, one of {sorted(studies.STUDIES)}")
    if args.action == "check":
        problems = studies.check(args.name)
        if problems:
            raise ValueError("; ".join(problems))
        print(
            f"{args.name}: the record agrees with its declaration ({studies.get(args.name).declared})"
        )
        return 0
    options = studies.StudyOptions(
        out=Path(args.out),
        config=args.config,
        exploratory=args.exploratory,
        export=args.export,
    )
    protocol = studies.protocol(args.name)
    if args.action == "run":
        return protocol.run(options)
    for path in protocol.export(options):
        print(f"recorded {path}")
    return 0
