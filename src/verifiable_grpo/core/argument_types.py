"""Argument types for the command line: each turns one flag's text into its value or
raises argparse.ArgumentTypeError with a one-line reason (argparse exits 2 with it)."""

from __future__ import annotations

import argparse

SEED_MAX = 2**32 - 1  # numpy's seed range
# torch threads: no CPU this project runs on has more cores than this, and torch starts
# that many OpenMP threads per operation (100,000 exhausts the process's memory first)
MAX_THREADS = 1024


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return value


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
    return value


def non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0, got {text!r}")
    return value


def seed(text: str) -> int:
    """A seed as numpy takes one: 0..2**32 - 1 (a negative one is not silently folded)."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= SEED_MAX:
        raise argparse.ArgumentTypeError(f"must be a seed in 0..{SEED_MAX}, got {text!r}")
    return value


def thread_count(text: str) -> int:
    value = positive(text)
    if value > MAX_THREADS:
        raise argparse.ArgumentTypeError(
            f"must be at most {MAX_THREADS} (more threads than any CPU has cores), got {text!r}"
        )
    return value
