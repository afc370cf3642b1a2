"""How the command line ends a refused command: one line on stderr, exit code 2, never a
traceback (the same promise argparse keeps for a bad flag).

A ConfigError lists its problems (one line each when there are several); anything else a
command raises for a reason the user can act on (a missing or damaged input, a refused
state, evidence in the way: REFUSALS) is said in one line, cut to SHOWN_CHARS. With
VERIFIABLE_GRPO_TRACEBACK=1 the exception is raised instead, so that a bug which raises one
of these shows where.
"""

from __future__ import annotations

import errno
import os
import pickle
import sys

from verifiable_grpo.core import files

REFUSALS = (
    ValueError,
    FileNotFoundError,
    FileExistsError,
    NotADirectoryError,
    IsADirectoryError,
    PermissionError,
    pickle.UnpicklingError,
)
TRACEBACK_ENV = "VERIFIABLE_GRPO_TRACEBACK"
SHOWN_CHARS = 1000


def user_error(err: Exception) -> None:
    """A mistake in what the user gave: say what, without a traceback; exit 2 like argparse."""
    problems = getattr(err, "problems", None) or [str(err)]
    if len(problems) == 1:
        print(f"error: {problems[0]}", file=sys.stderr)
    else:
        print(f"error: {len(problems)} problems in the config:", file=sys.stderr)
        for problem in problems:
            print(f"  {problem}", file=sys.stderr)
    raise SystemExit(2)


# OSErrors that say something about the machine, not a bug: said in one line
ENVIRONMENT = {
    errno.ENOSPC: "no space left on the device",
    errno.EDQUOT: "the disk quota is exhausted",
    errno.ENAMETOOLONG: "a file name is too long for the filesystem",
}


def environment_error(err: OSError) -> None:
    """A full disk (or a name the filesystem refuses) in one line naming where, exit 2:
    every write is atomic (core/files), so the last complete file and checkpoint are
    intact and the same command continues once there is room. Any other OSError is a
    bug or a machine fault and keeps its traceback."""
    if err.errno not in ENVIRONMENT or os.environ.get(TRACEBACK_ENV) == "1":
        raise err
    where = getattr(err, "folder", None) or err.filename
    place = f" while writing in {where}" if where else ""
    print(
        f"error: {ENVIRONMENT[err.errno]}{place}; nothing complete was lost (every write is "
        "atomic): make room, then run the same command again",
        file=sys.stderr,
    )
    raise SystemExit(2)


def refused(err: Exception) -> None:
    """One line for a refusal that is not a ConfigError; exit 2."""
    if os.environ.get(TRACEBACK_ENV) == "1":
        raise err
    text = "; ".join(line.strip() for line in str(err).splitlines() if line.strip())
    print(f"error: {files.shorten(text or type(err).__name__, SHOWN_CHARS)}", file=sys.stderr)
    raise SystemExit(2)
