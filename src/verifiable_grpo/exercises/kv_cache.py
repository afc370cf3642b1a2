"""Exercise (Part II, before GPU hours): the KV cache of a generation batch.

While a batch of completions is decoded, every layer keeps a key and a value vector per KV
head for every token so far, in 16-bit. The learner writes
fn(layers, heads, kv_heads, head_dim, sequences, tokens) -> bytes.
"""

from __future__ import annotations

from verifiable_grpo.exercises.checking import Case, compare_exact, exact_distance, run_cases

ONLY_ONE = "counts keys or values only: the cache holds both"
QUERY_HEADS = "uses the query heads: with grouped-query attention only the KV heads are cached"
FOUR_BYTES = "stores 4 bytes per value: the cache is bf16, 2 bytes"
NO_LAYERS = "forgets that every layer has its own cache"


def kv_cache_bytes(layers, heads, kv_heads, head_dim, sequences, tokens) -> int:
    return 2 * layers * kv_heads * head_dim * 2 * sequences * tokens


def cases() -> list[Case]:
    out = []
    for shape in (
        (36, 32, 8, 128, 16, 1184),
        (28, 32, 8, 128, 1, 1),
        (24, 14, 2, 64, 4, 300),
        (2, 4, 4, 8, 3, 5),
    ):
        want = kv_cache_bytes(*shape)
        layers, heads, kv_heads = shape[:3]
        mistakes = {
            ONLY_ONE: want // 2,
            QUERY_HEADS: want // kv_heads * heads,
            FOUR_BYTES: want * 2,
            NO_LAYERS: want // layers,
        }
        out.append(
            Case(
                f"layers, heads, kv_heads, head_dim, sequences, tokens = {shape}",
                lambda fn, s=shape: fn(*s),
                want,
                compare=compare_exact,
                distance=exact_distance,
                mistakes={h: v for h, v in mistakes.items() if v != want},
            )
        )
    return out


def check_kv_cache(fn, verbose: bool = True):
    """Run the hidden cases against fn(layers, heads, kv_heads, head_dim, sequences, tokens)."""
    return run_cases("KV cache bytes", fn, cases(), verbose)
