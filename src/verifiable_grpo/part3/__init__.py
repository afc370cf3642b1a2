"""Part III: labs beyond GRPO, and the calculators its chapters use.

- labs.py: the one table of labs (`python -m verifiable_grpo lab NAME`); each row names
  the module whose `run_lab` runs it. model_labs.py runs the model labs, lab_settings.py
  checks the settings labs' YAML.
- Shared model infrastructure: smollm2/ (SmolLM2-135M: loading, chat data, training,
  evaluation, records; Labs 1, 2 and 6) and digit_policy.py (the GRU digit policy of
  Labs 4, 5 and the merging lab).
- One folder or module per lab: sft_lab/ (Lab 1), lora_lab.py (Lab 2), best_of_n.py with
  reward_model.py (Lab 3), dpo.py with dpo_bandit.py (Lab 4), group_relative.py with
  expert_iteration.py (Lab 5), suite_lab/ and judge.py (Lab 6), fault_tree.py,
  merge_lab.py with merging.py.
- Chapter calculators (no lab): accounting, case_study, quantisation, ppo_rlhf,
  troubleshooting, sft_data.
"""
