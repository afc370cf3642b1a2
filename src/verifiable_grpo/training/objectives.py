"""GRPO-family objectives as data: a small frozen spec per variant, kept in one registry.

An objective says how rewards become advantages, at which level the importance ratio is
taken, the clip interval, how per-token terms are aggregated into one loss, the KL term
and its coefficient, which sampler fills a batch, and (axes added after schema v1, hashed
only where an entry sets them) the surrogate and a correction for the sampler's own
log-probs. The parts are defined in objective_parts.py. The sampler returns rewards; the
objective turns them into advantages (`with_advantages`) and into the loss
(`response_losses` + `response_weights`, or `objective_loss` for a whole batch). Part I's
GRPO is one entry ("part1", built from the config by `objective_from_config`); Part II's
arms are entries too, so a chapter can print them side by side (`registry_table`) and a
pre-registration can lock them by `Objective.sha256()`. The registry is kept in sections
(SECTIONS: the study's arms, TRL's reductions, the newer entries), which the rest of the
code reads instead of keeping lists of names; which entries a backend refuses is one
table, objective_refusals.py.

The arithmetic lives in losses.py, and in the functions surrogates.py and baselines.py
register by kind; this module only chooses among it. The loss an objective takes on a
batch is built in objective_loss.py (re-exported here).
"""

from __future__ import annotations

import dataclasses
import difflib
from dataclasses import dataclass, field

import torch

from verifiable_grpo.core.config import canonical_json, sha256_bytes
from verifiable_grpo.core.config_schema import Profile
from verifiable_grpo.training import baselines, losses, surrogates
from verifiable_grpo.training.losses import TokenLogProbs  # noqa: F401  (what the losses take)
from verifiable_grpo.training.objective_loss import (  # noqa: F401  (re-exported)
    Normalisation,
    kl_per_token,
    objective_loss,
    policy_tokens,
    response_losses,
    response_weights,
    token_weights,
)
from verifiable_grpo.training.objective_parts import (  # noqa: F401  (the parts, re-exported)
    ADVANTAGE_KINDS,
    KL_KINDS,
    SAMPLER_KINDS,
    TOKEN_COUNTS,
    AdvantageRule,
    Aggregation,
    BatchSampler,
    BehaviourCorrection,
    ClipInterval,
    KLTerm,
    Surrogate,
    _require,
)

SCHEMA = "verifiable-grpo-objective-v1"


@dataclass(frozen=True)
class Objective:
    name: str
    description: str
    advantages: AdvantageRule
    ratio: str
    clip: ClipInterval
    aggregation: Aggregation
    kl: KLTerm
    sampler: BatchSampler
    surrogate: Surrogate = field(default_factory=Surrogate)
    correction: BehaviourCorrection = field(default_factory=BehaviourCorrection)

    def __post_init__(self):
        _require(
            isinstance(self.name, str) and self.name.isidentifier(),
            f"an objective's name must be an identifier, got {self.name!r}",
        )
        _require(
            isinstance(self.description, str)
            and self.description.strip() != ""
            and "\n" not in self.description,
            f"objective {self.name}: the description must be one non-empty line",
        )
        _require(
            self.ratio in losses.RATIO_LEVELS,
            f"objective {self.name}: ratio level {self.ratio!r} is unknown: use one of "
            f"{losses.RATIO_LEVELS}",
        )
        for part, kind in (
            ("advantages", AdvantageRule),
            ("clip", ClipInterval),
            ("aggregation", Aggregation),
            ("kl", KLTerm),
            ("sampler", BatchSampler),
            ("surrogate", Surrogate),
            ("correction", BehaviourCorrection),
        ):
            _require(
                isinstance(getattr(self, part), kind),
                f"objective {self.name}: {part} must be a {kind.__name__}",
            )
        registered = surrogates.SURROGATES.get(self.surrogate.kind)  # None: a kind with no code
        _require(
            registered is None or not registered.own_ratio or self.ratio == "token",
            f"objective {self.name}: surrogate {self.surrogate.kind} takes the token "
            "ratio level (it builds its own ratio, or none)",
        )

    def mechanics(self) -> dict:
        """Everything that decides the arithmetic (name and description left out, so two
        names for one mechanism share a hash), as plain JSON values.

        The fields of schema v1 are always listed; a field added to a part later enters
        only when an entry sets it away from its default, so a new axis with a default
        changes no existing hash (Part I's pinned hash, Part II's lock)."""
        spec = {}
        for axis in dataclasses.fields(self):
            value = getattr(self, axis.name)
            if axis.name in ("name", "description"):
                continue
            if axis.name not in V1_AXES and _at_defaults(value, axis):
                continue  # an axis added after v1, left at its defaults: not hashed
            spec[axis.name] = (
                _part_mechanics(value, axis.name) if dataclasses.is_dataclass(value) else value
            )
        return {"schema": SCHEMA, **spec}

    def sha256(self) -> str:
        """SHA-256 of the canonical JSON of `mechanics()`: what a pre-registration locks."""
        return sha256_bytes(canonical_json(self.mechanics()))

    def as_row(self) -> dict:
        return {
            "name": self.name,
            "advantages": self.advantages.describe(),
            "ratio": self.ratio,
            "clip": self.clip.describe(),
            "aggregation": self.aggregation.describe(),
            "KL": self.kl.describe(),
            "sampler": self.sampler.describe(),
            "surrogate": self.surrogate.describe(),
            "correction": self.correction.describe(),
            "sha256": self.sha256()[:12],
            "description": self.description,
        }


# The axes of SCHEMA v1: always hashed. A part added later (surrogate, correction) enters
# an entry's hash only when the entry sets it away from its default.
V1_AXES = ("advantages", "ratio", "clip", "aggregation", "kl", "sampler")
# The fields each part had when it entered the schema: hashed whenever the part is.
V1_FIELDS = {
    "advantages": ("kind", "correction", "epsilon", "prior"),
    "clip": ("low", "high"),
    "aggregation": ("kind", "tokens", "length"),
    "kl": ("kind", "coefficient"),
    "sampler": (
        "kind",
        "max_generation_batches",
        "exploration_rollouts",
        "rescue_budget",
        "rejection_k",
        "max_rollouts",
    ),
    "surrogate": ("kind", "cap", "temperature_positive", "temperature_negative"),
    "correction": ("kind", "clip_min", "clip_max"),
}


def _default(item: dataclasses.Field):
    """A field's default value, whether given as a value or a factory."""
    if item.default_factory is not dataclasses.MISSING:
        return item.default_factory()
    return item.default


def _at_defaults(value, axis: dataclasses.Field) -> bool:
    """True when an axis holds its default: a part (a dataclass) field by field, a scalar
    (a top-level field such as an entropy bonus) by value."""
    if dataclasses.is_dataclass(value):
        return all(
            getattr(value, item.name) == _default(item) for item in dataclasses.fields(value)
        )
    return value == _default(axis)


def _part_mechanics(part, axis: str) -> dict:
    """A part's founding fields, plus any later field whose value differs from its default
    (a part added after v1 has no founding fields)."""
    out = {}
    for item in dataclasses.fields(part):
        value = getattr(part, item.name)
        if item.name in V1_FIELDS.get(axis, ()) or value != _default(item):
            out[item.name] = list(value) if isinstance(value, tuple) else value
    return out


# --------------------------------------------------------------------------- the registry
_SAMPLE_STD = AdvantageRule("group_std", 1, 1e-4)  # TRL's: Bessel's correction, + 1e-4
_CENTRED = AdvantageRule("centred", None, None)


# The parts of the Part II grpo arm, by Objective field: the base every entry starts from.
_GRPO_PARTS = {
    "advantages": _SAMPLE_STD,
    "ratio": "token",
    "clip": ClipInterval(0.2, 0.2),
    "aggregation": Aggregation(),
    "kl": KLTerm("none", 0.0),
    "sampler": BatchSampler(),
    "surrogate": Surrogate(),
    "correction": BehaviourCorrection(),
}


def _entry(name, description, **differences):
    """An entry that differs from the Part II grpo arm only where it says so: `differences`
    are parts by Objective field name (an unknown name is a TypeError from Objective)."""
    return Objective(name, description, **{**_GRPO_PARTS, **differences})


# The registry, in sections: code asks for a section by name (the study's arms, the newer
# entries), so no list of entry names is kept by hand anywhere else. Order is the table's.
_SECTIONS: dict[str, tuple[Objective, ...]] = {
    "part1": (
        _entry(
            "part1",
            "Part I (seed 000): population std + 1e-8, exact KL on prefixes x 0.02",
            advantages=AdvantageRule("group_std", 0, 1e-8),
            kl=KLTerm("exact_prefix", 0.02),
        ),
    ),
    # Part II's five arms as the seed-003 study ran them: beta 0, per-response token mean.
    "study": (
        _entry("grpo", "Part II baseline arm: sample std + 1e-4, token ratio, clip [0.8, 1.2]"),
        _entry(
            "drgrpo",
            "Part II arm: the grpo arm without std scaling (advantages r - mean only)",
            advantages=_CENTRED,
        ),
        _entry(
            "dapo",
            "Part II arm: clip-higher 0.28 and dynamic sampling (groups whose rewards "
            "vary, <= 10 generation batches)",
            clip=ClipInterval(0.2, 0.28),
            sampler=BatchSampler("dynamic", max_generation_batches=10),
        ),
        _entry(
            "gspo",
            "Part II arm: sequence ratio exp(masked mean token log-ratio), clipped to [0.8, 1.2]",
            ratio="sequence",
        ),
        _entry(
            "aero",
            "Part II arm: AERO rollouts (3 explore, rescue 4, k=1, 4 slots) and a "
            "Beta(1,1) posterior advantage for one-rollout groups",
            advantages=AdvantageRule("posterior", 1, 1e-4, (1.0, 1.0)),
            sampler=BatchSampler(
                "aero", exploration_rollouts=3, rescue_budget=4, rejection_k=1, max_rollouts=4
            ),
        ),
    ),
    # TRL's loss_type reductions, each otherwise the grpo arm.
    "trl_reductions": (
        _entry(
            "bnpo",
            "TRL loss_type bnpo: token sum / the micro-batch's token count",
            aggregation=Aggregation("token_sum", tokens="micro_batch"),
        ),
        _entry(
            "dr_grpo",
            "TRL loss_type dr_grpo with no std scaling: token sum / (B x max completion length)",
            advantages=_CENTRED,
            aggregation=Aggregation("constant_length"),
        ),
        _entry(
            "dapo_token",
            "TRL loss_type dapo: token sum / the generation batch's token count",
            aggregation=Aggregation("token_sum", tokens="generation_batch"),
        ),
    ),
    # Newer objectives (chapter II.7), each otherwise the grpo arm; the last two are the grpo
    # arm with a correction for the sampler's log-probs (TRL's two defaults' kinds).
    "newer": (
        _entry(
            "cispo",
            "CISPO: -sg(min(rho, 5)) A log p, token sum / the generation batch's tokens",
            surrogate=Surrogate("cispo", cap=5.0),
            aggregation=Aggregation("token_sum", tokens="generation_batch"),
        ),
        _entry(
            "gmpo",
            "GMPO: -A x the geometric mean of token ratios, log-ratios clipped to [-0.4, 0.4]",
            clip=ClipInterval(0.4, 0.4),
            surrogate=Surrogate("gmpo"),
        ),
        _entry(
            "sapo",
            "SAPO: a sigmoid gate on the ratio instead of a hard clip (tau+ 1, tau- 1.05)",
            surrogate=Surrogate("sapo", temperature_positive=1.0, temperature_negative=1.05),
        ),
        _entry(
            "rloo",
            "RLOO: each reward minus the mean of the group's other rewards, PPO clip",
            advantages=AdvantageRule("leave_one_out", None, None),
        ),
        _entry(
            "reinforce_pp",
            "REINFORCE++ (group baseline): r - group mean, / the batch's std + 1e-8, PPO clip",
            advantages=AdvantageRule("batch_normalised", 0, 1e-8),
        ),
        _entry(
            "reinforce",
            "Plain REINFORCE: -r log p, no baseline, no ratio",
            advantages=AdvantageRule("none", None, None),
            surrogate=Surrogate("reinforce"),
        ),
        _entry(
            "reinforce_baseline",
            "REINFORCE with the group-mean baseline: -(r - mean) log p",
            advantages=_CENTRED,
            surrogate=Surrogate("reinforce"),
        ),
        _entry(
            "grpo_tis",
            "grpo with truncated importance sampling: per-token weight min(p_train / p_sample, 3)",
            correction=BehaviourCorrection("token_truncate", clip_max=3.0),
        ),
        _entry(
            "grpo_mis",
            "grpo with masked importance sampling: a response whose sequence ratio "
            "exceeds 3 gets weight 0",
            correction=BehaviourCorrection("sequence_mask", clip_max=3.0),
        ),
    ),
    # The gspo arm at its paper's clip range (the card's sensitivity, part2/card_defaults_lock).
    "sensitivity": (
        _entry(
            "gspo_paper",
            "gspo with the GSPO paper's clip range: sequence ratio clipped to [1 - 3e-4, 1 + 4e-4]",
            ratio="sequence",
            clip=ClipInterval(3e-4, 4e-4),
        ),
    ),
}
OBJECTIVES: dict[str, Objective] = {o.name: o for part in _SECTIONS.values() for o in part}
# Each section's entry names, in registry order.
SECTIONS: dict[str, tuple[str, ...]] = {
    key: tuple(o.name for o in part) for key, part in _SECTIONS.items()
}
# Sections group entries for tables and chapters. A recorded study never reads a section:
# it declares its own tuple of names (declared_entries), so a new entry changes no record.
STUDY_ARMS = SECTIONS["study"]  # Part II's five arms, for the arms chapter's tables
TRL_REDUCTIONS = SECTIONS["trl_reductions"]


def declared_entries(names: tuple[str, ...], declared_by: str) -> tuple[str, ...]:
    """A study's or chapter's own frozen list of entry names, checked at import: each name
    is in the registry, once. Returns `names` unchanged."""
    if not isinstance(names, tuple) or len(set(names)) != len(names):
        raise ValueError(f"{declared_by}: entries must be a tuple of distinct names: {names!r}")
    unknown = [name for name in names if name not in OBJECTIVES]
    if unknown:
        raise ValueError(f"{declared_by}: not in the objectives registry: {', '.join(unknown)}")
    return names


def get_objective(name: str) -> Objective:
    """The registry entry called `name`; an unknown name is refused with the known ones."""
    if name in OBJECTIVES:
        return OBJECTIVES[name]
    close = difflib.get_close_matches(str(name), OBJECTIVES, n=2)
    hint = f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""
    raise ValueError(f"unknown objective {name!r}{hint}; known objectives: {', '.join(OBJECTIVES)}")


def objective_from_config(config: Profile) -> Objective:
    """Part I's objective with the config's grpo.advantage_epsilon, clip_epsilon and
    kl_coefficient (the shipped profiles reproduce the registry's "part1" exactly); with
    grpo.objective set, that entry's own mechanics laid over it (`on_part1`)."""
    grpo = config.grpo
    base = OBJECTIVES["part1"]
    part1 = dataclasses.replace(
        base,
        advantages=dataclasses.replace(base.advantages, epsilon=grpo.advantage_epsilon),
        clip=ClipInterval(grpo.clip_epsilon, grpo.clip_epsilon),
        kl=KLTerm("exact_prefix", grpo.kl_coefficient),
    )
    if grpo.objective is None or grpo.objective == "part1":
        return part1
    return on_part1(get_objective(grpo.objective), part1)


# The axes an entry may carry over to Part I's loop; the sampler is not one of them (the
# loop samples G answers per prompt, nothing else).
TRANSPLANTED_AXES = ("advantages", "ratio", "clip", "aggregation", "kl", "surrogate", "correction")


def on_part1(entry: Objective, part1: Objective | None = None) -> Objective:
    """Part I's GRPO (exact prefix KL, population std) with `entry`'s own mechanics: every
    axis on which the entry differs from the Part II grpo arm (the entries are written as
    "the grpo arm except ..."), so one comparison changes one idea at a time. Entries with
    their own sampler are refused: Part I's loop samples a fixed G per prompt."""
    part1 = OBJECTIVES["part1"] if part1 is None else part1
    arm = OBJECTIVES["grpo"]
    if entry.sampler != arm.sampler:
        raise ValueError(
            f"objective {entry.name}: its sampler ({entry.sampler.describe()}) "
            "needs Part II's loop; Part I's samples G answers per prompt"
        )
    own = {
        axis: getattr(entry, axis)
        for axis in TRANSPLANTED_AXES
        if getattr(entry, axis) != getattr(arm, axis)
    }
    return dataclasses.replace(
        part1,
        name=f"part1_{entry.name}",
        description=f"Part I's GRPO with {entry.name}'s {', '.join(own) or 'nothing'}",
        **own,
    )


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
    values: torch.Tensor  # [P, G]
    mean: torch.Tensor  # [P, 1] the centre (the posterior mean for one rollout)
    std: torch.Tensor | None  # [P, 1] the spread divided by (before epsilon); None if unscaled


def advantages(objective: Objective, rewards, successes=None, observations=None) -> GroupAdvantages:
    """The objective's advantages of rewards [P, G] (one group per row). The posterior
    rule's one-rollout groups (G = 1) also need `successes` and `observations` [P]: the
    counts over every rollout generated for each prompt."""
    rule = baselines.BASELINES[objective.advantages.kind]
    return GroupAdvantages(*rule.function(objective, rewards, successes, observations))


def with_advantages(group: dict, objective: Objective, successes=None, observations=None) -> dict:
    """A sampled group (rollout.sample_group) with the objective's advantages added:
    "advantages" (floats), "reward_mean", "reward_std" (None for an unscaled rule)."""
    if objective.advantages.batch_level:
        raise ValueError(
            f"objective {objective.name}: {objective.advantages.kind} advantages "
            "depend on the whole batch; use batch_with_advantages(groups, ...)"
        )
    rewards = torch.tensor([group["rewards"]], dtype=torch.float64)
    if successes is not None:
        successes, observations = [successes], [observations]
    return _scored(group, advantages(objective, rewards, successes, observations), 0)


def batch_with_advantages(groups: list[dict], objective: Objective) -> list[dict]:
    """Every group of a rollout set with its advantages, for any rule whose groups have
    two or more rollouts (a batch-level rule sees all groups at once)."""
    if not objective.advantages.batch_level:
        return [with_advantages(group, objective) for group in groups]
    result = advantages(
        objective, torch.tensor([g["rewards"] for g in groups], dtype=torch.float64)
    )
    return [_scored(group, result, i) for i, group in enumerate(groups)]


def _scored(group: dict, result: GroupAdvantages, row: int) -> dict:
    scored = {k: v for k, v in group.items() if k != "zero_variance"}
    scored.update(
        advantages=[float(a) for a in result.values[row]],
        reward_mean=result.mean[row].item(),
        reward_std=None if result.std is None else result.std[row].item(),
    )
    scored["zero_variance"] = group["zero_variance"]  # kept last, where it always was
    return scored
