"""GRPO-family objectives as data: a small frozen spec per variant, kept in one registry.

An objective says how rewards become advantages, at which level the importance ratio is
taken, the clip interval, how per-token terms are aggregated into one loss, the KL term
and its coefficient, and which sampler fills a batch. The sampler returns rewards; the
objective turns them into advantages (`with_advantages`) and into the loss
(`response_losses` + `response_weights`, or `objective_loss` for a whole batch). Part I's
GRPO is one entry ("part1", built from the config by `objective_from_config`); Part II's
arms are entries too, so a chapter can print them side by side (`registry_table`) and a
pre-registration can lock them by `Objective.sha256()`.

The arithmetic lives in losses.py; this module only chooses among it.
"""
from __future__ import annotations

import dataclasses
import difflib
from dataclasses import dataclass

import torch

from verifiable_grpo.training import losses
from verifiable_grpo.core.config import canonical_json, sha256_bytes
from verifiable_grpo.core.config_schema import typed

SCHEMA = "verifiable-grpo-objective-v1"
ADVANTAGE_KINDS = ("group_std", "centred", "posterior")
TOKEN_COUNTS = ("micro_batch", "generation_batch")
KL_KINDS = ("exact_prefix", "k3", "none")
SAMPLER_KINDS = ("plain", "dynamic", "aero")


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(message)


def _number(value) -> bool:
    return type(value) in (int, float)


def _count(value) -> bool:
    return type(value) is int and value >= 1


# --------------------------------------------------------------------------- the parts
@dataclass(frozen=True)
class AdvantageRule:
    """group_std: (r - mean) / (std + epsilon), std with `correction` (0 population,
    1 sample). centred: r - mean. posterior: groups of two or more as group_std; a
    one-rollout group as (r - p) / (sqrt(p (1 - p)) + epsilon), p the Beta(`prior`)
    posterior mean of the prompt's success rate over all of its generated rollouts."""
    kind: str = "group_std"
    correction: int | None = 0
    epsilon: float | None = 1e-8
    prior: tuple[float, float] | None = None

    def __post_init__(self):
        _require(self.kind in ADVANTAGE_KINDS,
                 f"advantage rule {self.kind!r} is unknown: use one of {ADVANTAGE_KINDS}")
        if self.kind == "centred":
            _require(self.correction is None and self.epsilon is None and self.prior is None,
                     "a centred advantage rule takes no correction, epsilon or prior")
            return
        _require(self.correction in (0, 1),
                 f"{self.kind}: correction must be 0 (population) or 1 (sample), got "
                 f"{self.correction!r}")
        _require(_number(self.epsilon) and self.epsilon > 0,
                 f"{self.kind}: epsilon must be a positive number, got {self.epsilon!r}")
        if self.kind == "group_std":
            _require(self.prior is None, "a group_std rule takes no prior")
        else:
            _require(isinstance(self.prior, tuple) and len(self.prior) == 2
                     and all(_number(x) and x > 0 for x in self.prior),
                     f"posterior: prior must be a pair (a, b) > 0, got {self.prior!r}")

    def describe(self) -> str:
        if self.kind == "centred":
            return "r - mean"
        std = f"{('population', 'sample')[self.correction]} std + {self.epsilon:g}"
        if self.kind == "group_std":
            return std
        a, b = self.prior
        return f"{std}; 1 rollout: Beta({a:g},{b:g}) posterior"


@dataclass(frozen=True)
class ClipInterval:
    """Ratios are clipped to [1 - low, 1 + high]."""
    low: float = 0.2
    high: float = 0.2

    def __post_init__(self):
        _require(_number(self.low) and 0 < self.low < 1,
                 f"clip low must lie in (0, 1), got {self.low!r}")
        _require(_number(self.high) and self.high > 0,
                 f"clip high must be positive, got {self.high!r}")

    def describe(self) -> str:
        return f"[{1 - self.low:g}, {1 + self.high:g}]"


@dataclass(frozen=True)
class Aggregation:
    """response_mean: token mean per response, then mean over responses and prompts.
    token_sum: token sum / tokens counted over `tokens` (the micro-batch, bnpo; or the
    whole generation batch, dapo). constant_length: token sum / (responses * `length`),
    `length` None meaning the run's tokens.max_response."""
    kind: str = "response_mean"
    tokens: str | None = None
    length: int | None = None

    def __post_init__(self):
        _require(self.kind in losses.AGGREGATIONS,
                 f"aggregation {self.kind!r} is unknown: use one of {losses.AGGREGATIONS}")
        _require((self.tokens in TOKEN_COUNTS) == (self.kind == "token_sum"),
                 f"{self.kind}: tokens must be one of {TOKEN_COUNTS} for token_sum and None "
                 f"otherwise, got {self.tokens!r}")
        _require(self.length is None or (self.kind == "constant_length" and _count(self.length)),
                 f"{self.kind}: length must be None, or a positive integer for constant_length; "
                 f"got {self.length!r}")

    def describe(self) -> str:
        if self.kind == "response_mean":
            return "token mean / response, mean"
        if self.kind == "token_sum":
            return f"token sum / {self.tokens.replace('_', ' ')} tokens"
        return f"token sum / (B x {self.length or 'max_response'})"


@dataclass(frozen=True)
class KLTerm:
    """exact_prefix: the exact KL to the reference on every visited prefix; k3: the k3
    estimate on the sampled token; none. Added per token as coefficient * KL and
    aggregated like the surrogate."""
    kind: str = "exact_prefix"
    coefficient: float = 0.02

    def __post_init__(self):
        _require(self.kind in KL_KINDS, f"KL term {self.kind!r} is unknown: use one of {KL_KINDS}")
        _require(_number(self.coefficient) and self.coefficient >= 0,
                 f"KL coefficient must be a number >= 0, got {self.coefficient!r}")
        _require(self.kind != "none" or self.coefficient == 0,
                 f"KL term none needs coefficient 0, got {self.coefficient!r}")

    def describe(self) -> str:
        return "none" if self.kind == "none" else f"{self.kind.replace('_', ' ')} x {self.coefficient:g}"


@dataclass(frozen=True)
class Sampler:
    """plain: one generation batch as drawn. dynamic: keep only groups whose rewards
    vary, refilling with fresh generation batches, at most `max_generation_batches`, else
    fail. aero: `exploration_rollouts` per prompt, one more at a time for all-wrong prompts
    from a `rescue_budget` shared by the batch, keep the correct ones plus `rejection_k`
    incorrect per correct, at most `max_rollouts` slots per prompt."""
    kind: str = "plain"
    max_generation_batches: int | None = None
    exploration_rollouts: int | None = None
    rescue_budget: int | None = None
    rejection_k: int | None = None
    max_rollouts: int | None = None

    def __post_init__(self):
        _require(self.kind in SAMPLER_KINDS,
                 f"sampler {self.kind!r} is unknown: use one of {SAMPLER_KINDS}")
        aero = ("exploration_rollouts", "rescue_budget", "rejection_k", "max_rollouts")
        wanted = {"plain": (), "dynamic": ("max_generation_batches",), "aero": aero}[self.kind]
        for name in ("max_generation_batches",) + aero:
            value = getattr(self, name)
            if name in wanted:
                _require(_count(value), f"sampler {self.kind}: {name} must be a positive "
                                        f"integer, got {value!r}")
            else:
                _require(value is None, f"sampler {self.kind} takes no {name}")
        if self.kind == "aero":
            _require(self.exploration_rollouts <= self.max_rollouts,
                     "sampler aero: exploration_rollouts exceeds max_rollouts")

    def describe(self) -> str:
        if self.kind == "plain":
            return "plain"
        if self.kind == "dynamic":
            return f"dynamic (<= {self.max_generation_batches} batches)"
        return (f"aero ({self.exploration_rollouts} explore, rescue {self.rescue_budget}, "
                f"k={self.rejection_k}, <= {self.max_rollouts})")


@dataclass(frozen=True)
class Objective:
    name: str
    description: str
    advantages: AdvantageRule
    ratio: str
    clip: ClipInterval
    aggregation: Aggregation
    kl: KLTerm
    sampler: Sampler

    def __post_init__(self):
        _require(isinstance(self.name, str) and self.name.isidentifier(),
                 f"an objective's name must be an identifier, got {self.name!r}")
        _require(isinstance(self.description, str) and self.description.strip() != ""
                 and "\n" not in self.description,
                 f"objective {self.name}: the description must be one non-empty line")
        _require(self.ratio in losses.RATIO_LEVELS,
                 f"objective {self.name}: ratio level {self.ratio!r} is unknown: use one of "
                 f"{losses.RATIO_LEVELS}")
        for field, kind in (("advantages", AdvantageRule), ("clip", ClipInterval),
                            ("aggregation", Aggregation), ("kl", KLTerm), ("sampler", Sampler)):
            _require(isinstance(getattr(self, field), kind),
                     f"objective {self.name}: {field} must be a {kind.__name__}")

    def mechanics(self) -> dict:
        """Everything that decides the arithmetic (name and description left out, so two
        names for one mechanism share a hash), as plain JSON values.

        The fields of schema v1 are always listed; a field added to a part later enters
        only when an entry sets it away from its default, so a new axis with a default
        changes no existing hash (Part I's pinned hash, Part II's lock)."""
        spec = {}
        for axis in dataclasses.fields(self):
            if axis.name in ("name", "description"):
                continue
            value = getattr(self, axis.name)
            spec[axis.name] = (_part_mechanics(value, axis.name)
                               if dataclasses.is_dataclass(value) else value)
        return {"schema": SCHEMA, **spec}

    def sha256(self) -> str:
        """SHA-256 of the canonical JSON of `mechanics()`: what a pre-registration locks."""
        return sha256_bytes(canonical_json(self.mechanics()))

    def as_row(self) -> dict:
        return {"name": self.name, "advantages": self.advantages.describe(), "ratio": self.ratio,
                "clip": self.clip.describe(), "aggregation": self.aggregation.describe(),
                "KL": self.kl.describe(), "sampler": self.sampler.describe(),
                "sha256": self.sha256()[:12], "description": self.description}


# The fields each part had when SCHEMA v1 was written: always hashed.
V1_FIELDS = {"advantages": ("kind", "correction", "epsilon", "prior"),
             "clip": ("low", "high"), "aggregation": ("kind", "tokens", "length"),
             "kl": ("kind", "coefficient"),
             "sampler": ("kind", "max_generation_batches", "exploration_rollouts",
                         "rescue_budget", "rejection_k", "max_rollouts")}


def _part_mechanics(part, axis: str) -> dict:
    """A part's v1 fields, plus any later field whose value differs from its default."""
    out = {}
    for field in dataclasses.fields(part):
        value = getattr(part, field.name)
        if field.name in V1_FIELDS[axis] or value != field.default:
            out[field.name] = list(value) if isinstance(value, tuple) else value
    return out


# --------------------------------------------------------------------------- the registry
_SAMPLE_STD = AdvantageRule("group_std", 1, 1e-4)       # TRL's: Bessel's correction, + 1e-4
_CENTRED = AdvantageRule("centred", None, None)


def _entry(name, description, advantages=_SAMPLE_STD, ratio="token",
           clip=ClipInterval(0.2, 0.2), aggregation=Aggregation(), kl=KLTerm("none", 0.0),
           sampler=Sampler()):
    """An entry that differs from the Part II grpo arm only where it says so."""
    return Objective(name, description, advantages, ratio, clip, aggregation, kl, sampler)

OBJECTIVES: dict[str, Objective] = {o.name: o for o in (
    _entry("part1", "Part I (seed 000): population std + 1e-8, exact KL on prefixes x 0.02",
           advantages=AdvantageRule("group_std", 0, 1e-8), kl=KLTerm("exact_prefix", 0.02)),
    # Part II's five arms as the seed-003 study ran them: beta 0, per-response token mean.
    _entry("grpo", "Part II baseline arm: sample std + 1e-4, token ratio, clip [0.8, 1.2]"),
    _entry("drgrpo", "Part II arm: the grpo arm without std scaling (advantages r - mean only)",
           advantages=_CENTRED),
    _entry("dapo", "Part II arm: clip-higher 0.28 and dynamic sampling (groups whose rewards "
                   "vary, <= 10 generation batches)",
           clip=ClipInterval(0.2, 0.28), sampler=Sampler("dynamic", max_generation_batches=10)),
    _entry("gspo", "Part II arm: sequence ratio exp(masked mean token log-ratio), clipped to "
                   "[0.8, 1.2]", ratio="sequence"),
    _entry("aero", "Part II arm: AERO rollouts (3 explore, rescue 4, k=1, 4 slots) and a "
                   "Beta(1,1) posterior advantage for one-rollout groups",
           advantages=AdvantageRule("posterior", 1, 1e-4, (1.0, 1.0)),
           sampler=Sampler("aero", exploration_rollouts=3, rescue_budget=4, rejection_k=1,
                           max_rollouts=4)),
    # TRL's loss_type reductions, each otherwise the grpo arm.
    _entry("bnpo", "TRL loss_type bnpo: token sum / the micro-batch's token count",
           aggregation=Aggregation("token_sum", tokens="micro_batch")),
    _entry("dr_grpo", "TRL loss_type dr_grpo with no std scaling: token sum / (B x max "
                      "completion length)",
           advantages=_CENTRED, aggregation=Aggregation("constant_length")),
    _entry("dapo_token", "TRL loss_type dapo: token sum / the generation batch's token count",
           aggregation=Aggregation("token_sum", tokens="generation_batch")),
)}


def get_objective(name: str) -> Objective:
    """The registry entry called `name`; an unknown name is refused with the known ones."""
    if name in OBJECTIVES:
        return OBJECTIVES[name]
    close = difflib.get_close_matches(str(name), OBJECTIVES, n=2)
    hint = f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""
    raise ValueError(f"unknown objective {name!r}{hint}; known objectives: "
                     f"{', '.join(OBJECTIVES)}")


def objective_from_config(config: dict) -> Objective:
    """Part I's objective with the config's grpo.advantage_epsilon, clip_epsilon and
    kl_coefficient (the shipped profiles reproduce the registry's "part1" exactly)."""
    grpo = typed(config).grpo
    base = OBJECTIVES["part1"]
    return dataclasses.replace(
        base,
        advantages=dataclasses.replace(base.advantages, epsilon=grpo.advantage_epsilon),
        clip=ClipInterval(grpo.clip_epsilon, grpo.clip_epsilon),
        kl=KLTerm("exact_prefix", grpo.kl_coefficient))


COLUMNS = ("name", "advantages", "ratio", "clip", "aggregation", "KL", "sampler", "sha256")


def registry_table(objectives=None, columns=COLUMNS) -> tuple[list[str], list[list[str]]]:
    """(columns, rows) of the registry (or of the given objectives), one row per entry."""
    chosen = OBJECTIVES.values() if objectives is None else objectives
    return list(columns), [[o.as_row()[c] for c in columns] for o in chosen]


def format_registry(objectives=None, columns=COLUMNS) -> str:
    """The registry as fixed-width text."""
    head, rows = registry_table(objectives, columns)
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()
    return "\n".join([line(head), line("-" * w for w in widths)] + [line(r) for r in rows])


# --------------------------------------------------------------------------- advantages
@dataclass(frozen=True)
class GroupAdvantages:
    values: torch.Tensor        # [P, G]
    mean: torch.Tensor          # [P, 1] the centre (the posterior mean for one rollout)
    std: torch.Tensor | None    # [P, 1] the spread divided by (before epsilon); None if unscaled


def advantages(objective: Objective, rewards, successes=None, observations=None) -> GroupAdvantages:
    """The objective's advantages of rewards [P, G] (one group per row). The posterior
    rule's one-rollout groups (G = 1) also need `successes` and `observations` [P]: the
    counts over every rollout generated for each prompt."""
    rule = objective.advantages
    if rule.kind == "centred":
        values, mean = losses.centred_advantages(rewards)
        return GroupAdvantages(values, mean, None)
    if rule.kind == "posterior" and torch.as_tensor(rewards).shape[-1:] == (1,):
        if successes is None or observations is None:
            raise ValueError(f"objective {objective.name}: one-rollout groups need the "
                             "prompt's successes and observations for the posterior")
        return GroupAdvantages(*losses.posterior_advantages(
            rewards, successes, observations, rule.prior, rule.epsilon))
    values, mean, std = losses.group_advantages(rewards, rule.epsilon, rule.correction)
    return GroupAdvantages(values, mean, std)


def with_advantages(group: dict, objective: Objective, successes=None, observations=None) -> dict:
    """A sampled group (rollout.sample_group) with the objective's advantages added:
    "advantages" (floats), "reward_mean", "reward_std" (None for an unscaled rule)."""
    rewards = torch.tensor([group["rewards"]], dtype=torch.float64)
    if successes is not None:
        successes, observations = [successes], [observations]
    result = advantages(objective, rewards, successes, observations)
    scored = {k: v for k, v in group.items() if k != "zero_variance"}
    scored.update(advantages=[float(a) for a in result.values[0]],
                  reward_mean=result.mean.item(),
                  reward_std=None if result.std is None else result.std.item())
    scored["zero_variance"] = group["zero_variance"]  # kept last, where it always was
    return scored


# --------------------------------------------------------------------------- the loss
def response_weights(objective: Objective, lengths, max_length: int | None = None,
                     total_tokens: int | None = None) -> list[list[float]]:
    """The multiplier of each response's reduced loss ([P][G] python floats): the loss of
    a batch is sum_i w_i * response_losses_i. max_length resolves a constant-length
    aggregation without its own length; total_tokens is the generation batch's token
    count for aggregation over generation-batch tokens (default: these responses')."""
    aggregation = objective.aggregation
    length = aggregation.length if aggregation.length is not None else max_length
    if aggregation.kind == "constant_length" and length is None:
        raise ValueError(f"objective {objective.name}: a constant-length aggregation needs "
                         "max_length (the run's tokens.max_response)")
    tokens = total_tokens if aggregation.tokens == "generation_batch" else None
    return losses.aggregation_weights(aggregation.kind, lengths, length, tokens)


def token_weights(objective: Objective, lengths, max_length: int | None = None,
                  total_tokens: int | None = None) -> list[list[float]]:
    """The weight each active token of each response gets in the loss ([P][G], one
    number per response, the same on all its tokens): what a chapter tabulates."""
    weights = response_weights(objective, lengths, max_length, total_tokens)
    if objective.aggregation.kind != "response_mean":
        return weights
    return [[w / n for w, n in zip(wr, nr)] for wr, nr in zip(weights, lengths)]


def kl_per_token(objective: Objective, current_logits, reference_logits, targets,
                 block_size: int = 4096):
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


def response_losses(objective: Objective, current, old, advantages, mask, kl_per_token=None):
    """Each response's loss [B] before the batch weights: surrogate + coefficient * KL,
    both reduced over the response's tokens the objective's way (mean, or sum).
    Returns (loss[B], audit): the surrogate's audit plus "surrogate", "kl" and "loss" [B]."""
    per_token, audit = losses.clipped_surrogate_tokens(
        current, old, advantages, mask, objective.clip.low, objective.clip.high, objective.ratio)
    reduce = (losses.masked_token_mean if objective.aggregation.kind == "response_mean"
              else losses.masked_token_sum)
    surrogate = reduce(per_token, mask)
    if objective.kl.kind == "none":
        if kl_per_token is not None:
            raise ValueError(f"objective {objective.name} has no KL term, but a KL was given")
        kl = torch.zeros_like(surrogate)
        loss = surrogate
    else:
        if kl_per_token is None or kl_per_token.shape != current.shape:
            raise ValueError(f"objective {objective.name} needs a per-token KL shaped like the "
                             f"log-probs {tuple(current.shape)}")
        kl = reduce(kl_per_token, mask)
        loss = surrogate + objective.kl.coefficient * kl
    audit = dict(audit, surrogate=surrogate.detach(), kl=kl.detach(), loss=loss.detach())
    return loss, audit


def objective_loss(objective: Objective, current, old, advantages, mask, kl_per_token,
                   group_size: int, max_length: int | None = None,
                   total_tokens: int | None = None):
    """The scalar loss of a batch [B = P * G, T] laid out prompt by prompt:
    sum_i w_i * loss_i with the objective's weights. Returns (loss, audit)."""
    per_response, audit = response_losses(objective, current, old, advantages, mask,
                                          kl_per_token)
    if type(group_size) is not int or group_size < 1 or per_response.numel() % group_size:
        raise ValueError(f"{per_response.numel()} responses do not split into groups of "
                         f"{group_size!r}")
    lengths = torch.as_tensor(mask).bool().sum(dim=1).reshape(-1, group_size).tolist()
    weights = response_weights(objective, lengths, max_length, total_tokens)
    flat = torch.tensor([w for row in weights for w in row], dtype=per_response.dtype,
                        device=per_response.device)
    loss = (per_response * flat).sum()
    return loss, dict(audit, weights=weights, total=float(loss.detach()))
