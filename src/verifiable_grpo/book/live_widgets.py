"""The Python twins of the widgets that run inside the built book's pages.

The built book is static HTML: an ipywidget there shows one saved figure. So the chapters
also carry small widgets written in JavaScript (book/_live/vg-live.js) that compute in the
reader's browser, offline. Their numbers must be the package's numbers: each JavaScript
computation has a twin here (or is a function of the training code itself), and
tests/book/test_live_widgets.py drives the page in headless Chromium over a grid of inputs
and compares. The texts of the clip's six regions live here once, for the widget and for
the diagram of the regions (diagrams_part1.py).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import torch

from verifiable_grpo.core.config import repo_root
from verifiable_grpo.training.losses import exact_prefix_kl, sampled_kl_estimators

# The module the chapters load with <script src="../../_static/vg-live.js">: book/_live is
# one of html_static_path's folders (not a root _static/, whose every .js Jupyter Book 1
# would inject into every page).
LIVE_SCRIPT = Path("book") / "_live" / "vg-live.js"
ESTIMATORS = ("k1", "k2", "k3")

# (sign of A, where the ratio lies) -> (does the gradient survive?, what happens there).
# At an edge of the interval both branches agree and the gradient is kept ("inside").
CLIP_REGIONS = {
    ("A > 0", "below"): (True, "a good token became less likely: pulled back up, unclipped"),
    ("A > 0", "inside"): (True, "inside the interval: the plain policy gradient"),
    ("A > 0", "above"): (False, "a good token is already more likely: clipped, no push"),
    ("A < 0", "below"): (False, "a bad token is already less likely: clipped, no push"),
    ("A < 0", "inside"): (True, "inside the interval: the plain policy gradient"),
    ("A < 0", "above"): (True, "a bad token became more likely: pushed back down, unclipped"),
}
ZERO_ADVANTAGE = "A = 0: the token carries no gradient wherever the ratio lies"


def live_script_path() -> Path:
    return repo_root() / LIVE_SCRIPT


def clip_region(
    advantage: float, ratio: float, clip_epsilon: float = 0.2, clip_epsilon_high=None
) -> tuple[tuple[str, str] | None, bool, str]:
    """(region key or None when A = 0, gradient kept?, description) for one token."""
    high = clip_epsilon if clip_epsilon_high is None else clip_epsilon_high
    if ratio < 1.0 - clip_epsilon:
        where = "below"
    elif ratio > 1.0 + high:
        where = "above"
    else:
        where = "inside"
    if advantage == 0:
        return None, False, ZERO_ADVANTAGE
    key = ("A > 0" if advantage > 0 else "A < 0", where)
    kept, text = CLIP_REGIONS[key]
    return key, kept, text


def kl_estimator_values(p, q) -> dict:
    """What each one-token estimator gives for every token p can emit, and its mean and
    standard deviation over one draw from p, beside the exact KL(p || q).

    p and q are normalised weights; tokens with p = 0 are never drawn (None in per_token).
    k1 and k3 average to the exact KL, k2 does not; their spread is what sampling costs."""
    p_arr = np.asarray(p, dtype=np.float64)
    q_arr = np.asarray(q, dtype=np.float64)
    if p_arr.shape != q_arr.shape or p_arr.ndim != 1 or p_arr.size == 0:
        raise ValueError(
            f"p and q must be lists of equal length, got {p_arr.size} and {q_arr.size}"
        )
    if not (np.all(np.isfinite(p_arr)) and np.all(np.isfinite(q_arr))):
        raise ValueError("p and q must be finite numbers")
    if np.any(p_arr < 0) or np.any(q_arr < 0) or p_arr.sum() <= 0 or q_arr.sum() <= 0:
        raise ValueError("p and q must be non-negative weights with a positive sum")
    p_arr, q_arr = p_arr / p_arr.sum(), q_arr / q_arr.sum()
    if np.any((p_arr > 0) & (q_arr == 0)):
        raise ValueError("q is 0 where p is not: KL(p || q) is infinite")
    with np.errstate(divide="ignore"):
        log_p, log_q = torch.from_numpy(np.log(p_arr)), torch.from_numpy(np.log(q_arr))
    drawn = p_arr > 0
    estimates = sampled_kl_estimators(log_p[drawn], log_q[drawn])
    weights = p_arr[drawn]
    view = {"p": p_arr.tolist(), "q": q_arr.tolist(), "per_token": {}}
    view["exact"] = float(exact_prefix_kl(log_p, log_q, block_size=4096))
    for name in ESTIMATORS:
        values = estimates[name].numpy()
        mean = float((weights * values).sum())
        view[f"{name}_mean"] = mean
        view[f"{name}_std"] = math.sqrt(float((weights * (values - mean) ** 2).sum()))
        per_token = iter(values.tolist())
        view["per_token"][name] = [next(per_token) if d else None for d in drawn]
    return view
