"""Lab 2: LoRA on SmolLM2-135M.

lora: the lab (`lab lora`), zero-init check, training and merge of every block projection.
settings: the lab's command-line options, declared once.
"""
