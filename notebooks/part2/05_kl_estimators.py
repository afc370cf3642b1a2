# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # KL estimators and their gradients
#
# GRPO's KL penalty is almost never computed exactly: engines evaluate a one-token
# estimator at each sampled token and backpropagate through it. Part I's exact-KL chapter
# showed that the estimators k1, k2 and k3 of Schulman's note ({ref}`Schulman 2020 <ref-kl-approx>`) estimate
# the *value* of KL(p‖q) with different bias and spread. This chapter asks the question that
# matters for training: **what gradient does each one give when it is used as a loss?**
#
# **What you will learn.**
# - Why an estimator that is unbiased for the KL's value can have a gradient that is biased,
#   or zero, and which divergence each estimator's gradient actually follows.
# - What TRL's `use_bias_correction_kl` ({ref}`TRL <ref-trl>`; on by default in TRL 1.16) does to
#   the k3 term, and why its gradient then equals k2's, token by token.
# - How large the bias and the variance of each gradient are on the visited prefixes of the
#   book's tiny model, measured against the exact KL gradient, and which β each needs to
#   push like the exact term.

# %% tags=["colab", "hide-input"] mystnb={"code_prompt_show": "Colab set-up (runs only on Colab): show the cell", "code_prompt_hide": "hide the cell"}
# On Colab only: fetch the project and install it. Elsewhere the package is already installed.
import os, subprocess, sys

if "google.colab" in sys.modules:
    repository = os.environ.get("VERIFIABLE_GRPO_REPOSITORY", "https://github.com/verifiable-grpo/verifiable-grpo")
    clone = os.environ.get("VERIFIABLE_GRPO_CLONE_DIR", "/content/verifiable-grpo")
    if not os.path.isdir(clone):
        subprocess.run(["git", "clone", "-q", "--depth", "1", repository, clone], check=True)
    # --no-deps: everything the chapters import ships with Colab (see book/colab.py)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "-e", clone], check=True)
    # the versions the recorded numbers were computed with; torch stays Colab's CUDA build
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "transformers==5.24.0", "tokenizers==0.23.3", "safetensors==0.8.0"], check=False)
    sys.path.insert(0, os.path.join(clone, "src"))
    os.chdir(os.path.join(clone, "notebooks", "part2"))
    from verifiable_grpo.book.colab import report_versions
    report_versions()

# %%
from verifiable_grpo.book.notebook import quiet

quiet()  # first: progress bars read their settings when their modules are imported

import matplotlib
matplotlib.use("Agg")
import torch
from IPython.display import display
from matplotlib.figure import Figure

from verifiable_grpo.book.notebook import Table, recorded_policy, show, significant
from verifiable_grpo.core.config import load_config
from verifiable_grpo.part1 import kl_probe
from verifiable_grpo.task import data
from verifiable_grpo.task.statements import render_statement
from verifiable_grpo.training import kl_gradients, rollout

# %% [markdown]
# ## Values and gradients, derived
#
# Write $p = \mathrm{softmax}(z)$ for the current policy at one prefix (logits $z$), $q$ for
# the frozen reference, and $d(y) = \log p(y) - \log q(y)$ for a token $y$ drawn from $p$.
# The three estimators of $\mathrm{KL}(p\|q) = \mathbb{E}_{y\sim p}[d(y)]$ are
#
# $$k_1 = d, \qquad k_2 = \tfrac12 d^2, \qquad k_3 = e^{-d} - 1 + d .$$
#
# $k_1$ and $k_3$ have expectation exactly $\mathrm{KL}(p\|q)$ (for $k_3$ because
# $\mathbb{E}_p[e^{-d}] = \sum_y q(y) = 1$); $k_2$ is biased upwards. Used as a loss, the
# sampled token $y$ is a constant and only $\log p(y)$ carries a gradient, so every
# estimator's gradient has the form $c(y)\,\nabla\log p(y)$ with $c = \partial k/\partial d$:
#
# | estimator | $c(y)$ | $\mathbb{E}_{y\sim p}[c(y)\nabla\log p(y)]$ |
# |---|---|---|
# | $k_1$ | $1$ | $\sum_y \nabla p(y) = 0$ |
# | $k_2$ | $d(y)$ | $\nabla\,\mathrm{KL}(p\|q)$ |
# | $k_3$ | $1 - q(y)/p(y)$ | $-\sum_y q(y)\nabla\log p(y) = \nabla\,\mathrm{KL}(q\|p)$ |
#
# The exact gradient is $\nabla\,\mathrm{KL}(p\|q) = \sum_y p(y)\,d(y)\,\nabla\log p(y)$
# (the term $\sum_y p\,\nabla\log p$ vanishes). The differentiation misses the fact that the
# *sampling distribution* depends on $z$ too: what differentiating the expectation would add
# is the score-function term $\mathbb{E}_p[k(y)\nabla\log p(y)]$. For $k_1$ that missing term is
# the whole gradient, so $k_1$ pushes nothing in expectation (only noise). For $k_3$ the value
# is unbiased but the gradient is that of the **forward** KL $\mathrm{KL}(q\|p)$, another
# divergence: the two agree to first order when $p \approx q$ and part ways as the policy
# moves. $k_2$, biased as a value, has exactly the reverse-KL gradient.
#
# **TRL's bias correction.** TRL's GRPO trainer multiplies the per-token k3 by the
# importance weight `coef_1` $= \exp(\log p - \log p_\text{old})$ when
# `use_bias_correction_kl` is on (`trl/trainer/grpo_trainer.py`, line 3104 in TRL 1.16:
# `per_token_kl = per_token_kl * coef_1`). On-policy $p_\text{old}$ is $p$ detached, so the
# weight's value is 1 (the logged KL does not change) but its gradient is $\nabla\log p(y)$.
# The product rule adds exactly the missing score-function term:
#
# $$\nabla(k_3\,\rho) = \big[(1 - e^{-d}) + (e^{-d} - 1 + d)\big]\nabla\log p(y) = d(y)\,\nabla\log p(y),$$
#
# the same per-token gradient as $k_2$, unbiased for $\nabla\,\mathrm{KL}(p\|q)$. The table
# checks all of this by enumeration (every token of the vocabulary, weighted by $p(y)$, in
# float64) on a five-token toy.

# %%
p_toy = torch.tensor([[0.4, 0.25, 0.15, 0.12, 0.08]], dtype=torch.float64)
q_toy = torch.tensor([[0.1, 0.2, 0.3, 0.25, 0.15]], dtype=torch.float64)
toy_kl, toy_reverse = kl_gradients.exact_kl_and_gradient(p_toy.log(), q_toy.log())
toy_forward = kl_gradients.forward_kl_gradient(p_toy.log(), q_toy.log())
toy = kl_gradients.expected_by_enumeration(p_toy.log(), q_toy.log())
LABELS = {"k1": "k1", "k2": "k2", "k3": "k3", "k3_trl": "k3 x coef_1 (TRL)"}

def entries(gradient):   # rounding noise around 0 must not print as -0.0000 on some CPUs
    return ", ".join(f"{v:+.4f}" if abs(v) > 1e-12 else "0" for v in gradient[0].tolist())

Table(["estimator", "E[value]", "E[gradient] w.r.t. the logits", "|E grad - grad KL(p||q)|",
       "|E grad - grad KL(q||p)|"],
      [[LABELS[name], float(toy[name]["value"]),
        entries(toy[name]["gradient"]),
        significant(float((toy[name]["gradient"] - toy_reverse).norm()), 2, below=1e-12),
        significant(float((toy[name]["gradient"] - toy_forward).norm()), 2, below=1e-12)]
       for name in kl_gradients.ESTIMATORS]
      + [["exact KL(p||q)", float(toy_kl), entries(toy_reverse),
          "0", significant(float((toy_reverse - toy_forward).norm()), 2)]],
      digits=4)

# %% [markdown]
# ## On the tiny model's visited prefixes
#
# The toy separates the divergences on purpose. On a real policy, how far apart are they?
# The current policy is the book's recorded warm start; the reference is a copy moved away
# from it by seeded Gaussian noise (5 % of each weight tensor's spread), standing in for the
# drift a few training steps produce. Two responses are sampled from the current policy for
# each of four training prompts (seeded, temperature 1), and every prefix they visited is
# kept: at each, the exact KL and its gradient over the full vocabulary, each estimator's
# expected gradient and per-draw variance by enumeration, and a Monte Carlo check with 256
# seeded draws per prefix, differentiated by autograd.

# %%
tiny = load_config("tiny")
policy, tokenizer, _ = recorded_policy("warmstart", tiny)
reference = kl_gradients.perturbed_copy(policy, relative_noise=0.05, seed=3)
sampler = rollout.Sampler(policy, tokenizer, tiny, torch.Generator().manual_seed(11))
sequences = []
for index, (problem, _) in enumerate(data.generate_problem_set(tiny["data"]["seed"])["train"][:4]):
    example = {"document_id": f"train-{index}", "statement": render_statement(problem, 0),
               "problem": problem}
    group = rollout.sample_group(sampler, example, group_size=2, group_id=f"kl-{index}")
    sequences += [(r["prompt_ids"], r["response_ids"]) for r in group["responses"]]
current_logits = kl_probe.response_prefix_logits(policy, sequences)
reference_logits = kl_probe.response_prefix_logits(reference, sequences)
prefix_kl, exact_gradient = kl_gradients.exact_kl_and_gradient(current_logits, reference_logits)
print(f"{current_logits.shape[0]} visited prefixes, vocabulary of {current_logits.shape[1]}")
print("exact KL(p||q) per prefix: median", significant(float(prefix_kl.median()), 1, below=1e-5),
      "| mean", significant(float(prefix_kl.mean()), 2), "| largest", significant(float(prefix_kl.max()), 2))

# %%
report = kl_gradients.gradient_bias_and_variance(current_logits, reference_logits, samples=256, seed=0)
variance = kl_gradients.exact_gradient_variance(current_logits, reference_logits)
squared_norm = float(exact_gradient.square().sum())
FOLLOWS = {"k1": "nothing (zero)", "k2": "KL(p||q)", "k3": "KL(q||p)", "k3_trl": "KL(p||q)"}
Table(["estimator", "expected gradient follows", "relative bias (exact)",
       "relative bias (256 draws)", "relative variance per draw", "scale along grad KL"],
      [[LABELS[name], FOLLOWS[name],
        significant(report[name]["exact_relative_bias"], 2, below=1e-9),
        significant(report[name]["relative_bias"], 2),
        significant(float(variance[name].sum()) / squared_norm, 2),
        significant(report[name]["scale"], 2, below=1e-9)]
       for name in kl_gradients.ESTIMATORS])

# %% [markdown]
# How to read it. *Relative bias* is $\|\bar g - \nabla\mathrm{KL}\| / \|\nabla\mathrm{KL}\|$ over
# all prefixes together, with $\bar g$ the expected gradient (enumeration) or the mean of the
# 256 sampled gradients; the sampled column also contains Monte Carlo noise, which shrinks as
# $1/\sqrt{n}$ — for k2 and TRL's k3 it is nothing but that noise. *Relative variance per
# draw* is the mean squared deviation of one token's gradient from its expectation, in units
# of $\|\nabla\mathrm{KL}\|^2$: it is much larger than 1, so a single step's KL gradient is
# mostly noise whatever the estimator, and only averaging over tokens and steps makes it act.
# k2 and TRL's k3 rows agree to the last digit, as the derivation says they must.
#
# *Scale along grad KL* is $\langle \bar g, \nabla\mathrm{KL}\rangle / \|\nabla\mathrm{KL}\|^2$:
# the factor by which the estimator's expected push along the exact direction differs from
# the exact term's. **The β each needs:** k2 and TRL's k3 act like the exact term at the same
# β; plain k3 needs β divided by its scale along the exact direction, and still carries the
# forward-KL component that no β removes; k1 has no β that works, its expected gradient being
# zero.
#
# The plot shows the same numbers, and, prefix by prefix, plain k3's relative gradient bias
# against the exact KL at that prefix (prefixes where the KL is below $10^{-6}$ are left
# out). "The two gradients agree to first order" needs $\log p/q$ small on *every* token, not
# a small KL: a rare token whose probability the perturbation multiplied by a large factor
# keeps the relative gap large even at prefixes whose KL is small. For k2 and TRL's k3 the
# same quantity is rounding error (below $10^{-13}$ at every prefix), so it is not drawn.

# %%
bias_per_prefix = kl_gradients.per_prefix_relative_bias(current_logits, reference_logits)
figure = Figure(figsize=(10, 3.6))
left, right = figure.subplots(1, 2)
names = list(kl_gradients.ESTIMATORS)
positions = range(len(names))
left.bar([x - 0.2 for x in positions], [report[n]["exact_relative_bias"] for n in names], 0.4,
         label="relative bias (exact)")
left.bar([x + 0.2 for x in positions], [report[n]["relative_bias"] for n in names], 0.4,
         label="relative bias (256 draws)")
left.plot(positions, [float(variance[n].sum()) / squared_norm / 10 for n in names], "kD",
          label="relative variance per draw / 10")
left.set_xticks(list(positions), [LABELS[n] for n in names])
left.set_title("gradient of each estimator against grad KL(p||q)")
left.legend(fontsize=8)
keep = prefix_kl > 1e-6
right.semilogx(prefix_kl[keep], bias_per_prefix["k3"][keep], "o", ms=4, label="k3, one prefix")
right.axhline(report["k3"]["exact_relative_bias"], color="grey", ls="--", label="k3, all prefixes")
right.set_ylim(bottom=0)
right.set_xlabel("exact KL(p||q) at the prefix")
right.set_ylabel("relative bias of E[gradient of k3]")
right.set_title("plain k3, per visited prefix")
right.legend(fontsize=8)
print("largest relative bias of k2 / TRL's k3 at any prefix below 1e-13:",
      bool(max(float(bias_per_prefix[n].max()) for n in ("k2", "k3_trl")) < 1e-13))
figure.tight_layout()
display(show(figure))

# %% [markdown]
# ## Exercise: k3 with TRL's bias correction
#
# Write `my_corrected_k3(current_logprobs, reference_logprobs)` for float64 log-probabilities
# `[B, T]` of tokens sampled from the current policy, on-policy. Return the per-token k3 times
# TRL's importance weight, so that its value is k3's and its gradient with respect to
# `current_logprobs` is $\log p - \log q$. The checker compares both, and tells you if your
# gradient is plain k3's.

# %%
def my_corrected_k3(current_logprobs, reference_logprobs):
    raise NotImplementedError("replace this line with your code")

# %%
from verifiable_grpo.exercises.kl_gradients import check_bias_corrected_k3

result = check_bias_corrected_k3(my_corrected_k3)

# %% [markdown]
# ```{admonition} Worked solution
# :class: dropdown
# The weight is 1 in value; keeping it in the graph is
# the whole point.
# ```

# %% tags=["hide-input"]
def solution_corrected_k3(current_logprobs, reference_logprobs):
    log_r = reference_logprobs - current_logprobs
    k3 = torch.expm1(log_r) - log_r
    on_policy_ratio = torch.exp(current_logprobs - current_logprobs.detach())
    return k3 * on_policy_ratio

result = check_bias_corrected_k3(solution_corrected_k3)

# %% [markdown]
# ## What to take away
#
# - An estimator's value and its gradient are two different promises: k3 keeps the first
#   (unbiased, never negative) and breaks the second (its gradient follows KL(q‖p)); k2
#   breaks the first and keeps the second; k1's gradient is zero in expectation.
# - TRL 1.16's default bias correction leaves the logged k3 value unchanged and turns its
#   gradient into k2's, the unbiased reverse-KL gradient; turning it off restores the
#   forward-KL gradient of the GRPO paper's k3 penalty ({ref}`Shao et al. 2024 <ref-deepseekmath>`).
# - On the tiny model's visited prefixes the exact KL is the yardstick the engines do not
#   compute: the book's exact penalty ({doc}`../part1/04_exact_kl`) has the
#   reverse-KL gradient with no sampling noise at all.
