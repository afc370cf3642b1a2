"""Lab 6's simulated judge: position and length bias, and what swapping fixes.

judge: the lab (`lab judge`).
"""
