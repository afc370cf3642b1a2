"""Model merging on state dicts: weight soups, task arithmetic, TIES and DARE, and the
LoRA caution that adapters merge as products B·A, never as separately averaged factors.

Every function takes and returns {name: tensor} dicts of one architecture, so it works
on any nn.Module's state_dict (the chapter uses Part III's GRU digit policy). Task vectors
are differences from the shared starting point: tau = theta_finetuned - theta_base.
"""

from __future__ import annotations

import torch

State = dict[str, torch.Tensor]


def _same_keys(states: list[State]) -> None:
    if not states:
        raise ValueError("need at least one state dict")
    keys = set(states[0])
    for i, state in enumerate(states[1:], 1):
        if set(state) != keys:
            raise ValueError(
                f"state {i} has other parameters than state 0: {sorted(keys ^ set(state))[:3]}"
            )
        for name in keys:
            if state[name].shape != states[0][name].shape:
                raise ValueError(
                    f"{name}: shape {tuple(state[name].shape)} in state {i}, "
                    f"{tuple(states[0][name].shape)} in state 0"
                )


def _fraction(name: str, value: float, low_open: bool) -> None:
    ok = (0 < value <= 1) if low_open else (0 <= value < 1)
    if not ok:
        raise ValueError(f"{name} must lie in {'(0, 1]' if low_open else '[0, 1)'}, got {value!r}")


def task_vector(finetuned: State, base: State) -> State:
    _same_keys([finetuned, base])
    return {k: finetuned[k] - base[k] for k in base}


def add(base: State, vector: State, scale: float = 1.0) -> State:
    _same_keys([base, vector])
    return {k: base[k] + scale * vector[k] for k in base}


def soup(states: list[State], weights: list[float] | None = None) -> State:
    """A weighted average of whole models (a uniform soup by default)."""
    _same_keys(states)
    weights = [1 / len(states)] * len(states) if weights is None else list(weights)
    if len(weights) != len(states) or any(w < 0 for w in weights) or abs(sum(weights) - 1) > 1e-9:
        raise ValueError("weights must be one non-negative number per state, summing to 1")
    return {k: sum(w * s[k] for w, s in zip(weights, states)) for k in states[0]}


def task_arithmetic(base: State, vectors: list[State], scale: float = 1.0) -> State:
    """theta_base + scale · sum of task vectors."""
    _same_keys([base] + vectors)
    return add(base, {k: sum(v[k] for v in vectors) for k in base}, scale)


def trim(vector: State, density: float) -> State:
    """Keep the `density` fraction of entries with the largest magnitude in each tensor."""
    _fraction("density", density, low_open=True)
    kept = {}
    for name, values in vector.items():
        keep = max(1, round(density * values.numel()))
        threshold = values.abs().flatten().kthvalue(values.numel() - keep + 1).values
        kept[name] = torch.where(values.abs() >= threshold, values, torch.zeros_like(values))
    return kept


def ties(base: State, vectors: list[State], density: float = 0.2, scale: float = 1.0) -> State:
    """TIES: trim each task vector, elect a sign per entry (the sign of the trimmed sum),
    then average only the entries that agree with it (a disjoint mean), and add."""
    _same_keys([base] + vectors)
    trimmed = [trim(v, density) for v in vectors]
    merged = {}
    for name in base:
        stack = torch.stack([t[name] for t in trimmed])
        sign = torch.sign(stack.sum(0))
        agree = (torch.sign(stack) == sign) & (stack != 0)
        count = agree.sum(0).clamp_min(1)
        merged[name] = (stack * agree).sum(0) / count
    return add(base, merged, scale)


def dare(vector: State, drop: float, generator: torch.Generator) -> State:
    """DARE: drop each entry with probability `drop` and rescale the rest by 1/(1 - drop),
    so the vector is unchanged in expectation."""
    _fraction("drop", drop, low_open=False)
    out = {}
    for name, values in vector.items():
        keep = torch.rand(values.shape, generator=generator) >= drop
        out[name] = torch.where(keep, values / (1 - drop), torch.zeros_like(values))
    return out


def sparsity(vector: State) -> float:
    """Fraction of exact zeros over all entries."""
    total = sum(v.numel() for v in vector.values())
    return sum(int((v == 0).sum()) for v in vector.values()) / total


# ---------------------------------------------------------------- adapters
def adapter_merge_example() -> dict:
    """Two rank-1 adapters on a 2x2 layer: B1 A1 = e1 e1^T and B2 A2 = e2 e2^T.
    Averaging their products gives 0.5·I; averaging the factors first gives
    ((e1 + e2)/2)((e1 + e2)/2)^T, a matrix of 0.25s, which neither adapter learned."""
    e1, e2 = torch.tensor([[1.0], [0.0]]), torch.tensor([[0.0], [1.0]])
    adapters = [(e1, e1.T), (e2, e2.T)]  # (B: out x r, A: r x in)
    products = sum(b @ a for b, a in adapters) / 2
    factors = (sum(b for b, _ in adapters) / 2) @ (sum(a for _, a in adapters) / 2)
    return {"average_of_products": products, "product_of_averages": factors}


def stack_adapters(
    adapters: list[tuple[torch.Tensor, torch.Tensor]], weights: list[float]
) -> tuple[torch.Tensor, torch.Tensor]:
    """Factors whose product is exactly sum_i w_i B_i A_i: concatenate the ranks
    (B = [w_1 B_1, ..., w_k B_k], A = [A_1; ...; A_k]), at rank sum r_i."""
    if len(adapters) != len(weights) or not adapters:
        raise ValueError("need one weight per adapter, and at least one adapter")
    b = torch.cat([w * b for (b, _), w in zip(adapters, weights)], dim=1)
    a = torch.cat([a for _, a in adapters], dim=0)
    return b, a
