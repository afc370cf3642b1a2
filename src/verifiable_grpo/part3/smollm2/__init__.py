"""SmolLM2-135M-Instruct as the Part III model labs use it (Labs 1, 2 and 6).

loader: the GGUF model de-quantised once to an FP32 cache, then loaded from it;
chat_data: the ChatML rows, their synthetic data and the assistant-only masked loss;
chat_rows: the embedding rows of the chat tokens (diagnose, re-draw);
trainer: the crash-safe training loop and its schedules;
evaluation: held-out loss, greedy replies and exact answers;
records: a model lab's metrics file, its export and the one-thread comparison.
"""
