"""Lab 6: the 40-item behavioural suite, before and after Lab 1's SFT.

catalogue: the items and their checkers; greedy: the paired greedy run (`lab suite`);
sampled: five sampled completions per item (`lab suite-sampled`); stats: the paired and
clustered statistics of both.
"""
