"""Training: rollouts, losses, the objectives registry, SFT and GRPO."""
