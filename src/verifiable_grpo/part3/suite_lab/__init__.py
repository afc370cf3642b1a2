"""Lab 6: the 40-item behavioural suite, before and after Lab 1's SFT.

catalogue: the items and their checkers; greedy: the paired greedy run (`lab suite`);
sampled: five sampled completions per item (`lab suite-sampled`); stats: the paired and
clustered statistics of both; failure_families: 25 items in five failure families with
checkers that see each failure; families_run: their run on both models
(`lab suite-families`); try_this_checkers: stricter checkers rescoring the recorded
transcripts; try_this_suite: the contamination check (`lab try-this`).
settings: the suite runs' one option (--policy), declared once.
"""
