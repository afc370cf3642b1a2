"""Part III: labs beyond GRPO, and the calculators its chapters use.

- labs.py: the one table of labs (`python -m verifiable_grpo lab NAME`); each row names
  the module whose `run_lab` runs it. model_labs.py runs the model labs, lab_settings.py
  checks the settings labs' YAML.
- Shared model infrastructure: smollm2/ (SmolLM2-135M: loading, chat data, training,
  evaluation, records; Labs 1, 2 and 6) and digits/ (the GRU digit policy of Labs 4, 5
  and the merging lab).
- One folder per lab: sft_lab/ (Lab 1), reward_lab/ (Lab 3), dpo_lab/ (Lab 4),
  expert_iteration_lab/ (Lab 5), suite_lab/ and judge_lab/ (Lab 6), fault_tree_lab/,
  merge_lab/; Lab 2 is still one module, lora_lab.py.
- Chapter calculators (no lab): accounting, case_study, quantisation, ppo_rlhf,
  troubleshooting, sft_data.
"""
