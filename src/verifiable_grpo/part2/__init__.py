"""Part II: the GRPO family study (treatment lock, runner, analysis)."""
