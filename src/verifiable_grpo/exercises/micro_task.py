"""A micro policy and a toy verifiable task, small enough to run a GRPO loop in a second.

The loop exercise (chapter 6) runs the learner's GRPO iteration and the package's on the
same seeds and compares them. Any real model would take minutes, and a random model never
writes StockArithmetic's JSON (every reward 0, every advantage 0: nothing to compare), so
the checker uses:

- a random Qwen2 with one layer, hidden size 16 and a vocabulary of seven tokens (six
  "digits" and EOS), in float64 throughout so that two correct loops agree to about
  1e-12 whatever order they add things in. Transformers' Qwen2 rounds to float32 in two
  places, whatever the model's dtype: the eager attention's softmax and RMSNorm. The float32
  softmax rounds a prefix of length k differently from the same prefix inside a longer
  sequence on AVX2 kernels (measured: old and re-scored log-probs 7e-9 apart, 0 on
  AVX-512), and Adam turns such noise into weight differences near the checker's
  tolerance. So the micro policy uses SDPA attention (float64 inside) and a float64 RMSNorm;
- a toy task with a reward a program can check: a prompt is a few digits, and a response
  earns 1 when it writes their sum modulo 6 before EOS (within MAX_RESPONSE tokens). An
  untrained model succeeds about a third of the time, so most groups hold both rewards.

Sampling follows rollout.generate: temperature 1 over the whole vocabulary, one token at
a time, each token's log-probability taken from the very logits it was drawn from (the
old log-probs of the GRPO ratio), drawn with the task's own seeded generator.
"""

from __future__ import annotations

import torch

from verifiable_grpo.training import rollout

DIGITS = 6
EOS = DIGITS  # the last id of the vocabulary
VOCABULARY = DIGITS + 1
MAX_RESPONSE = 4
PROMPTS = ((1, 2, 4), (5, 0, 3), (2, 2), (4, 1, 5, 3))
MODEL_SEED = 11
SAMPLING_SEED = 2026


def micro_policy(seed: int = MODEL_SEED):
    """A random one-layer Qwen2 over the seven-token vocabulary: float64, eval mode.

    Built under a forked RNG, so the caller's random streams are left as they were.
    """
    from transformers import Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(
        vocab_size=VOCABULARY,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=16,
        tie_word_embeddings=False,
        attn_implementation="sdpa",  # eager's softmax is float32 (see the module docstring)
        eos_token_id=EOS,
        pad_token_id=EOS,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = Qwen2ForCausalLM(config)
    for module in model.modules():
        if type(module).__name__ == "Qwen2RMSNorm":
            module.forward = _float64_rms_norm.__get__(module)
    return model.to(torch.float64).eval()


def _float64_rms_norm(self, hidden: torch.Tensor) -> torch.Tensor:
    """Qwen2RMSNorm without its float32 round trip: the same formula in the input's dtype."""
    variance = hidden.pow(2).mean(-1, keepdim=True)
    return self.weight * (hidden * torch.rsqrt(variance + self.variance_epsilon))


def answer(prompt) -> int:
    """The solver: the digit a correct response writes."""
    return sum(prompt) % DIGITS


class MicroTask:
    """Prompts, a seeded sampler, a verifier and a scorer for the micro policy.

    prompts: tuples of digit ids. sample(model, prompt) -> (response ids, old log-probs
    [R] float64, detached); reward(prompt, response) -> 0.0 or 1.0; logits(model, prompt,
    response) -> [R, V] logits at the R prefixes that predicted the response tokens
    (with gradient when the model has one). logits_of_many serves the package's loop;
    stock_task.StockTask offers the same methods on StockArithmetic.
    """

    def __init__(self, prompts=PROMPTS, seed: int = SAMPLING_SEED):
        self.prompts = [tuple(int(t) for t in p) for p in prompts]
        self.generator = torch.Generator().manual_seed(seed)

    @torch.no_grad()
    def sample(self, model, prompt) -> tuple[list[int], torch.Tensor]:
        if model.training:
            raise ValueError("sample with the model in eval mode")
        ids = list(prompt)
        response, old = [], []
        for _ in range(MAX_RESPONSE):
            logits = model(input_ids=torch.tensor([ids]), use_cache=False).logits[0, -1]
            logprobs = torch.log_softmax(logits.to(torch.float64), dim=-1)
            token = int(torch.multinomial(logprobs.exp(), 1, generator=self.generator))
            response.append(token)
            old.append(logprobs[token])
            ids.append(token)
            if token == EOS:
                break
        return response, torch.stack(old)

    def reward(self, prompt, response) -> float:
        body = response[: response.index(EOS)] if EOS in response else response
        return 1.0 if answer(prompt) in body else 0.0

    def logits(self, model, prompt, response) -> torch.Tensor:
        return self.logits_of_many(model, [(prompt, response)])[0]

    def logits_of_many(self, model, pairs) -> list[torch.Tensor]:
        """logits() of many (prompt, response) pairs in one right-padded forward pass.

        Causal attention never lets a real position see the padding after it, so each
        row's logits are those of its own forward pass (up to float64 rounding).
        """
        sequences = [list(p) + list(r) for p, r in pairs]
        width = max(len(s) for s in sequences)
        ids = torch.tensor([s + [EOS] * (width - len(s)) for s in sequences])
        logits = model(input_ids=ids, use_cache=False).logits
        return [
            logits[row, rollout.response_slice(len(p), len(r))] for row, (p, r) in enumerate(pairs)
        ]
