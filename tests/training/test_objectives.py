"""Objectives as data: the registry, each entry's hand-computable advantages, the ratio
levels, the asymmetric clip, the aggregation weights, the KL terms, hashing, and Part I's
arithmetic kept bit for bit through the objective."""

from __future__ import annotations

import copy
import dataclasses
import math

import pytest
import torch

from verifiable_grpo.core import model as model_lib
from verifiable_grpo.core.config import load_config
from verifiable_grpo.training import baselines, grpo, losses, objectives, rollout
from verifiable_grpo.training.objectives import (
    OBJECTIVES,
    AdvantageRule,
    Aggregation,
    BatchSampler,
    ClipInterval,
    KLTerm,
    get_objective,
)

SAMPLE_A = 0.5 / (math.sqrt(1 / 3) + 1e-4)  # sample std + 1e-4 for [1, 0, 1, 0]: 0.86588
POPULATION_A = 0.5 / (0.5 + 1e-8)  # Part I: population std + 1e-8


pytestmark = pytest.mark.usefixtures("one_thread")


# --------------------------------------------------------------------------- the registry
def test_registry_holds_part_one_and_the_part_two_arms():
    assert (
        list(OBJECTIVES)
        == ["part1", "grpo", "drgrpo", "dapo", "gspo", "aero", "bnpo", "dr_grpo", "dapo_token"]
        + NEWER
    )
    for name, objective in OBJECTIVES.items():
        assert objective.name == name and "\n" not in objective.description
    part1 = OBJECTIVES["part1"]
    assert part1.advantages == AdvantageRule("group_std", 0, 1e-8)
    assert (part1.ratio, part1.clip, part1.aggregation) == (
        "token",
        ClipInterval(0.2, 0.2),
        Aggregation("response_mean"),
    )
    assert part1.kl == KLTerm("exact_prefix", 0.02) and part1.sampler == BatchSampler("plain")
    assert OBJECTIVES["dapo"].clip == ClipInterval(0.2, 0.28)
    assert OBJECTIVES["dapo"].sampler == BatchSampler("dynamic", max_generation_batches=10)
    assert OBJECTIVES["gspo"].ratio == "sequence"
    assert OBJECTIVES["aero"].advantages.prior == (1.0, 1.0)
    # The study's arms ran without a KL term (beta 0).
    assert all(
        OBJECTIVES[n].kl == KLTerm("none", 0.0) for n in ("grpo", "drgrpo", "dapo", "gspo", "aero")
    )
    # Each Part II arm changes only what it names relative to grpo.
    base = OBJECTIVES["grpo"].mechanics()
    changed = {
        name: sorted(k for k, v in OBJECTIVES[name].mechanics().items() if v != base.get(k))
        for name in OBJECTIVES
        if name != "grpo"
    }
    assert changed["drgrpo"] == ["advantages"]
    assert changed["dapo"] == ["clip", "sampler"]
    assert changed["gspo"] == ["ratio"]
    assert changed["aero"] == ["advantages", "sampler"]
    assert changed["bnpo"] == changed["dapo_token"] == ["aggregation"]
    assert changed["dr_grpo"] == ["advantages", "aggregation"]
    assert changed["cispo"] == ["aggregation", "surrogate"]
    assert changed["gmpo"] == ["clip", "surrogate"] and changed["sapo"] == ["surrogate"]
    assert changed["rloo"] == changed["reinforce_pp"] == ["advantages"]
    assert changed["reinforce"] == changed["reinforce_baseline"] == ["advantages", "surrogate"]
    assert changed["grpo_tis"] == changed["grpo_mis"] == ["correction"]
    assert changed["gspo_paper"] == ["clip", "ratio"]
    # The parts added after schema v1 are hashed only where an entry sets them.
    assert "surrogate" not in base and "correction" not in base


NEWER = [
    "cispo",
    "gmpo",
    "sapo",
    "rloo",
    "reinforce_pp",
    "reinforce",
    "reinforce_baseline",
    "grpo_tis",
    "grpo_mis",
    "gspo_paper",
]


@pytest.mark.parametrize("profile", ["smoke", "tiny", "qwen"])
def test_the_shipped_profiles_build_exactly_the_registrys_part_one(profile):
    config = load_config(profile)
    built = objectives.objective_from_config(config)
    assert built == OBJECTIVES["part1"]
    assert built.sha256() == OBJECTIVES["part1"].sha256()
    config = config.replaced(grpo={"kl_coefficient": 0.05, "clip_epsilon": 0.1})
    other = objectives.objective_from_config(config)
    assert other.kl.coefficient == 0.05 and other.clip == ClipInterval(0.1, 0.1)
    assert other.sha256() != built.sha256()


def test_hash_is_stable_and_follows_the_mechanics_only():
    part1 = OBJECTIVES["part1"]
    # Pinned: a pre-registration quotes this value, so the canonical form must not drift.
    assert part1.sha256() == PART1_SHA256
    twin = objectives.Objective(
        **{f.name: getattr(part1, f.name) for f in dataclasses.fields(part1)}
    )
    assert twin is not part1 and twin.sha256() == part1.sha256()
    renamed = dataclasses.replace(part1, name="other", description="another line")
    assert renamed.sha256() == part1.sha256()  # prose is not mechanics
    for change in (
        dict(clip=ClipInterval(0.2, 0.28)),
        dict(ratio="sequence"),
        dict(kl=KLTerm("exact_prefix", 0.04)),
        dict(kl=KLTerm("k3", 0.02)),
        dict(advantages=AdvantageRule("group_std", 1, 1e-8)),
        dict(advantages=AdvantageRule("group_std", 0, 1e-4)),
        dict(aggregation=Aggregation("constant_length", length=64)),
        dict(sampler=BatchSampler("dynamic", max_generation_batches=9)),
    ):
        assert dataclasses.replace(part1, **change).sha256() != part1.sha256(), change
    shas = [o.sha256() for o in OBJECTIVES.values()]
    assert len(set(shas)) == len(shas)


PART1_SHA256 = "ef2bf299651059b242217fa904f06a7dc3a7a4503c51b6bff6ebe586d9852c38"


def test_get_objective_names_the_known_ones():
    assert get_objective("gspo") is OBJECTIVES["gspo"]
    with pytest.raises(
        ValueError, match=r"unknown objective 'gpro' \(did you mean [^)]*'grpo'"
    ) as err:
        get_objective("gpro")
    assert (
        "known objectives: part1, grpo, drgrpo, dapo, gspo, aero, bnpo, dr_grpo, dapo_token, cispo"
    ) in str(err.value)
    with pytest.raises(ValueError, match="unknown objective 'ppo'; known objectives: part1"):
        get_objective("ppo")


def test_the_registry_prints_as_a_table():
    text = objectives.format_registry()
    lines = text.splitlines()
    assert len(lines) == 2 + len(OBJECTIVES)
    assert lines[0].split() == list(objectives.COLUMNS)
    assert set(lines[1]) <= {"-", " "}
    columns, rows = objectives.registry_table()
    assert columns == list(objectives.COLUMNS) and len(rows) == len(OBJECTIVES)
    part1 = dict(zip(columns, rows[0]))
    assert part1 == {
        "name": "part1",
        "advantages": "population std + 1e-08",
        "ratio": "token",
        "clip": "[0.8, 1.2]",
        "aggregation": "token mean / response, mean",
        "KL": "exact prefix x 0.02",
        "sampler": "plain",
        "sha256": OBJECTIVES["part1"].sha256()[:12],
    }
    rows = {r[0]: dict(zip(columns, r)) for r in rows}
    assert rows["dapo"]["clip"] == "[0.8, 1.28]"
    assert rows["dapo"]["sampler"] == "dynamic (<= 10 batches)"
    assert rows["drgrpo"]["advantages"] == "r - mean"
    assert rows["dr_grpo"]["aggregation"] == "token sum / (B x max_response)"
    assert rows["bnpo"]["aggregation"] == "token sum / micro batch tokens"
    assert rows["aero"]["advantages"] == "sample std + 0.0001; 1 rollout: Beta(1,1) posterior"
    assert OBJECTIVES["grpo"].as_row()["description"] == OBJECTIVES["grpo"].description
    subset = objectives.format_registry([OBJECTIVES["gspo"]], columns=("name", "ratio"))
    assert subset.splitlines()[2].split() == ["gspo", "sequence"]


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: ClipInterval(0.0, 0.2), "clip low must lie in"),
        (lambda: ClipInterval(0.2, -0.1), "clip high must be positive"),
        (lambda: KLTerm("none", 0.1), "none needs coefficient 0"),
        (lambda: KLTerm("k2", 0.1), "KL term 'k2' is unknown"),
        (lambda: AdvantageRule("centred", 0, 1e-8), "centred advantage rule takes no"),
        (lambda: AdvantageRule("group_std", 2, 1e-8), "correction must be 0"),
        (lambda: AdvantageRule("posterior", 1, 1e-4, None), "prior must be a pair"),
        (lambda: Aggregation("token_sum"), "tokens must be one of"),
        (lambda: Aggregation("response_mean", length=8), "length must be None"),
        (lambda: BatchSampler("dynamic"), "max_generation_batches must be a positive integer"),
        (lambda: BatchSampler("plain", max_generation_batches=3), "sampler plain takes no"),
        (lambda: dataclasses.replace(OBJECTIVES["grpo"], ratio="prefix"), "ratio level 'prefix'"),
        (lambda: dataclasses.replace(OBJECTIVES["grpo"], name="two words"), "identifier"),
    ],
)
def test_a_bad_spec_is_refused_by_name(build, message):
    with pytest.raises(ValueError, match=message):
        build()


def test_specs_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        OBJECTIVES["part1"].clip.low = 0.3


# --------------------------------------------------------------------------- advantages
EXPECTED_ADVANTAGE = {
    "part1": POPULATION_A,
    "grpo": SAMPLE_A,
    "drgrpo": 0.5,
    "dapo": SAMPLE_A,
    "gspo": SAMPLE_A,
    "aero": SAMPLE_A,
    "bnpo": SAMPLE_A,
    "dr_grpo": 0.5,
    "dapo_token": SAMPLE_A,
    "cispo": SAMPLE_A,
    "gmpo": SAMPLE_A,
    "sapo": SAMPLE_A,
    "grpo_tis": SAMPLE_A,
    "grpo_mis": SAMPLE_A,
    "gspo_paper": SAMPLE_A,
    # r_i - mean of the other three: 1 - 1/3, 0 - 2/3
    "rloo": 2 / 3,
    "reinforce_baseline": 0.5,
    # centred +-0.5 over a batch std of 0.5 (one group is the batch)
    "reinforce_pp": 0.5 / (0.5 + 1e-8),
}


@pytest.mark.parametrize("name", [n for n in OBJECTIVES if n != "reinforce"])
def test_every_entry_computes_its_hand_computed_advantages(name):
    result = objectives.advantages(
        OBJECTIVES[name], torch.tensor([[1.0, 0.0, 1.0, 0.0]], dtype=torch.float64)
    )
    a = EXPECTED_ADVANTAGE[name]
    assert result.values[0].tolist() == pytest.approx([a, -a, a, -a], rel=1e-12, abs=0)
    assert result.mean.tolist() == [[0.5]]
    # A constant group: exactly zero under every rule, no invented winner.
    constant = objectives.advantages(OBJECTIVES[name], torch.full((2, 4), 0.3))
    assert (constant.values == 0).all()


def test_the_standard_deviations_behind_the_advantages():
    rewards = [[1.0, 0.0, 1.0, 0.0]]
    assert objectives.advantages(OBJECTIVES["part1"], rewards).std.item() == 0.5
    assert objectives.advantages(OBJECTIVES["grpo"], rewards).std.item() == pytest.approx(
        math.sqrt(1 / 3)
    )
    assert objectives.advantages(OBJECTIVES["drgrpo"], rewards).std is None
    assert objectives.advantages(OBJECTIVES["grpo"], rewards).values[0, 0].item() == pytest.approx(
        0.86588, abs=1e-5
    )
    g2 = objectives.advantages(OBJECTIVES["grpo"], [[1.0, 0.0]]).values[0].tolist()
    assert g2 == pytest.approx([0.70700, -0.70700], abs=1e-5)


@pytest.mark.parametrize(
    "successes, observations, reward, expected",
    [
        (3, 3, 1.0, +0.49988),  # 3/3 correct: p = 0.8
        (0, 7, 0.0, -0.35344),  # 0/7 after rescues failed: p = 1/9
        (0, 3, 0.0, -0.49988),  # 0/3, no rescue budget left: p = 0.2
    ],
)
def test_the_posterior_rule_on_one_rollout_groups(successes, observations, reward, expected):
    aero = OBJECTIVES["aero"]
    result = objectives.advantages(
        aero, torch.tensor([[reward]], dtype=torch.float64), [successes], [observations]
    )
    p = (successes + 1) / (observations + 2)
    assert result.mean.item() == pytest.approx(p)
    assert result.values.item() == pytest.approx(
        (reward - p) / (math.sqrt(p * (1 - p)) + 1e-4), rel=1e-12
    )
    assert result.values.item() == pytest.approx(expected, abs=1e-5)


def test_the_posterior_rule_refuses_what_it_cannot_score():
    aero = OBJECTIVES["aero"]
    with pytest.raises(ValueError, match="need the prompt's successes and observations"):
        objectives.advantages(aero, [[1.0]])
    with pytest.raises(ValueError, match="binary rewards"):
        objectives.advantages(aero, [[0.5]], [1], [2])
    with pytest.raises(ValueError, match="0 <= successes <= observations"):
        objectives.advantages(aero, [[1.0]], [4], [3])
    with pytest.raises(ValueError, match="among the counted observations"):
        objectives.advantages(aero, [[1.0]], [0], [3])
    with pytest.raises(ValueError, match="one-rollout groups"):
        baselines.posterior_advantages([[1.0, 0.0]], [1], [2])


def test_with_advantages_adds_the_objectives_numbers_to_a_sampled_group():
    sampled = {
        "group_id": "g",
        "responses": [{}, {}, {}, {}],
        "rewards": [1.0, 0.0, 1.0, 0.0],
        "zero_variance": False,
    }
    part1 = objectives.with_advantages(sampled, OBJECTIVES["part1"])
    assert part1["advantages"] == [POPULATION_A, -POPULATION_A, POPULATION_A, -POPULATION_A]
    assert (part1["reward_mean"], part1["reward_std"]) == (0.5, 0.5)
    assert list(part1)[-1] == "zero_variance" and "advantages" not in sampled
    centred = objectives.with_advantages(sampled, OBJECTIVES["drgrpo"])
    assert centred["advantages"] == [0.5, -0.5, 0.5, -0.5] and centred["reward_std"] is None
    one = objectives.with_advantages(
        {"rewards": [1.0], "zero_variance": True}, OBJECTIVES["aero"], successes=3, observations=3
    )
    assert one["advantages"] == [pytest.approx(0.49988, abs=1e-5)]


# --------------------------------------------------------------------------- the loss
LENGTHS = [3, 5, 2, 7]  # one group of four, rewards [1, 0, 1, 0]


def _batch(delta=None, seed=0):
    """Ragged log-probs [4, 7] (padding holds garbage that must never leak in)."""
    width = max(LENGTHS)
    mask = torch.arange(width)[None, :] < torch.tensor(LENGTHS)[:, None]
    old = -1.0 - torch.rand(
        4, width, dtype=torch.float64, generator=torch.Generator().manual_seed(seed)
    )
    old = torch.where(mask, old, torch.tensor(float("nan"), dtype=torch.float64))
    delta = torch.zeros(4, width, dtype=torch.float64) if delta is None else delta
    current = (old.nan_to_num(0.0) + delta).requires_grad_(True)
    return current, old, mask


def _token_weights(name, advantages, delta=None, **kwargs):
    """w = d(-loss)/d logp per token, the table the chapter prints."""
    objective = OBJECTIVES[name]
    current, old, mask = _batch(delta)
    loss, audit = objectives.objective_loss(
        objective,
        objectives.TokenLogProbs(current, old, mask),
        torch.tensor(advantages, dtype=torch.float64),
        None,
        objectives.Normalisation(group_size=4, **kwargs),
    )
    loss.backward()
    return (-current.grad).where(mask, torch.tensor(float("nan"), dtype=torch.float64)), audit


def _row(weights, i):
    return weights[i, : LENGTHS[i]].tolist()


@pytest.mark.parametrize(
    "name, per_token",
    [
        # one group, on policy: Â/(G |o_i|) with the per-response token mean ...
        ("grpo", [+0.072156, -0.043294, +0.108234, -0.030924]),
        ("gspo", [+0.072156, -0.043294, +0.108234, -0.030924]),
        ("dapo", [+0.072156, -0.043294, +0.108234, -0.030924]),
        ("drgrpo", [+0.041667, -0.025, +0.0625, -0.017857]),
        # ... every token alike with a token sum: Â/17 tokens, or Â/(B x 8) for dr_grpo.
        ("bnpo", [+0.050934, -0.050934, +0.050934, -0.050934]),
        ("dapo_token", [+0.050934, -0.050934, +0.050934, -0.050934]),
        ("dr_grpo", [+0.015625, -0.015625, +0.015625, -0.015625]),
    ],
)
def test_on_policy_token_weights_match_the_reference_tables(name, per_token):
    a = EXPECTED_ADVANTAGE[name]
    weights, _ = _token_weights(name, [a, -a, a, -a], max_length=8)
    for i, expected in enumerate(per_token):
        assert _row(weights, i) == pytest.approx([expected] * LENGTHS[i], abs=1e-5)
    table = objectives.token_weights(OBJECTIVES[name], [LENGTHS], max_length=8)
    assert [abs(a) * w for w in table[0]] == pytest.approx([abs(x) for x in per_token], abs=1e-5)


def test_aggregation_weights_on_ragged_lengths():
    lengths = [[2, 4]]
    assert objectives.token_weights(OBJECTIVES["part1"], lengths) == [
        [1 / 2 * 1 / 2, 1 / 2 * 1 / 4]
    ]
    assert objectives.response_weights(OBJECTIVES["part1"], lengths) == [[1 / 2, 1 / 2]]
    assert objectives.token_weights(OBJECTIVES["bnpo"], lengths) == [[1 / 6, 1 / 6]]
    assert objectives.token_weights(OBJECTIVES["dr_grpo"], lengths, max_length=24) == [
        [1 / (2 * 24)] * 2
    ]
    # dapo's normaliser is the generation batch's token count, bnpo's the micro-batch's.
    assert objectives.token_weights(OBJECTIVES["dapo_token"], lengths, total_tokens=17) == [
        [1 / 17] * 2
    ]
    assert objectives.token_weights(OBJECTIVES["bnpo"], lengths, total_tokens=17) == [[1 / 6] * 2]
    # Part I over two prompts of two: 1 / (P G) per response.
    assert objectives.response_weights(OBJECTIVES["part1"], [[2, 4], [1, 3]]) == [[0.25] * 2] * 2
    with pytest.raises(ValueError, match="needs max_length"):
        objectives.response_weights(OBJECTIVES["dr_grpo"], lengths)
    with pytest.raises(ValueError, match="longest response"):
        objectives.response_weights(OBJECTIVES["dr_grpo"], lengths, max_length=3)
    with pytest.raises(ValueError, match="G responses per prompt"):
        objectives.response_weights(OBJECTIVES["part1"], [[2, 4], [1]])
    with pytest.raises(ValueError, match="total_tokens must be"):
        objectives.response_weights(OBJECTIVES["dapo_token"], lengths, total_tokens=5)
    current, old, mask = _batch()
    with pytest.raises(ValueError, match="4 responses do not split into groups of 3"):
        objectives.objective_loss(
            OBJECTIVES["grpo"],
            objectives.TokenLogProbs(current, old, mask),
            torch.zeros(4, dtype=torch.float64),
            None,
            objectives.Normalisation(group_size=3),
        )


def test_clip_higher_decides_which_tokens_lose_their_gradient():
    a = SAMPLE_A
    delta = torch.full((4, 7), 0.22, dtype=torch.float64)  # every ratio 1.246
    ratio = math.exp(0.22)
    grpo_w, grpo_audit = _token_weights("grpo", [a, -a, a, -a], delta)
    dapo_w, dapo_audit = _token_weights("dapo", [a, -a, a, -a], delta)
    # [0.8, 1.2]: the positive responses are clipped (no gradient); the negative ones keep it.
    assert _row(grpo_w, 0) == [0.0] * 3 and _row(grpo_w, 2) == [0.0] * 2
    assert _row(grpo_w, 1) == pytest.approx([-ratio * a / 20] * 5, rel=1e-12)
    assert _row(grpo_w, 1)[0] == pytest.approx(-0.053947, abs=1e-6)
    assert _row(grpo_w, 3)[0] == pytest.approx(-0.038534, abs=1e-6)
    assert grpo_audit["clip_high_fraction"] == pytest.approx(5 / 17)
    # [0.8, 1.28]: 1.246 is inside, so the positive responses move again.
    assert _row(dapo_w, 0) == pytest.approx([ratio * a / 12] * 3, rel=1e-12)
    assert _row(dapo_w, 0)[0] == pytest.approx(0.089912, abs=1e-6)
    assert _row(dapo_w, 2)[0] == pytest.approx(0.134868, abs=1e-6)
    assert dapo_audit["active_clip_fraction"] == 0.0
    assert dapo_audit["clip_interval"] == (0.8, 1.28)
    # The low side: ratios below 0.8 on negative advantages lose their gradient in both.
    low = torch.full((4, 7), -0.3, dtype=torch.float64)
    low_w, low_audit = _token_weights("dapo", [a, -a, a, -a], low)
    assert _row(low_w, 1) == [0.0] * 5 and _row(low_w, 3) == [0.0] * 7
    assert _row(low_w, 0) == pytest.approx([math.exp(-0.3) * a / 12] * 3, rel=1e-12)
    assert low_audit["clip_low_fraction"] == pytest.approx(12 / 17)


def test_the_sequence_ratio_is_the_exp_of_the_masked_mean_log_ratio():
    current, old, mask = _batch(
        torch.randn(4, 7, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    )
    ratio = losses.importance_ratio(current, old.nan_to_num(0.0), mask, "sequence")
    for i, n in enumerate(LENGTHS):
        expected = math.exp(float((current[i, :n] - old[i, :n]).detach().mean()))
        assert ratio[i, :n].tolist() == pytest.approx([expected] * n, rel=1e-12)
        assert ratio[i, n:].tolist() == [1.0] * (7 - n)
    token = losses.importance_ratio(current, old.nan_to_num(0.0), mask, "token")
    assert torch.equal(token[mask], (current - old.nan_to_num(0.0)).exp()[mask])
    with pytest.raises(ValueError, match="unknown ratio level"):
        losses.importance_ratio(current, old, mask, "prefix")


def test_gspo_keeps_the_tokens_that_the_token_ratio_clips():
    a = SAMPLE_A
    delta = torch.zeros(4, 7, dtype=torch.float64)
    delta[0, 0] = 0.5  # o1 (A > 0): token ratio 1.65 is clipped, s = exp(0.5/3) = 1.18 is not
    delta[1, 0] = -1.0  # o2 (A < 0): token ratio 0.37 is clipped, s = exp(-1/5) = 0.82 is not
    token_w, _ = _token_weights("grpo", [a, -a, a, -a], delta)
    sequence_w, audit = _token_weights("gspo", [a, -a, a, -a], delta)
    assert _row(token_w, 0) == pytest.approx([0.0, 0.072156, 0.072156], abs=1e-6)
    assert _row(token_w, 1)[0] == 0.0
    assert _row(sequence_w, 0) == pytest.approx([a * math.exp(0.5 / 3) / 12] * 3, rel=1e-12)
    assert _row(sequence_w, 0)[0] == pytest.approx(0.085243, abs=1e-6)
    assert _row(sequence_w, 1) == pytest.approx([-a * math.exp(-0.2) / 20] * 5, rel=1e-12)
    assert audit["active_clip_fraction"] == 0.0 and audit["ratio_level"] == "sequence"


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_on_policy_gspo_and_clip_higher_give_grpos_gradient(seed):
    """Ratio exactly 1 (one update per rollout set): the study's placebo arms."""
    generator = torch.Generator().manual_seed(seed)
    logp = -torch.rand(4, 7, dtype=torch.float64, generator=generator) * 3
    mask = torch.arange(7)[None, :] < torch.tensor(LENGTHS)[:, None]
    advantages = torch.randn(4, dtype=torch.float64, generator=generator)
    grads = {}
    for name in ("grpo", "gspo", "dapo"):
        current = logp.clone().requires_grad_(True)
        loss, _ = objectives.objective_loss(
            OBJECTIVES[name],
            objectives.TokenLogProbs(current, current.detach(), mask),
            advantages,
            None,
            objectives.Normalisation(group_size=4),
        )
        loss.backward()
        grads[name] = current.grad
    torch.testing.assert_close(grads["gspo"], grads["grpo"], rtol=1e-12, atol=1e-15)
    assert torch.equal(grads["dapo"], grads["grpo"])


# --------------------------------------------------------------------------- KL terms
def _logits(seed, t=3, v=11):
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(1, t, v, dtype=torch.float64, generator=generator)


def test_kl_terms_none_k3_and_exact():
    current_logits = _logits(0).requires_grad_(True)
    reference_logits = _logits(1)
    targets = torch.tensor([[4, 0, 9]])
    part1 = OBJECTIVES["part1"]
    exact = objectives.kl_per_token(part1, current_logits, reference_logits, targets)
    assert torch.equal(exact, losses.exact_prefix_kl(current_logits, reference_logits))
    assert (
        objectives.kl_per_token(OBJECTIVES["grpo"], current_logits, reference_logits, targets)
        is None
    )
    k3_objective = dataclasses.replace(part1, kl=KLTerm("k3", 0.04))
    k3 = objectives.kl_per_token(k3_objective, current_logits, reference_logits, targets)
    log_p = torch.log_softmax(current_logits, -1)[0, range(3), targets[0]]
    log_q = torch.log_softmax(reference_logits, -1)[0, range(3), targets[0]]
    assert k3[0].tolist() == pytest.approx(
        ((log_q - log_p).exp() - (log_q - log_p) - 1).tolist(), rel=1e-12
    )
    assert (k3 >= 0).all() and k3.requires_grad
    # The term enters as coefficient x (the same token reduction as the surrogate).
    current = log_p.detach().unsqueeze(0).requires_grad_(True)
    mask = torch.ones(1, 3, dtype=torch.bool)
    advantage = torch.tensor([0.7], dtype=torch.float64)
    batch = objectives.TokenLogProbs(current, current.detach(), mask)
    loss, audit = objectives.response_losses(k3_objective, batch, advantage, k3.detach())
    assert loss.item() == pytest.approx(-0.7 + 0.04 * k3.mean().item(), rel=1e-12)
    assert audit["kl"].item() == pytest.approx(k3.mean().item(), rel=1e-12)
    summed = dataclasses.replace(k3_objective, aggregation=Aggregation("token_sum", "micro_batch"))
    loss, _ = objectives.response_losses(summed, batch, advantage, k3.detach())
    assert loss.item() == pytest.approx(3 * -0.7 + 0.04 * k3.sum().item(), rel=1e-12)
    with pytest.raises(ValueError, match="has no KL term, but a KL was given"):
        objectives.response_losses(OBJECTIVES["grpo"], batch, advantage, k3.detach())
    with pytest.raises(ValueError, match="needs a per-token KL"):
        objectives.response_losses(part1, batch, advantage, None)


# --------------------------------------------------------------------------- Part I, bit for bit
def _micro_config():
    return load_config("smoke").replaced(
        model={"source": "random"},
        # bit for bit: the one-response-at-a-time path
        sampling={"use_kv_cache": False, "batched": False},
    )


@pytest.fixture(scope="module")
def rollout_set(learning_view_dir):
    """Real micro-policy rollouts scored by Part I's objective on constructed rewards, and a
    policy moved away from both the behaviour policy and the reference (ratios clip, the
    KL acts)."""
    from verifiable_grpo.task import data

    config = _micro_config()
    policy, tokenizer = model_lib.load_base(config)
    reference = copy.deepcopy(policy).requires_grad_(False)
    examples = data.read_examples(learning_view_dir, "train")[:2]
    generator = torch.Generator().manual_seed(0)
    objective = objectives.objective_from_config(config)
    groups = []
    cuts = ([24, 5, 13], [2, 17, 9])  # ragged: a prefix of a sampled response keeps its log-probs
    for i, (example, rewards) in enumerate(zip(examples, ([1.0, 0.0, 0.0], [0.0, 1.0, 1.0]))):
        sampler = rollout.Sampler(policy, tokenizer, config, generator)
        sampled = rollout.sample_group(sampler, example, 3, f"p{i}")
        for row, cut in zip(sampled["responses"], cuts[i]):
            row["response_ids"] = row["response_ids"][:cut]
            row["behaviour_logprobs"] = row["behaviour_logprobs"][:cut]
        sampled["rewards"], sampled["zero_variance"] = rewards, False
        groups.append(objectives.with_advantages(sampled, objective))
    with torch.no_grad():
        noise = torch.Generator().manual_seed(1)
        for p in model_lib.unique_parameters(policy):
            p.add_(0.2 * torch.randn(p.shape, generator=noise))
    return config, policy, reference, groups


def _todays_gradients(policy, reference, groups, config, dtype):
    """An inline copy of Part I's update before objectives existed: per response, the token
    mean of -min(rho A, clip(rho) A) plus beta x the token mean of the exact KL, times
    1 / (P * G), backpropagated one response at a time."""
    section = config["grpo"]
    eps, beta = section["clip_epsilon"], section["kl_coefficient"]
    weight = 1.0 / (len(groups) * len(groups[0]["responses"]))
    policy.zero_grad(set_to_none=True)
    values = []
    for group in groups:
        for member, row in enumerate(group["responses"]):
            ids = torch.tensor([row["prompt_ids"] + row["response_ids"]])
            cut = slice(len(row["prompt_ids"]) - 1, len(ids[0]) - 1)
            with torch.no_grad():
                ref = reference(input_ids=ids).logits.to(dtype)[:, cut]
            cur = policy(input_ids=ids).logits.to(dtype)[:, cut]
            targets = torch.tensor([row["response_ids"]])
            current = torch.log_softmax(cur, -1).gather(-1, targets[..., None])[..., 0]
            old = torch.tensor([row["behaviour_logprobs"]], dtype=dtype)
            adv = torch.tensor([group["advantages"][member]], dtype=dtype)[:, None]
            mask = torch.ones_like(targets, dtype=torch.bool)
            ratio = torch.exp(torch.where(mask, current - old, torch.zeros_like(current)))
            per_token = -torch.minimum(ratio * adv, torch.clamp(ratio, 1 - eps, 1 + eps) * adv)
            count = mask.sum(dim=1).to(dtype)
            surrogate = torch.where(mask, per_token, 0).sum(1) / count
            kl = losses.exact_prefix_kl(cur, ref, block_size=section["kl_block_size"])
            kl = torch.where(mask, kl, 0).sum(1) / count
            loss = surrogate.reshape(-1, 1).mean(1).mean(0) + beta * kl.reshape(-1, 1).mean(1).mean(
                0
            )
            (loss * weight).backward()
            values.append((float(surrogate.detach()), float(kl.detach()), float(loss.detach())))
    return [p.grad.clone() for p in model_lib.unique_parameters(policy)], values


def test_part_one_gradients_are_bit_identical_to_todays_formula(rollout_set):
    config, policy, reference, groups = rollout_set
    before, values = _todays_gradients(policy, reference, groups, config, torch.float32)
    policy.zero_grad(set_to_none=True)
    telemetry = grpo.accumulate_gradients(policy, reference, groups, config)
    after = [p.grad.clone() for p in model_lib.unique_parameters(policy)]
    policy.zero_grad(set_to_none=True)
    # Not vacuous: the clip acts, the KL is non-zero, the advantages are mixed.
    assert telemetry["outside_fraction"] > 0 and telemetry["mean_exact_kl"] > 0
    assert telemetry["clip_low_fraction"] + telemetry["clip_high_fraction"] > 0
    assert [len(r["response_ids"]) for g in groups for r in g["responses"]] == [24, 5, 13, 2, 17, 9]
    assert len(after) == len(before) and all(torch.equal(a, b) for a, b in zip(after, before))
    assert [(r["surrogate"], r["kl"]) for r in telemetry["responses"]] == [v[:2] for v in values]
    table = torch.tensor([v[2] for v in values], dtype=torch.float64).reshape(2, 3)
    assert telemetry["loss"] == float(table.mean(1).mean(0))
    # And both are today's formula: a float64 copy of the same model agrees closely.
    double = copy.deepcopy(policy).double()
    exact, _ = _todays_gradients(
        double, copy.deepcopy(reference).double(), groups, config, torch.float64
    )
    # float32 against float64: an element near zero by cancellation carries the rounding of
    # the large terms that cancelled, so the tolerance is scaled by each tensor's largest
    # entry. Measured worst case 1.7e-6 of it (AMD, and ATen's default kernels on one thread).
    for got, want in zip(after, exact):
        torch.testing.assert_close(
            got.double(), want, rtol=1e-4, atol=1e-5 * float(want.abs().max())
        )


LOOP_OBJECTIVES = {
    "bnpo_k3": dataclasses.replace(OBJECTIVES["bnpo"], kl=KLTerm("k3", 0.04)),
    "cispo": OBJECTIVES["cispo"],
    "gmpo": OBJECTIVES["gmpo"],
    "sapo_k3": dataclasses.replace(OBJECTIVES["sapo"], kl=KLTerm("k3", 0.04)),
    "reinforce_baseline": OBJECTIVES["reinforce_baseline"],
    "grpo_tis": OBJECTIVES["grpo_tis"],
}


@pytest.mark.parametrize("batched", [False, True])
@pytest.mark.parametrize("name", list(LOOP_OBJECTIVES))
def test_the_loop_takes_another_objective_from_the_registry(rollout_set, name, batched):
    """An entry (bnpo with a k3 term, and each newer surrogate) through
    accumulate_gradients, one response at a time or in padded batches, == objective_loss
    on the padded batch."""
    config, policy, reference, groups = rollout_set
    config = config.replaced(sampling={"batched": batched})
    objective = LOOP_OBJECTIVES[name]
    policy.zero_grad(set_to_none=True)
    telemetry = grpo.accumulate_gradients(
        policy, reference, groups, config, grpo.UpdateOptions(objective)
    )
    accumulated = [p.grad.clone() for p in model_lib.unique_parameters(policy)]
    policy.zero_grad(set_to_none=True)
    rows = [(r, g["advantages"][i]) for g in groups for i, r in enumerate(g["responses"])]
    width = max(len(r["response_ids"]) for r, _ in rows)
    current, old, kl, mask = [], [], [], []
    for row, _ in rows:
        n = len(row["response_ids"])
        ids = torch.tensor([row["prompt_ids"] + row["response_ids"]])
        cut = slice(len(row["prompt_ids"]) - 1, len(ids[0]) - 1)
        cur = policy(input_ids=ids).logits.float()[:, cut]
        with torch.no_grad():
            ref = reference(input_ids=ids).logits.float()[:, cut]
        targets = torch.tensor([row["response_ids"]])
        pad = (0, width - n)
        lp = torch.log_softmax(cur, -1).gather(-1, targets[..., None])[0, :, 0]
        current.append(torch.nn.functional.pad(lp, pad))
        old.append(torch.nn.functional.pad(torch.tensor(row["behaviour_logprobs"]), pad))
        term = objectives.kl_per_token(objective, cur, ref, targets)
        kl.append(None if term is None else torch.nn.functional.pad(term[0], pad))
        mask.append(torch.arange(width) < n)
    loss, _ = objectives.objective_loss(
        objective,
        objectives.TokenLogProbs(torch.stack(current), torch.stack(old), torch.stack(mask)),
        torch.tensor([a for _, a in rows]),
        None if kl[0] is None else torch.stack(kl),
        objectives.Normalisation(group_size=3),
    )
    loss.backward()
    wanted = [p.grad for p in model_lib.unique_parameters(policy)]
    assert max(float(w.abs().max()) for w in wanted) > 0  # not vacuous
    # float32, summed in another order: an element near zero by cancellation carries the
    # rounding of the terms that cancelled, so the tolerance scales with each tensor's largest.
    for got, want in zip(accumulated, wanted):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5 * float(want.abs().max()))
    policy.zero_grad(set_to_none=True)
    assert telemetry["loss"] == pytest.approx(float(loss.detach()), rel=1e-5)
    assert telemetry["mean_exact_kl"] > 0  # the exact KL is still measured as the yardstick


def test_a_new_axis_with_a_default_changes_no_recorded_hash(monkeypatch):
    """Grow a part of the registry by one field (a KL bias correction, off by default):
    every entry keeps its hash, so Part I's pinned hash and Part II's committed lock still
    verify; an entry that sets the new field gets a hash of its own."""
    import json

    from verifiable_grpo.core.config import resolve
    from verifiable_grpo.part2 import lock as lock_lib

    grown = dataclasses.make_dataclass(
        "KLTermGrown", [("bias_correction", bool, False)], bases=(KLTerm,), frozen=True
    )
    before = {name: entry.sha256() for name, entry in OBJECTIVES.items()}
    regrown = {
        name: dataclasses.replace(entry, kl=grown(entry.kl.kind, entry.kl.coefficient))
        for name, entry in OBJECTIVES.items()
    }
    assert {name: entry.sha256() for name, entry in regrown.items()} == before
    assert regrown["part1"].sha256() == PART1_SHA256
    corrected = dataclasses.replace(regrown["part1"], kl=grown("exact_prefix", 0.02, True))
    assert corrected.sha256() != PART1_SHA256
    assert corrected.mechanics()["kl"]["bias_correction"] is True
    monkeypatch.setattr(objectives, "OBJECTIVES", regrown)
    monkeypatch.setattr(lock_lib.objectives, "OBJECTIVES", regrown)
    committed = json.loads(resolve("configs/part2/lock.json").read_text())
    assert lock_lib.lock_differences(committed) == []
