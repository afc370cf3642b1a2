"""StockArithmetic-v1: the data, its strict verifier and prompts (the tiny base: models/)."""
