"""Lab 6's simulated judge: position and length bias, and what swapping fixes.

judge: the lab (`lab judge`).
settings: the lab's keys (configs/part3/judge.yaml), declared once.
"""
