"""The GRU digit policy that Labs 4 and 5 and the merging lab train (shared, no lab).

policy: the model that answers "a + b" for two digits, its sampling, scoring and exact
answers.
"""
