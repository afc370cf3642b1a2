"""The newer entries against TRL 1.16's own GRPOTrainer._compute_loss (float64, ragged
lengths, three micro-batches of one optimizer step), bnpo under both micro-batch
conventions, and a refusal by name for every entry TRL cannot express."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from verifiable_grpo.training import objectives, trl_loss, trl_parity
from verifiable_grpo.training.objectives import OBJECTIVES, Aggregation, Surrogate

pytest.importorskip("trl")
pytestmark = pytest.mark.usefixtures("one_thread")

LENGTHS = [3, 5, 2, 7, 1, 4]  # two prompts of three
SPLIT = [[0, 1], [2, 3], [4, 5]]  # three micro-batches, as TRL takes them: in order
# Both derived from the registry and its one refusal table (test_registry.py: complete).
EXPRESSIBLE = trl_parity.EXPRESSIBLE
REFUSED = trl_parity.REFUSED


def _tensors(seed, shift):
    generator = torch.Generator().manual_seed(seed)
    width = max(LENGTHS)
    mask = torch.arange(width)[None, :] < torch.tensor(LENGTHS)[:, None]
    old = -0.2 - 2 * torch.rand(6, width, dtype=torch.float64, generator=generator)
    logp = old + shift * torch.randn(6, width, dtype=torch.float64, generator=generator)
    advantages = torch.randn(6, dtype=torch.float64, generator=generator)
    return logp, old, advantages, mask


def _grad(loss_fn, logp):
    current = logp.clone().requires_grad_(True)
    loss = loss_fn(current)
    loss.backward()
    return loss.detach(), current.grad


def _ours(name, micro_batches=None):
    return lambda old, advantages, mask: (
        lambda c: objectives.objective_loss(
            OBJECTIVES[name],
            objectives.TokenLogProbs(c, old, mask),
            advantages,
            None,
            objectives.Normalisation(group_size=3, max_length=8, micro_batches=micro_batches),
        )[0]
    )


def _theirs(name):
    return lambda old, advantages, mask: (
        lambda c: trl_loss.trl_loss(
            OBJECTIVES[name],
            objectives.TokenLogProbs(c, old, mask),
            advantages,
            max_completion_length=8,
            micro_batches=SPLIT,
        )
    )


def _compare(ours, theirs, shift, rtol):
    logp, old, advantages, mask = _tensors(11, shift)
    our_loss, our_grad = _grad(ours(old, advantages, mask), logp)
    their_loss, their_grad = _grad(theirs(old, advantages, mask), logp)
    assert our_loss.item() == pytest.approx(their_loss.item(), rel=rtol, abs=1e-15)
    torch.testing.assert_close(our_grad[mask], their_grad[mask], rtol=rtol, atol=1e-15)
    assert (our_grad[~mask] == 0).all() and (their_grad[~mask] == 0).all()
    return our_grad, their_grad


@pytest.mark.parametrize("shift", [0.0, 0.6])
@pytest.mark.parametrize("name", EXPRESSIBLE)
def test_each_expressible_entry_equals_trl_over_three_micro_batches(name, shift):
    # SAPO: TRL builds its temperatures with torch.where on python floats, i.e. in float32
    # (1.05 -> 1.0499999523): a relative difference of ~5e-8 in float64; ours is exact.
    rtol = 1e-7 if name == "sapo" else 1e-12
    micro_batches = 3 if name == "bnpo" else None
    our_grad, _ = _compare(_ours(name, micro_batches), _theirs(name), shift, rtol)
    assert our_grad.abs().max() > 0


def test_bnpo_per_step_is_not_trls_per_micro_batch():
    """The book's convention (the whole step is one micro-batch) and TRL's (each of k
    micro-batches normalised by its own tokens, / k) agree with one micro-batch only."""
    logp, old, advantages, mask = _tensors(11, 0.6)
    ours_step = objectives.objective_loss(
        OBJECTIVES["bnpo"],
        objectives.TokenLogProbs(logp, old, mask),
        advantages,
        None,
        objectives.Normalisation(group_size=3),
    )[0]
    batch = objectives.TokenLogProbs(logp, old, mask)
    theirs_one = trl_loss.trl_loss(OBJECTIVES["bnpo"], batch, advantages)
    theirs_three = trl_loss.trl_loss(OBJECTIVES["bnpo"], batch, advantages, micro_batches=SPLIT)
    assert ours_step.item() == pytest.approx(theirs_one.item(), rel=1e-12)
    assert abs(ours_step.item() - theirs_three.item()) > 1e-3


def test_the_newer_entries_trl_configurations():
    assert trl_parity.trl_arm(OBJECTIVES["cispo"]).config["loss_type"] == "cispo"
    assert trl_parity.trl_arm(OBJECTIVES["cispo"]).config["epsilon_high"] == 5.0
    sapo = trl_parity.trl_arm(OBJECTIVES["sapo"]).config
    assert (sapo["loss_type"], sapo["sapo_temperature_pos"], sapo["sapo_temperature_neg"]) == (
        "sapo",
        1.0,
        1.05,
    )
    mis = trl_parity.trl_arm(OBJECTIVES["grpo_mis"])
    assert mis.config["vllm_importance_sampling_mode"] == "sequence_mask"
    assert mis.config["vllm_importance_sampling_clip_max"] == 3.0
    assert any("use_vllm=True" in note for note in mis.notes)
    # The study's arms keep exactly the fields the Part II lock pins.
    assert (
        "vllm_importance_sampling_correction" not in trl_parity.trl_arm(OBJECTIVES["grpo"]).config
    )


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_what_trl_cannot_express_is_refused_by_name(name):
    with pytest.raises(
        trl_parity.NotExpressibleInTRL, match=f"objective {name}: .*{REFUSED[name]}"
    ):
        trl_parity.trl_arm(OBJECTIVES[name])


def test_a_loss_type_reduced_otherwise_or_an_unknown_field_is_refused():
    summed = dataclasses.replace(OBJECTIVES["cispo"], name="cispo_mean", aggregation=Aggregation())
    with pytest.raises(
        trl_parity.NotExpressibleInTRL,
        match="reduces loss_type 'cispo' as token_sum / generation_batch",
    ):
        trl_parity.trl_arm(summed)
    grown = dataclasses.make_dataclass(
        "SurrogateGrown", [("delta", float | None, None)], bases=(Surrogate,), frozen=True
    )
    at_default = dataclasses.replace(OBJECTIVES["grpo"], surrogate=grown())
    assert trl_parity.trl_arm(at_default).config == trl_parity.trl_arm(OBJECTIVES["grpo"]).config
    two_sided = dataclasses.replace(
        OBJECTIVES["grpo"], name="two_sided", surrogate=grown(delta=4.0)
    )
    with pytest.raises(trl_parity.NotExpressibleInTRL, match="no mapping here for surrogate.delta"):
        trl_parity.trl_arm(two_sided)


def test_a_kind_added_to_the_registry_later_is_refused_until_mapped(monkeypatch):
    from verifiable_grpo.training import objective_parts

    monkeypatch.setattr(
        objective_parts, "SURROGATE_KINDS", objective_parts.SURROGATE_KINDS + ("vespo",)
    )
    vespo = dataclasses.replace(OBJECTIVES["grpo"], name="vespo", surrogate=Surrogate("vespo"))
    with pytest.raises(
        trl_parity.NotExpressibleInTRL, match="vespo: .*no mapping here for the surrogate 'vespo'"
    ):
        trl_parity.trl_arm(vespo)
