"""The fault-tree exercise's settings (configs/part3/fault-tree.yaml): none."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FaultTreeSettings:
    """The fault-tree exercise has no settings: its fixtures are fixed."""
