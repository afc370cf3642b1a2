"""Model merging on two fine-tunes of the digit policy.

merging: the methods on state dicts (soups, task arithmetic, TIES, DARE, adapters);
digit_merges: the lab (`lab merging`), two half-experts merged and scored.
settings: the lab's keys (configs/part3/merging.yaml), declared once.
"""
