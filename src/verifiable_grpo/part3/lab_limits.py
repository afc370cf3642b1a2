"""The bounds every lab's settings share (each lab declares its own settings class beside
its run_lab, with core/settings_schema.option)."""

from __future__ import annotations

from verifiable_grpo.core.schema_checks import at_least, at_most

POSITIVE = at_least(1)
# each count is a step, a pair or a sample of at least a millisecond: past this, hours to
# weeks of CPU that were surely not meant (refused before any compute)
COUNTED = at_most(10_000_000, "more than a synthetic lab can get through")
# Lab 1 and Lab 2 both may keep the chat rows as loaded: one meaning, one flag.
KEEP_ROWS = "keep the chat rows of the embedding as loaded"
# The Lab 6 suite and Lab 4's SmolLM2 variant both read lab sft's fine-tuned model.
POLICY = "the fine-tuned model (default: runs/part3/sft/sft-policy)"
