"""Evaluation: label-blind inference, then scoring."""
