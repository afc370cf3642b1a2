"""GRPO from a verifiable reward: the training core of the book.

Importing the package needs no model; heavy modules are imported where used.
"""

__version__ = "0.1.0"
