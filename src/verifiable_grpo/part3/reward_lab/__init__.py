"""Lab 3: a reward model learned from pairwise preferences, and best-of-n against it.

reward_model: the Bradley-Terry fit on a 2-D toy problem and its calibration;
best_of_n: the lab (`lab reward-model`), proxy against true reward as n grows;
try_this_reward: the "Try this" variants (little data, biased labels; `lab try-this`).
settings: the lab's keys (configs/part3/reward-model.yaml), declared once.
"""
