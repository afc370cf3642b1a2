"""The fault-tree reward exercise: score a tree by its structure, game it, repair it.

fault_tree: the exercise (`lab fault-tree`).
settings: the exercise's settings class (none).
"""
