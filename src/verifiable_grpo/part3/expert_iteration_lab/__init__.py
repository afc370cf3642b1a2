"""Lab 5: expert iteration against GRPO on the digit policy, with a substring verifier.

expert_iteration: SFT on verified successes only;
group_relative: the lab (`lab expert-iteration`), the course's GRPO beside it;
try_this_grpo: the "Try this" variants as other axes of the lab's objective (`lab try-this`).
settings: the lab's keys (configs/part3/expert-iteration.yaml), declared once.
"""
