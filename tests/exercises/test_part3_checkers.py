"""Part III's lab checkers pass a correct solution (written here, independently) and name
each common mistake when it is made."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from verifiable_grpo.exercises import (
    check_benjamini_hochberg,
    check_bradley_terry_loss,
    check_dpo_loss,
    check_lora_forward,
    check_silent_fraction,
    check_top_event_probability,
    check_trained_fraction,
    check_wilson,
    fault_tree_probability,
    lora_forward,
    preference_losses,
    silent_groups,
    suite_statistics,
    trained_fraction,
)


def _hints(check, fn) -> str:
    result = check(fn, verbose=False)
    assert result.attempted and not result.passed
    return "\n".join(result.failures)


def test_trained_fraction():
    assert check_trained_fraction(lambda m: sum(map(sum, m)) / sum(map(len, m)), verbose=False)
    text = _hints(check_trained_fraction, lambda m: sum(sum(r) / len(r) for r in m) / len(m))
    assert trained_fraction.PER_CONVERSATION in text


def test_lora_forward():
    def good(x, w, a, b, alpha):
        return F.linear(x, w) + alpha / a.shape[0] * F.linear(F.linear(x, a), b)

    assert check_lora_forward(good, verbose=False)
    unscaled = _hints(check_lora_forward, lambda x, w, a, b, alpha: x @ w.T + x @ a.T @ b.T)
    assert lora_forward.NO_SCALE in unscaled
    by_alpha = _hints(check_lora_forward, lambda x, w, a, b, al: x @ w.T + al * (x @ a.T @ b.T))
    assert lora_forward.ALPHA_ONLY in by_alpha


def test_bradley_terry_loss():
    assert check_bradley_terry_loss(lambda c, r: -F.logsigmoid(c - r).mean(), verbose=False)
    naive = _hints(check_bradley_terry_loss, lambda c, r: -torch.log(torch.sigmoid(c - r)).mean())
    assert preference_losses.UNSTABLE in naive
    flipped = _hints(check_bradley_terry_loss, lambda c, r: -F.logsigmoid(r - c).mean())
    assert preference_losses.SIGN in flipped


def test_dpo_loss():
    def good(pc, pr, rc, rr, beta):
        return -F.logsigmoid(beta * ((pc - rc) - (pr - rr))).mean()

    assert check_dpo_loss(good, verbose=False)
    text = _hints(
        check_dpo_loss, lambda pc, pr, rc, rr, beta: -F.logsigmoid(beta * (pc - pr)).mean()
    )
    assert preference_losses.NO_REFERENCE in text
    text = _hints(check_dpo_loss, lambda pc, pr, rc, rr, beta: good(pc, pr, rc, rr, 1.0))
    assert preference_losses.NO_BETA in text


def test_silent_fraction():
    def good(rewards):
        return (rewards.max(dim=1).values == rewards.min(dim=1).values).double().mean()

    assert check_silent_fraction(good, verbose=False)
    text = _hints(check_silent_fraction, lambda r: (r.sum(dim=1) == 0).double().mean())
    assert silent_groups.ONLY_WRONG in text


def test_wilson():
    def good(k, n, z):
        p, q = k / n, z * z / n
        centre, half = (p + q / 2) / (1 + q), z * math.sqrt(p * (1 - p) / n + q / (4 * n)) / (1 + q)
        return max(0.0, centre - half), min(1.0, centre + half)

    assert check_wilson(good, verbose=False)

    def wald(k, n, z):
        half = z * math.sqrt(k / n * (1 - k / n) / n)
        return k / n - half, k / n + half

    assert suite_statistics.WALD in _hints(check_wilson, wald)


def test_benjamini_hochberg():
    def good(p):
        m, order = len(p), sorted(range(len(p)), key=lambda i: p[i])
        out, running = [0.0] * m, 1.0
        for rank in range(m, 0, -1):
            i = order[rank - 1]
            running = min(running, p[i] * m / rank)
            out[i] = running
        return out

    assert check_benjamini_hochberg(good, verbose=False)
    text = _hints(check_benjamini_hochberg, lambda p: [min(1.0, v * len(p)) for v in p])
    assert suite_statistics.BONFERRONI in text

    def no_running_min(p):
        ranks = {i: r for r, i in enumerate(sorted(range(len(p)), key=lambda i: p[i]), 1)}
        return [min(1.0, v * len(p) / ranks[i]) for i, v in enumerate(p)]

    assert suite_statistics.NOT_MONOTONE in _hints(check_benjamini_hochberg, no_running_min)


def test_top_event_probability():
    def good(top, events):
        event = events[top]
        if event["type"] == "basic":
            return event["p"]
        kids = [good(k, events) for k in event["children"]]
        return math.prod(kids) if event["gate"] == "AND" else 1 - math.prod(1 - p for p in kids)

    assert check_top_event_probability(good, verbose=False)

    def summed(top, events):
        event = events[top]
        if event["type"] == "basic":
            return event["p"]
        kids = [summed(k, events) for k in event["children"]]
        return math.prod(kids) if event["gate"] == "AND" else sum(kids)

    assert fault_tree_probability.OR_AS_SUM in _hints(check_top_event_probability, summed)
