"""An objective's loss: the weight of each response in a batch, the KL term, the per-token
policy term its surrogate chooses, each response's reduced loss and the batch's scalar loss.

The arithmetic lives in losses.py and surrogates.py; these functions choose among it as
an objectives.Objective says (objectives.py re-exports them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from verifiable_grpo.training import losses, surrogates

if TYPE_CHECKING:  # only an annotation here: objectives.py imports this module
    from verifiable_grpo.training.objectives import Objective


def response_weights(
    objective: Objective,
    lengths,
    max_length: int | None = None,
    total_tokens: int | None = None,
    micro_batches: int | None = None,
) -> list[list[float]]:
    """The multiplier of each response's reduced loss ([P][G] python floats): the loss of
    a batch is sum_i w_i * response_losses_i. max_length resolves a constant-length
    aggregation without its own length; total_tokens is the generation batch's token
    count for aggregation over generation-batch tokens (default: these responses').

    Micro-batch tokens (bnpo): by default the whole optimizer step is one micro-batch
    (this book's convention). micro_batches=k gives TRL's: the step's responses split in
    order into k equal micro-batches, each normalised by its own token count, / k."""
    aggregation = objective.aggregation
    length = aggregation.length if aggregation.length is not None else max_length
    if aggregation.kind == "constant_length" and length is None:
        raise ValueError(
            f"objective {objective.name}: a constant-length aggregation needs "
            "max_length (the run's tokens.max_response)"
        )
    tokens = total_tokens if aggregation.tokens == "generation_batch" else None
    split = micro_batches if aggregation.tokens == "micro_batch" else None
    return losses.aggregation_weights(aggregation.kind, lengths, length, tokens, split)


def token_weights(
    objective: Objective, lengths, max_length: int | None = None, total_tokens: int | None = None
) -> list[list[float]]:
    """The weight each active token of each response gets in the loss ([P][G], one
    number per response, the same on all its tokens): what a chapter tabulates."""
    weights = response_weights(objective, lengths, max_length, total_tokens)
    if objective.aggregation.kind != "response_mean":
        return weights
    return [[w / n for w, n in zip(wr, nr)] for wr, nr in zip(weights, lengths)]


def kl_per_token(
    objective: Objective, current_logits, reference_logits, targets, block_size: int = 4096
):
    """The objective's per-token KL [B, T] (None for no KL term). Logits are [B, T, V] at
    the prefixes that predicted `targets` [B, T]; the reference is a constant."""
    kind = objective.kl.kind
    if kind == "none":
        return None
    if kind == "exact_prefix":
        return losses.exact_prefix_kl(current_logits, reference_logits, block_size=block_size)
    index = torch.as_tensor(targets, device=current_logits.device).unsqueeze(-1)
    current = torch.log_softmax(current_logits, dim=-1).gather(-1, index).squeeze(-1)
    with torch.no_grad():
        reference = torch.log_softmax(reference_logits, dim=-1).gather(-1, index).squeeze(-1)
    return losses.sampled_kl_estimators(current, reference)["k3"]


def policy_tokens(objective: Objective, batch: losses.TokenLogProbs, advantages):
    """The objective's per-token policy term [B, T] (0.0 on inactive tokens) and its audit,
    `batch.old` the log-probs the ratio divides by."""
    function = surrogates.SURROGATES[objective.surrogate.kind].function
    return function(objective, batch, advantages)


def response_losses(
    objective: Objective,
    batch: losses.TokenLogProbs,
    advantages,
    kl_per_token=None,
    trainer_old=None,
):
    """Each response's loss [B] before the batch weights: policy term + coefficient * KL,
    both reduced over the response's tokens the objective's way (mean, or sum).

    `batch.old` holds the sampler's log-probs. With a behaviour correction the ratio divides by
    the trainer's log-probs at the rollout's parameters instead, `trainer_old` (default:
    `current` detached, exact on the first update of a rollout set), and each token's
    policy term is weighted by the correction (the KL term is not).
    Returns (loss[B], audit): the surrogate's audit plus "surrogate", "kl" and "loss" [B]
    (and "behaviour_weights" [B, T] with a correction)."""
    current, old, mask = batch.current, batch.old, batch.mask
    correction = objective.correction
    if correction.kind == "none":
        per_token, audit = policy_tokens(objective, batch, advantages)
    else:
        trainer = current.detach() if trainer_old is None else torch.as_tensor(trainer_old)
        weights = surrogates.behaviour_weights(
            trainer, old, mask, correction.kind, correction.clip_min, correction.clip_max
        )
        divided = losses.TokenLogProbs(current, trainer, mask)  # the trainer's old log-probs
        per_token, audit = policy_tokens(objective, divided, advantages)
        per_token = per_token * weights.to(per_token.dtype)
        audit = dict(audit, behaviour_weights=weights)
    reduce = (
        losses.masked_token_mean
        if objective.aggregation.kind == "response_mean"
        else losses.masked_token_sum
    )
    surrogate = reduce(per_token, mask)
    if objective.kl.kind == "none":
        if kl_per_token is not None:
            raise ValueError(f"objective {objective.name} has no KL term, but a KL was given")
        kl = torch.zeros_like(surrogate)
        loss = surrogate
    else:
        if kl_per_token is None or kl_per_token.shape != current.shape:
            raise ValueError(
                f"objective {objective.name} needs a per-token KL shaped like the "
                f"log-probs {tuple(current.shape)}"
            )
        kl = reduce(kl_per_token, mask)
        loss = surrogate + objective.kl.coefficient * kl
    audit = dict(audit, surrogate=surrogate.detach(), kl=kl.detach(), loss=loss.detach())
    return loss, audit


@dataclass(frozen=True)
class Normalisation:
    """How a batch's responses are grouped and what its loss is divided by: group_size
    responses per prompt, laid out prompt by prompt; max_length, total_tokens and
    micro_batches as response_weights takes them (the run's tokens.max_response for a
    constant length, the generation batch's token count, TRL's bnpo micro-batches)."""

    group_size: int
    max_length: int | None = None
    total_tokens: int | None = None
    micro_batches: int | None = None


def objective_loss(
    objective: Objective,
    batch: losses.TokenLogProbs,
    advantages,
    kl_per_token,
    normalisation: Normalisation,
    trainer_old=None,
):
    """The scalar loss of a batch [B = P * G, T] laid out prompt by prompt:
    sum_i w_i * loss_i with the objective's weights (normalisation: response_weights;
    trainer_old: response_losses). Returns (loss, audit)."""
    per_response, audit = response_losses(objective, batch, advantages, kl_per_token, trainer_old)
    group_size = normalisation.group_size
    if type(group_size) is not int or group_size < 1 or per_response.numel() % group_size:
        raise ValueError(
            f"{per_response.numel()} responses do not split into groups of {group_size!r}"
        )
    lengths = torch.as_tensor(batch.mask).bool().sum(dim=1).reshape(-1, group_size).tolist()
    weights = response_weights(
        objective,
        lengths,
        normalisation.max_length,
        normalisation.total_tokens,
        normalisation.micro_batches,
    )
    flat = torch.tensor(
        [w for row in weights for w in row], dtype=per_response.dtype, device=per_response.device
    )
    loss = (per_response * flat).sum()
    return loss, dict(audit, weights=weights, total=float(loss.detach()))
