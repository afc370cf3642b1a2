"""Exact enumeration on a 5-token vocabulary (float64) for every KL estimator used as a loss."""

import math

import pytest
import torch

from verifiable_grpo.training import kl_gradients as kg

P = torch.tensor([[0.4, 0.25, 0.15, 0.12, 0.08]], dtype=torch.float64)
Q = torch.tensor([[0.1, 0.2, 0.3, 0.25, 0.15]], dtype=torch.float64)


def _hand_expectations():
    """Values and gradients written out by hand, token by token (no autograd)."""
    p, q = P[0].tolist(), Q[0].tolist()
    reverse = sum(pi * math.log(pi / qi) for pi, qi in zip(p, q))
    # d KL(p||q) / d z_j = p_j (log p_j/q_j - KL); d KL(q||p) / d z_j = p_j - q_j
    grad_reverse = [pj * (math.log(pj / qj) - reverse) for pj, qj in zip(p, q)]
    grad_forward = [pj - qj for pj, qj in zip(p, q)]
    return (
        reverse,
        torch.tensor([grad_reverse], dtype=torch.float64),
        torch.tensor([grad_forward], dtype=torch.float64),
    )


def test_expected_values_by_enumeration():
    reverse, _, _ = _hand_expectations()
    e = kg.expected_by_enumeration(P.log(), Q.log())
    k2_hand = sum(pi * math.log(pi / qi) ** 2 / 2 for pi, qi in zip(P[0].tolist(), Q[0].tolist()))
    for name in ("k1", "k3", "k3_trl"):  # unbiased values
        assert float(e[name]["value"]) == pytest.approx(reverse, abs=1e-14)
    assert float(e["k2"]["value"]) == pytest.approx(k2_hand, abs=1e-14)
    assert float(e["k2"]["value"]) > reverse  # k2's value is biased here


def test_expected_gradients_by_enumeration():
    _, grad_reverse, grad_forward = _hand_expectations()
    e = kg.expected_by_enumeration(P.log(), Q.log())
    assert torch.allclose(e["k1"]["gradient"], torch.zeros_like(P), atol=1e-15)
    assert torch.allclose(e["k2"]["gradient"], grad_reverse, atol=1e-14)
    assert torch.allclose(e["k3"]["gradient"], grad_forward, atol=1e-14)
    assert torch.allclose(e["k3_trl"]["gradient"], grad_reverse, atol=1e-14)
    assert not torch.allclose(grad_forward, grad_reverse, atol=1e-3)  # the toy separates them
    kl, grad = kg.exact_kl_and_gradient(P.log(), Q.log())
    assert torch.allclose(grad, grad_reverse, atol=1e-14)
    assert torch.allclose(kg.forward_kl_gradient(P.log(), Q.log()), grad_forward, atol=1e-15)


def test_bias_correction_matches_trl_formula():
    # trl/trainer/grpo_trainer.py 1.16: per_token_kl = exp(ref - cur) - (ref - cur) - 1;
    # if use_bias_correction_kl: per_token_kl = per_token_kl * coef_1, coef_1 = exp(cur - old).
    cur_leaf = torch.tensor([-0.3, -1.2, -2.0], dtype=torch.float64, requires_grad=True)
    ref = torch.tensor([-0.9, -0.8, -2.5], dtype=torch.float64)
    ours = kg.estimator_losses(cur_leaf, ref)["k3_trl"]
    (ours_grad,) = torch.autograd.grad(ours.sum(), cur_leaf)
    trl_leaf = cur_leaf.detach().clone().requires_grad_(True)
    coef_1 = torch.exp(trl_leaf - trl_leaf.detach())
    trl = (torch.exp(ref - trl_leaf) - (ref - trl_leaf) - 1) * coef_1
    (trl_grad,) = torch.autograd.grad(trl.sum(), trl_leaf)
    assert torch.allclose(ours, trl, atol=1e-15) and torch.allclose(ours_grad, trl_grad, atol=1e-15)
    # the per-sample gradient equals k2's: log p - log q
    assert torch.allclose(ours_grad, cur_leaf.detach() - ref, atol=1e-15)


def test_trl_source_still_multiplies_by_coef_1():
    trainer = pytest.importorskip("trl.trainer.grpo_trainer")
    import inspect

    assert "per_token_kl = per_token_kl * coef_1" in inspect.getsource(trainer)


def test_seeded_monte_carlo_within_tolerance():
    current, reference = P.log().repeat(3, 1), Q.log().repeat(3, 1)
    report = kg.gradient_bias_and_variance(current, reference, samples=20000, seed=1)
    assert report["k1"]["exact_relative_bias"] == pytest.approx(1.0, abs=1e-12)
    assert report["k2"]["exact_relative_bias"] < 1e-12
    assert report["k3"]["exact_relative_bias"] > 0.2
    # Monte Carlo: 20000 draws per prefix; standard error of the relative mean is ~ 0.03 here
    for name in ("k2", "k3_trl"):
        assert report[name]["relative_bias"] < 0.1
    assert report["k3"]["relative_bias"] > 0.2
    assert report["k2"]["variance"] == pytest.approx(report["k3_trl"]["variance"], rel=1e-12)
    assert report["k2"]["scale"] == pytest.approx(1.0, abs=1e-12)


def test_sampled_gradients_are_seeded():
    a = kg.sampled_gradients(P.log(), Q.log(), 50, torch.Generator().manual_seed(4))
    b = kg.sampled_gradients(P.log(), Q.log(), 50, torch.Generator().manual_seed(4))
    assert all(torch.equal(a[n], b[n]) for n in kg.ESTIMATORS)


@pytest.mark.parametrize(
    "call, key",
    [
        (lambda: kg.expected_by_enumeration(P.log(), Q.log()[:, :4]), "reference_logits"),
        (lambda: kg.exact_kl_and_gradient(P.log()[0], Q.log()[0]), "current_logits"),
        (
            lambda: kg.expected_by_enumeration(P.log(), torch.full_like(P, float("nan"))),
            "reference_logits",
        ),
        (lambda: kg.sampled_gradients(P.log(), Q.log(), 1, torch.Generator()), "samples"),
        (lambda: kg.gradient_bias_and_variance(P.log(), P.log()), "exact KL gradient"),
        (lambda: kg.perturbed_copy(torch.nn.Linear(2, 2), -1.0, 0), "relative_noise"),
    ],
)
def test_bad_input_refused(call, key):
    with pytest.raises(ValueError, match=key):
        call()


def test_exercise_checker_accepts_the_correction_and_names_the_plain_k3_mistake(capsys):
    from verifiable_grpo.exercises.kl_gradients import NO_WEIGHT, check_bias_corrected_k3

    def corrected(p, q):
        return kg.estimator_losses(p, q)["k3_trl"]

    def plain(p, q):
        return kg.estimator_losses(p, q)["k3"]

    assert check_bias_corrected_k3(corrected, verbose=False).passed
    result = check_bias_corrected_k3(plain, verbose=False)
    assert not result.passed and any(NO_WEIGHT in line for line in result.failures)


def test_exact_variance_matches_hand_enumeration_and_monte_carlo():
    p, q = P[0], Q[0]
    d = p.log() - q.log()
    # per-sample gradient of each estimator for token y: c(y) (e_y - p)
    coefficients = {"k1": torch.ones_like(d), "k2": d, "k3": 1 - torch.exp(-d), "k3_trl": d}
    variance = kg.exact_gradient_variance(P.log(), Q.log())
    for name, c in coefficients.items():
        per_token = c.unsqueeze(-1) * (torch.eye(5, dtype=torch.float64) - p)
        mean = (p.unsqueeze(-1) * per_token).sum(0)
        hand = float((p * (per_token - mean).square().sum(-1)).sum())
        assert float(variance[name][0]) == pytest.approx(hand, abs=1e-14)
    sampled = kg.gradient_bias_and_variance(P.log(), Q.log(), samples=20000, seed=2)
    for name in kg.ESTIMATORS:  # Monte Carlo variance within 5 % of the exact one
        assert sampled[name]["variance"] == pytest.approx(float(variance[name][0]), rel=0.05)
    bias = kg.per_prefix_relative_bias(P.log(), Q.log())
    assert float(bias["k3"][0]) == pytest.approx(float(bias["forward"][0]), abs=1e-14)
    assert float(bias["k2"][0]) < 1e-12 and float(bias["k1"][0]) == pytest.approx(1.0, abs=1e-12)
