"""Part III: labs beyond GRPO, and the calculators its chapters use.

- labs.py: the one table of labs (`python -m verifiable_grpo lab NAME`); each row names
  the module whose `run_lab` runs it and the settings class (NAME_lab/settings.py) that
  declares its options once: its YAML keys, or its flags for a model lab (model_labs.py
  runs those). lab_limits.py holds the bounds and meanings several labs share.
- Shared model infrastructure: smollm2/ (SmolLM2-135M: loading, chat data, training,
  evaluation, records; Labs 1, 2 and 6) and digits/ (the GRU digit policy of Labs 4, 5
  and the merging lab).
- One folder per lab: sft_lab/ (Lab 1), reward_lab/ (Lab 3), dpo_lab/ (Lab 4),
  lora_lab/ (Lab 2), expert_iteration_lab/ (Lab 5), suite_lab/ and judge_lab/ (Lab 6),
  fault_tree_lab/, merge_lab/; each lab's "Try this" modules sit in its folder.
- Chapter calculators (no lab): accounting, case_study, quantisation, ppo_rlhf,
  troubleshooting, sft_data.
"""
