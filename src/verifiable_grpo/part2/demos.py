"""What Part II's chapters compute: per-token weights per arm, the on-policy placebo
arms by autograd, and what dynamic sampling costs, on small hand-set inputs.

Everything goes through the registry (training/objectives.py) and the real samplers
(training/samplers.py); nothing here has arithmetic of its own.
"""

from __future__ import annotations

import torch

from verifiable_grpo.training import objectives, samplers

STUDY_ARMS = objectives.STUDY_ARMS
TRL_REDUCTIONS = objectives.TRL_REDUCTIONS


def arm_rows(names=STUDY_ARMS + TRL_REDUCTIONS) -> tuple[list[str], list[list[str]]]:
    """The registry's columns for the study's arms and TRL's reductions."""
    return objectives.registry_table(
        [objectives.get_objective(n) for n in names],
        ("name", "advantages", "ratio", "clip", "aggregation", "sampler"),
    )


def token_weights(
    rewards, lengths, names=STUDY_ARMS + TRL_REDUCTIONS, max_length: int | None = None
) -> dict[str, list[float]]:
    """On policy, one group: the gradient weight w = d(-loss)/d log p that each token of
    each response gets under each arm (the same on every token of a response), by
    autograd through objectives.objective_loss. Lengths are tokens per response."""
    rewards = [float(r) for r in rewards]
    lengths = [int(n) for n in lengths]
    if len(rewards) != len(lengths) or len(rewards) < 2:
        raise ValueError(
            f"need one length per reward and at least 2 responses; got "
            f"{len(rewards)} rewards and {len(lengths)} lengths"
        )
    if any(n < 1 for n in lengths):
        raise ValueError("every response needs at least one token")
    width = max(lengths)
    mask = torch.arange(width)[None, :] < torch.tensor(lengths)[:, None]
    logp = torch.full((len(lengths), width), -1.0, dtype=torch.float64)
    table = {}
    for name in names:
        objective = objectives.get_objective(name)
        adv = objectives.advantages(objective, torch.tensor([rewards], dtype=torch.float64))
        current = logp.clone().requires_grad_(True)
        loss, _ = objectives.objective_loss(
            objective,
            objectives.TokenLogProbs(current, current.detach(), mask),
            adv.values[0],
            None,
            objectives.Normalisation(group_size=len(rewards), max_length=max_length or width),
        )
        loss.backward()
        table[name] = [float(-current.grad[i, 0]) for i in range(len(lengths))]
    return table


# --------------------------------------------------------------------------- autograd
def placebo_gradients(seed: int = 0, shift: float = 0.0) -> dict[str, float]:
    """Max |gradient difference| from grpo's for gspo and for dapo's clip-higher, on random
    ragged log-probs; shift = 0 is on policy (ratio exactly 1), shift > 0 moves the
    current log-probs away from the old ones like a second update would."""
    generator = torch.Generator().manual_seed(seed)
    lengths = [3, 5, 2, 7]
    mask = torch.arange(7)[None, :] < torch.tensor(lengths)[:, None]
    old = -3 * torch.rand(4, 7, dtype=torch.float64, generator=generator)
    current = old + shift * torch.randn(4, 7, dtype=torch.float64, generator=generator)
    advantages = torch.tensor([0.8659, -0.8659, 0.8659, -0.8659], dtype=torch.float64)
    grads = {}
    for name in ("grpo", "gspo", "dapo"):
        logp = current.clone().requires_grad_(True)
        loss, _ = objectives.objective_loss(
            objectives.get_objective(name),
            objectives.TokenLogProbs(logp, old, mask),
            advantages,
            None,
            objectives.Normalisation(group_size=4),
        )
        loss.backward()
        grads[name] = logp.grad
    return {name: float((grads[name] - grads["grpo"]).abs().max()) for name in ("gspo", "dapo")}


# --------------------------------------------------------------------------- cost
class BernoulliSource:
    """A fake rollout source: prompt k succeeds with probability rates[k % len(rates)]."""

    def __init__(self, rates, seed: int):
        self.rates = list(rates)
        self.generator = torch.Generator().manual_seed(seed)
        self.next = 0

    def prompts(self, count):
        chosen = [
            {
                "document_id": f"p{self.next + i}",
                "rate": self.rates[(self.next + i) % len(self.rates)],
            }
            for i in range(count)
        ]
        self.next += count
        return chosen

    def draw(self, example, count, group_id):
        draws = torch.rand(count, generator=self.generator, dtype=torch.float64)
        return [{"reward": float(u < example["rate"]), "response_tokens": 1} for u in draws]


def dynamic_sampling_cost(
    rates,
    steps: int = 200,
    prompts: int = 4,
    group_size: int = 4,
    max_batches: int = 10,
    seed: int = 0,
) -> dict:
    """Mean rollouts per step that dapo's real sampler draws and discards on a fake source
    of prompts with the given success rates; steps that exhausted the cap are counted."""
    source = BernoulliSource(rates, seed)
    generated, discarded, failed = [], [], 0
    for step in range(steps):
        try:
            batch = samplers.dynamic_batch(source, prompts, group_size, step, max_batches)
        except samplers.DynamicSamplingExhausted:
            failed += 1
            continue
        generated.append(batch.cost.rollouts_generated)
        discarded.append(batch.cost.rollouts_discarded)

    def mean(xs) -> float:
        return sum(xs) / len(xs) if xs else float("nan")

    return {
        "rollouts_per_step": mean(generated),
        "discarded_per_step": mean(discarded),
        "plain_rollouts_per_step": prompts * group_size,
        "failed_steps": failed,
        "steps": steps,
    }


# --------------------------------------------------------------------------- the E1 card
E1_REFERENCE = "data/recorded/reference-e1.json"


def e1_runs() -> list[dict]:
    """The published per-seed accuracies of the E1 study as rows for analysis.analyse
    (regime on_policy: E1 made one update per generation batch)."""
    from verifiable_grpo.core.config import read_json, resolve

    reference = read_json(resolve(E1_REFERENCE))
    return [
        {"arm": arm, "seed": seed, "regime": "on_policy", "heldout_greedy_all": value}
        for arm, values in reference["per_seed_heldout"].items()
        for seed, value in zip(reference["seeds"], values)
    ]
