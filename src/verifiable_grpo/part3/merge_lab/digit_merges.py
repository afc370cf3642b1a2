"""Merging two fine-tunes of the GRU digit policy: one taught exact sums on prompts whose
first digit is 0-4, one on 5-9, both from Lab 4's reference. The merges of
verifiable_grpo.part3.merge_lab.merging are scored by the probability each model gives the exact
answer (teacher-forced, EOS included), averaged over each half of the 100 prompts: a
smooth score that greedy decoding's ties cannot flip on another CPU.
"""

from __future__ import annotations

import torch

from verifiable_grpo.part3.digits import policy as dp
from verifiable_grpo.part3.merge_lab import merging
from verifiable_grpo.part3.merge_lab.settings import MergingSettings

HALVES = {
    "low (a = 0-4)": dp.ALL_PROMPTS[dp.ALL_PROMPTS[:, 0] < 5],
    "high (a = 5-9)": dp.ALL_PROMPTS[dp.ALL_PROMPTS[:, 0] >= 5],
}


def fine_tune(
    reference: dp.DigitPolicy,
    prompts: torch.Tensor,
    steps: int = 100,
    batch: int = 64,
    learning_rate: float = 3e-3,
    seed: int = 0,
) -> dp.DigitPolicy:
    """SFT on exact answers for `prompts` only (drawn with replacement)."""
    if steps <= 0 or batch <= 0:
        raise ValueError(f"steps and batch must be positive, got {steps!r} and {batch!r}")
    policy = dp.trainable_copy(reference)
    generator = torch.Generator().manual_seed(seed)
    adam = torch.optim.Adam(policy.parameters(), learning_rate)
    policy.train()
    for _ in range(steps):
        chosen = prompts[torch.randint(len(prompts), (batch,), generator=generator)]
        targets = dp.encode_responses(dp.answers(chosen))
        adam.zero_grad(set_to_none=True)
        dp.masked_nll(policy, chosen, targets).backward()
        adam.step()
    policy.eval()
    return policy


@torch.no_grad()
def answer_probability(policy: dp.DigitPolicy, prompts: torch.Tensor) -> float:
    """Mean probability of the exact reply (its digits, then EOS)."""
    targets = dp.encode_responses(dp.answers(prompts))
    return float(dp.sequence_logprob(policy, prompts, targets).exp().mean())


def with_state(reference: dp.DigitPolicy, state: merging.State) -> dp.DigitPolicy:
    model = dp.trainable_copy(reference)
    model.load_state_dict(state)
    model.eval()
    return model


def scores(policy: dp.DigitPolicy) -> dict[str, float]:
    out = {name: answer_probability(policy, prompts) for name, prompts in HALVES.items()}
    out["all 100"] = answer_probability(policy, dp.ALL_PROMPTS)
    return out


def merges(
    base: merging.State,
    a: merging.State,
    b: merging.State,
    density: float = 0.2,
    drops=(0.5, 0.9),
    seed: int = 0,
) -> dict[str, merging.State]:
    """The merged states the chapter compares, by name."""
    vectors = [merging.task_vector(a, base), merging.task_vector(b, base)]
    out = {
        "soup (average of A and B)": merging.soup([a, b]),
        "task arithmetic, scale 1": merging.task_arithmetic(base, vectors, 1.0),
        f"TIES, density {density}": merging.ties(base, vectors, density, 1.0),
    }
    for drop in drops:
        generator = torch.Generator().manual_seed(seed)
        sparse = [merging.dare(v, drop, generator) for v in vectors]
        out[f"DARE drop {drop} + task arithmetic"] = merging.task_arithmetic(base, sparse, 1.0)
    return out


def cosine(u: merging.State, v: merging.State) -> float:
    """Cosine similarity of two task vectors, all parameters flattened together."""
    dot = sum(float((u[k] * v[k]).sum()) for k in u)
    norms = [sum(float((x[k] ** 2).sum()) for k in x) ** 0.5 for x in (u, v)]
    return dot / (norms[0] * norms[1])


def run_lab(settings: MergingSettings) -> dict:
    """Reference, the two fine-tunes, their merges, a task-arithmetic scale sweep and
    weighted soups, each scored on both halves and on all 100 prompts."""
    steps, seed, drops = settings.steps, settings.seed, settings.drops
    reference = dp.train_reference()
    base = {k: v.detach().clone() for k, v in reference.state_dict().items()}
    (low_name, low), (high_name, high) = HALVES.items()
    tuned_a = fine_tune(reference, low, steps, seed=seed)
    tuned_b = fine_tune(reference, high, steps, seed=seed + 1)
    a, b = tuned_a.state_dict(), tuned_b.state_dict()
    vectors = [merging.task_vector(a, base), merging.task_vector(b, base)]
    score = lambda state: scores(with_state(reference, state))
    rows = {
        "reference": scores(reference),
        f"A: tuned on {low_name}": scores(tuned_a),
        f"B: tuned on {high_name}": scores(tuned_b),
    }
    rows.update(
        {
            name: score(state)
            for name, state in merges(base, a, b, settings.density, tuple(drops), seed).items()
        }
    )
    generator = torch.Generator().manual_seed(seed)
    return {
        "rows": rows,
        "cosine": cosine(*vectors),
        "dare_sparsity": {
            str(d): merging.sparsity(merging.dare(vectors[0], d, generator)) for d in drops
        },
        "scale_sweep": [
            dict(scale=x, **score(merging.task_arithmetic(base, vectors, x)))
            for x in settings.scales
        ],
        "soup_weights": [
            dict(weight_on_a=w, **score(merging.soup([a, b], [w, 1 - w])))
            for w in settings.soup_weights
        ],
    }
