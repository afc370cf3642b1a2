"""Lab 1: full-weight SFT of SmolLM2 with the assistant-only masked loss.

masked_sft: the lab (`lab sft`); probe: the plain few-shot probe before training;
past_turn: the "Try this" run greedy past <|im_end|> (`lab sft-past-turn`);
try_this_packing: the packing "Try this", padded vs packed conversations (`lab sft-packing`).
settings: the three labs' settings classes, each option declared once.
"""
