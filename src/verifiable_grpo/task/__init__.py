"""StockArithmetic-v1: the data, its strict verifier, prompts and the tiny base."""
