"""Lab 4: DPO, first on a bandit with an exact answer, then on the digit policy, then on
SmolLM2-135M.

dpo_bandit: eight responses, DPO against the KL-regularised optimum;
dpo: the lab (`lab dpo`), on-policy and off-policy losers on the digit policy;
dpo_smollm2: the Try-this variant (`lab dpo-smollm2`), 64 on-policy pairs on Lab 1's model;
try_this_dpo: the "Try this" pair losses (IPO, DPO + SFT) on Lab 4's loop (`lab try-this`).
settings: the two labs' settings classes, each option declared once.
"""
