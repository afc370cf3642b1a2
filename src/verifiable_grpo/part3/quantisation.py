"""Block quantisation as QLoRA stores a frozen base: NF4 levels, absmax scales, the cost in
bits per weight with and without quantised scales, and a quantise-dequantise round trip.

NF4's 16 levels are quantiles of a standard normal, rescaled to [-1, 1], with an exact zero:
8 on the positive side, 7 on the negative side. The construction below follows QLoRA's
recipe (quantiles between 1 - offset and 1/2 with offset 0.9677083); the test compares it
with the published table.
"""

from __future__ import annotations

from statistics import NormalDist

import numpy as np

NF4_OFFSET = 0.9677083


def nf4_levels(offset: float = NF4_OFFSET) -> np.ndarray:
    """The 16 NF4 levels, ascending, from -1 to 1 with 0 among them."""
    if not 0.5 < offset < 1:
        raise ValueError(f"offset must lie in (0.5, 1), got {offset!r}")
    ppf = NormalDist().inv_cdf
    positive = [ppf(p) for p in np.linspace(offset, 0.5, 9)[:-1]]
    negative = [-ppf(p) for p in np.linspace(offset, 0.5, 8)[:-1]]
    levels = np.array(sorted(positive + [0.0] + negative))
    return levels / levels.max()


def uniform_levels(bits: int = 4) -> np.ndarray:
    """A symmetric uniform grid on [-1, 1] with 2^bits - 1 levels (zero included)."""
    if not isinstance(bits, int) or not 2 <= bits <= 16:
        raise ValueError(f"bits must be an integer in [2, 16], got {bits!r}")
    half = 2 ** (bits - 1) - 1
    return np.arange(-half, half + 1) / half


def bits_per_weight(
    code_bits: float = 4,
    block: int = 64,
    scale_bits: float = 32,
    scale_block: int | None = None,
    second_scale_bits: float = 32,
) -> float:
    """Storage per weight: the code, plus a scale per `block` weights. With `scale_block`,
    the scales are themselves quantised to `scale_bits` with one `second_scale_bits` scale
    per `scale_block` of them (QLoRA's double quantisation: 4 + 8/64 + 32/(64·256))."""
    for name, value in (
        ("code_bits", code_bits),
        ("scale_bits", scale_bits),
        ("second_scale_bits", second_scale_bits),
    ):
        if not value > 0:
            raise ValueError(f"{name} must be positive, got {value!r}")
    for name, value in (("block", block), ("scale_block", scale_block)):
        if value is not None and (not isinstance(value, int) or value <= 0):
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    bits = code_bits + scale_bits / block
    if scale_block is not None:
        bits += second_scale_bits / (block * scale_block)
    return bits


def round_trip(block, levels: np.ndarray) -> dict:
    """Quantise one block with an absmax scale and dequantise it again.

    Returns the scale, the normalised weights, the chosen level per weight (its index is
    the stored code) and the reconstructed weights."""
    weights = np.asarray(block, dtype=np.float64)
    if weights.ndim != 1 or weights.size == 0 or not np.isfinite(weights).all():
        raise ValueError("block must be a non-empty 1-D array of finite weights")
    scale = float(np.abs(weights).max())
    if scale == 0:
        return {
            "scale": 0.0,
            "normalised": weights,
            "codes": np.zeros(weights.size, int),
            "levels": np.zeros_like(weights),
            "reconstructed": weights.copy(),
        }
    normalised = weights / scale
    codes = np.abs(normalised[:, None] - levels[None, :]).argmin(axis=1)
    chosen = levels[codes]
    return {
        "scale": scale,
        "normalised": normalised,
        "codes": codes,
        "levels": chosen,
        "reconstructed": chosen * scale,
    }
