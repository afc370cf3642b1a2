"""The parts an objective is built from: frozen, validated specs with one-line
descriptions (objectives.py assembles them into registry entries and hashes them).

advantages (AdvantageRule), clip interval, aggregation, KL term, sampler (schema v1), and
the axes added since, each with a default that reproduces v1's arithmetic: the surrogate
(Surrogate) and a correction for the sampler's own log-probs (BehaviourCorrection). The
surrogate and advantage-rule kinds are the ones registered in surrogates.py and
baselines.py (register_surrogate, register_baseline).
"""

from __future__ import annotations

from dataclasses import dataclass

from verifiable_grpo.training import baselines, losses, surrogates

# The registered kinds (baselines.register_baseline, surrogates.register_surrogate).
ADVANTAGE_KINDS = baselines.KINDS
# take no correction, epsilon or prior
UNSCALED_KINDS = tuple(kind for kind, rule in baselines.BASELINES.items() if not rule.scaled)


def _unscaled(kind: str) -> bool:
    """An advantage rule without a spread (also one registered after this module loaded)."""
    rule = baselines.BASELINES.get(kind)
    return kind in UNSCALED_KINDS if rule is None else not rule.scaled


TOKEN_COUNTS = ("micro_batch", "generation_batch")
KL_KINDS = ("exact_prefix", "k3", "none")
SAMPLER_KINDS = ("plain", "dynamic", "aero")
SURROGATE_KINDS = surrogates.KINDS
CORRECTION_KINDS = ("none",) + surrogates.CORRECTION_MODES


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
    1 sample). centred: r - mean (the mean baseline). posterior: groups of two or more as
    group_std; a one-rollout group as (r - p) / (sqrt(p (1 - p)) + epsilon), p the
    Beta(`prior`) posterior mean of the prompt's success rate over all of its generated
    rollouts. leave_one_out (RLOO): r_i - the mean of the group's other rewards.
    batch_normalised (REINFORCE++ with a group baseline): r - group mean, divided by the
    std (`correction`) of those centred values over the whole batch + epsilon.
    none (plain REINFORCE): the reward itself."""

    kind: str = "group_std"
    correction: int | None = 0
    epsilon: float | None = 1e-8
    prior: tuple[float, float] | None = None

    def __post_init__(self):
        _require(
            self.kind in ADVANTAGE_KINDS or self.kind in baselines.BASELINES,
            f"advantage rule {self.kind!r} is unknown: use one of {ADVANTAGE_KINDS}",
        )
        if _unscaled(self.kind):
            _require(
                self.correction is None and self.epsilon is None and self.prior is None,
                f"a {self.kind} advantage rule takes no correction, epsilon or prior",
            )
            return
        _require(
            self.correction in (0, 1),
            f"{self.kind}: correction must be 0 (population) or 1 (sample), got "
            f"{self.correction!r}",
        )
        _require(
            _number(self.epsilon) and self.epsilon > 0,
            f"{self.kind}: epsilon must be a positive number, got {self.epsilon!r}",
        )
        if self.kind != "posterior":
            _require(self.prior is None, f"a {self.kind} rule takes no prior")
        else:
            _require(
                isinstance(self.prior, tuple)
                and len(self.prior) == 2
                and all(_number(x) and x > 0 for x in self.prior),
                f"posterior: prior must be a pair (a, b) > 0, got {self.prior!r}",
            )

    @property
    def batch_level(self) -> bool:
        """True when one group's advantages depend on the other groups of the batch."""
        rule = baselines.BASELINES.get(self.kind)
        return rule is not None and rule.batch_level

    def describe(self) -> str:
        fixed = {
            "centred": "r - mean",
            "leave_one_out": "r - mean of the others",
            "none": "r (no baseline)",
        }
        if _unscaled(self.kind):
            return fixed.get(self.kind, self.kind)
        std = f"{('population', 'sample')[self.correction]} std + {self.epsilon:g}"
        if self.kind == "group_std":
            return std
        if self.kind == "batch_normalised":
            return f"r - mean, / batch {std}"
        if self.kind != "posterior":
            return f"{self.kind}, {std}"
        a, b = self.prior
        return f"{std}; 1 rollout: Beta({a:g},{b:g}) posterior"


@dataclass(frozen=True)
class ClipInterval:
    """Ratios are clipped to [1 - low, 1 + high]."""

    low: float = 0.2
    high: float = 0.2

    def __post_init__(self):
        _require(
            _number(self.low) and 0 < self.low < 1, f"clip low must lie in (0, 1), got {self.low!r}"
        )
        _require(
            _number(self.high) and self.high > 0, f"clip high must be positive, got {self.high!r}"
        )

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
        _require(
            self.kind in losses.AGGREGATIONS,
            f"aggregation {self.kind!r} is unknown: use one of {losses.AGGREGATIONS}",
        )
        _require(
            (self.tokens in TOKEN_COUNTS) == (self.kind == "token_sum"),
            f"{self.kind}: tokens must be one of {TOKEN_COUNTS} for token_sum and None "
            f"otherwise, got {self.tokens!r}",
        )
        _require(
            self.length is None or (self.kind == "constant_length" and _count(self.length)),
            f"{self.kind}: length must be None, or a positive integer for constant_length; "
            f"got {self.length!r}",
        )

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
        _require(
            _number(self.coefficient) and self.coefficient >= 0,
            f"KL coefficient must be a number >= 0, got {self.coefficient!r}",
        )
        _require(
            self.kind != "none" or self.coefficient == 0,
            f"KL term none needs coefficient 0, got {self.coefficient!r}",
        )

    def describe(self) -> str:
        return (
            "none"
            if self.kind == "none"
            else f"{self.kind.replace('_', ' ')} x {self.coefficient:g}"
        )


@dataclass(frozen=True)
class BatchSampler:
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
        _require(
            self.kind in SAMPLER_KINDS,
            f"sampler {self.kind!r} is unknown: use one of {SAMPLER_KINDS}",
        )
        aero = ("exploration_rollouts", "rescue_budget", "rejection_k", "max_rollouts")
        wanted = {"plain": (), "dynamic": ("max_generation_batches",), "aero": aero}[self.kind]
        for name in ("max_generation_batches",) + aero:
            value = getattr(self, name)
            if name in wanted:
                _require(
                    _count(value),
                    f"sampler {self.kind}: {name} must be a positive integer, got {value!r}",
                )
            else:
                _require(value is None, f"sampler {self.kind} takes no {name}")
        if self.kind == "aero":
            _require(
                self.exploration_rollouts <= self.max_rollouts,
                "sampler aero: exploration_rollouts exceeds max_rollouts",
            )

    def describe(self) -> str:
        if self.kind == "plain":
            return "plain"
        if self.kind == "dynamic":
            return f"dynamic (<= {self.max_generation_batches} batches)"
        return (
            f"aero ({self.exploration_rollouts} explore, rescue {self.rescue_budget}, "
            f"k={self.rejection_k}, <= {self.max_rollouts})"
        )


@dataclass(frozen=True)
class Surrogate:
    """How a token's log-prob enters the policy term (surrogates.py has the arithmetic).
    clipped_ratio: PPO's -min(rho A, clip(rho) A), rho at the objective's ratio level.
    cispo: -sg(min(rho, cap)) A log p, every token keeps a gradient. gmpo: -A x the
    geometric mean of the response's token ratios, each clipped in log space to
    [-clip.low, clip.high]. sapo: -(4 / tau) sigmoid(tau (rho - 1)) A, tau the
    temperature of A's sign (positive if A > 0). reinforce: -A log p (no ratio)."""

    kind: str = "clipped_ratio"
    cap: float | None = None
    temperature_positive: float | None = None
    temperature_negative: float | None = None

    def __post_init__(self):
        _require(
            self.kind in SURROGATE_KINDS or self.kind in surrogates.SURROGATES,
            f"surrogate {self.kind!r} is unknown: use one of {SURROGATE_KINDS}",
        )
        if self.kind == "cispo":
            _require(
                _number(self.cap) and self.cap > 0,
                f"surrogate cispo: cap must be a positive number, got {self.cap!r}",
            )
        else:
            _require(self.cap is None, f"surrogate {self.kind} takes no cap")
        temperatures = (self.temperature_positive, self.temperature_negative)
        if self.kind == "sapo":
            _require(
                all(_number(t) and t > 0 for t in temperatures),
                f"surrogate sapo: both temperatures must be positive, got {temperatures!r}",
            )
        else:
            _require(temperatures == (None, None), f"surrogate {self.kind} takes no temperatures")

    def describe(self) -> str:
        if self.kind == "cispo":
            return f"cispo (sg min(rho, {self.cap:g}) A log p)"
        if self.kind == "sapo":
            return (
                f"sapo (soft gate, tau+ {self.temperature_positive:g}, "
                f"tau- {self.temperature_negative:g})"
            )
        return {
            "clipped_ratio": "clipped ratio",
            "gmpo": "gmpo (geometric mean ratio)",
            "reinforce": "reinforce (-A log p)",
        }.get(self.kind, self.kind)  # a surrogate registered later: its name


@dataclass(frozen=True)
class BehaviourCorrection:
    """A weight on each token's policy term for the gap between the trainer's log-probs
    at the rollout's parameters and the sampler's own (TRL 1.16's
    vllm_importance_sampling_mode semantics). none: no weight, and the ratio's denominator
    is the sampler's log-prob. Otherwise the ratio's denominator is the trainer's, and
    w = exp(log p_train - log p_sample) per token or per sequence (summed log-ratio),
    *_truncate clamped to [clip_min, clip_max] (TIS), *_mask set to 0 outside (MIS)."""

    kind: str = "none"
    clip_min: float | None = None
    clip_max: float | None = None

    def __post_init__(self):
        _require(
            self.kind in CORRECTION_KINDS,
            f"behaviour correction {self.kind!r} is unknown: use one of {CORRECTION_KINDS}",
        )
        bounds = (self.clip_min, self.clip_max)
        if self.kind == "none":
            _require(bounds == (None, None), "behaviour correction none takes no bounds")
            return
        _require(
            bounds != (None, None), f"behaviour correction {self.kind} needs clip_min or clip_max"
        )
        _require(
            all(b is None or (_number(b) and b > 0) for b in bounds),
            f"behaviour correction {self.kind}: bounds must be positive, got {bounds!r}",
        )
        _require(
            None in bounds or self.clip_min < self.clip_max,
            f"behaviour correction {self.kind}: clip_min must be below clip_max",
        )

    def describe(self) -> str:
        if self.kind == "none":
            return "none"
        low = "-" if self.clip_min is None else f"{self.clip_min:g}"
        high = "-" if self.clip_max is None else f"{self.clip_max:g}"
        return f"{self.kind.replace('_', ' ')} [{low}, {high}]"
