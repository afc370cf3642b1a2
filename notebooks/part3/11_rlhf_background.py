# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Background: RLHF with PPO, and what GRPO removes
#
# GRPO is easiest to understand as a simplification of the method it grew out of:
# reinforcement learning from human feedback (RLHF) with proximal policy optimisation
# (PPO), the pipeline behind InstructGPT. This chapter works through one PPO step by
# hand, on a five-token response, with the package computing every number. It follows the
# post-training module's treatment ({ref}`the post-training module <ref-module>`).
#
# **What you will learn.**
# - The four models PPO-based RLHF keeps, and what they cost in memory next to GRPO's two.
# - How the KL penalty becomes a per-token reward, and why a negative sampled log-ratio
#   is not a negative KL.
# - How a value model and generalised advantage estimation (GAE) give each token its own
#   advantage, and what $\gamma$ and $\lambda$ trade.
# - What the clipped surrogate does and does not stop.
# - How GRPO's group baseline replaces the value model, and what it loses.

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
    os.chdir(os.path.join(clone, "notebooks", "part3"))
    from verifiable_grpo.book.colab import report_versions
    report_versions()

# %%
from verifiable_grpo.book.notebook import quiet

quiet()

import torch

from verifiable_grpo.book.notebook import Table
from verifiable_grpo.models import accounting as acc
from verifiable_grpo.part3 import ppo_rlhf as ppo
from verifiable_grpo.training.losses import group_advantages


def row(values, digits=4):
    return [round(float(v), digits) for v in values]

# %% [markdown]
# ## The pipeline and its four models
#
# Classical RLHF has three stages: supervised fine-tuning on demonstrations, a reward
# model fitted to human comparisons (the reward-model chapter), then reinforcement
# learning on freshly sampled responses. The RL stage maximises
#
# $$ \mathbb{E}_{x,\;y \sim \pi_\theta}\big[\, r_\phi(x, y) \,\big]
#    \;-\; \beta\, \mathrm{KL}\big(\pi_\theta(\cdot \mid x)\,\big\|\,\pi_{\text{ref}}(\cdot \mid x)\big), $$
#
# where $\pi_{\text{ref}}$ is the frozen SFT model. The KL term keeps the policy where
# the reward model was trained, which is where its scores mean something. It cannot make
# a wrong reward model right (best-of-n in the reward-model chapter showed what an
# optimiser does to a proxy).
#
# PPO-based RLHF keeps four networks in memory: the **policy** (trained), a **value
# model** that predicts future reward from each prefix (trained), the frozen **reference**
# and the frozen **reward model**. GRPO with a programmatic verifier keeps two: the reward
# is a program, and the value model is replaced by the group (below). With full
# fine-tuning at 16 bytes per trained parameter and bf16 frozen copies, all four the size
# of the previous chapters' models:

# %%
rows = []
for model in (acc.QWEN2_5_0_5B, acc.CASE_STUDY):
    kept = ppo.models_in_memory(trained_bytes=16, frozen_bytes=2, parameters=model.parameters())
    for method, parts in kept.items():
        rows.append([model.name, method, ", ".join(parts), sum(parts.values()) / 1e9])
Table(["model", "method", "networks kept", "model states GB"], rows, digits=1)

# %% [markdown]
# The value model doubles the trained state, before activations. In practice the value
# model is often smaller than the policy, or shares its trunk, and the reward model too.
# Each choice changes the algorithm that is actually run. So do reward normalisation,
# advantage whitening and value clipping. A PPO run is reproducible only if these
# details are written down.
#
# ## The KL penalty as a per-token reward
#
# The response's log-probability is the sum of its tokens' log-probabilities (the stop
# token included), so the log-ratio to the reference splits into tokens too. PPO-RLHF
# charges each token $-\beta \log\frac{\pi_\theta(y_t \mid s_t)}{\pi_{\text{ref}}(y_t \mid s_t)}$
# and adds the reward model's score at the last token. Here is a five-token response
# with score 1.0 and $\beta = 0.1$:

# %%
logp_policy = [-1.2, -0.4, -2.0, -0.7, -0.1]
logp_reference = [-1.5, -0.6, -1.8, -0.9, -0.3]
beta, score = 0.1, 1.0
rewards = ppo.kl_shaped_rewards(score, logp_policy, logp_reference, beta)
log_ratio = torch.tensor(logp_policy) - torch.tensor(logp_reference)
Table(["token t", "log π − log π_ref", "reward r_t"],
      [[t, lr, r] for t, (lr, r) in enumerate(zip(row(log_ratio), row(rewards)))], digits=4)

# %% [markdown]
# Token 2 has a **negative** log-ratio: the reference liked that token more than the
# policy does, and the penalty turns into a small bonus. That is not a negative KL. The KL
# is an expectation over the policy's own samples, and it is never negative; one sampled
# log-ratio can be. (Part I computes the exact KL over the whole vocabulary instead, and
# Lab 5 uses the k3 estimator, which is non-negative per sample.)
#
# ## A value baseline and GAE
#
# A value model $V(s_t)$ predicts the reward still to come from prefix $s_t$. The
# **temporal-difference error** $\delta_t = r_t + \gamma V(s_{t+1}) - V(s_t)$ says how much
# better step $t$ went than predicted, with $V = 0$ after the last token. GAE blends
# these errors:
#
# $$ \hat A_t = \sum_{k \ge 0} (\gamma\lambda)^k\, \delta_{t+k}. $$
#
# With $\lambda = 0$ each token's advantage is its own $\delta_t$: low variance, but only as
# good as $V$. With $\lambda = 1$ (and $\gamma = 1$) it is the sampled return minus $V(s_t)$:
# unbiased, noisier. Language-model RLHF commonly uses $\gamma = 1$ and $\lambda$ near 1.
# Our value model's guesses and the result:

# %%
values = [0.5, 0.6, 0.4, 0.7, 0.9]
result = ppo.gae(rewards, values, gamma=1.0, lam=0.95)
Table(["token t", "V(s_t)", "r_t", "δ_t", "Â_t (λ = 0.95)", "target Â_t + V(s_t)"],
      [[t, values[t], *vals] for t, vals in enumerate(zip(row(rewards), row(result["deltas"]),
                                                          row(result["advantages"]), row(result["returns"])))],
      digits=4)

# %%
for lam in (0.0, 0.95, 1.0):
    print(f"λ = {lam:<4}: advantages {row(ppo.gae(rewards, values, 1.0, lam)['advantages'])}")

# %% [markdown]
# Every token gets its own advantage. Token 2 was predicted to be followed by little
# reward ($V = 0.4$) but the response went on to score well, so it gets the largest
# credit. The value model is trained towards the targets $\hat A_t + V(s_t)$ with a
# squared error.
#
# The same computation, drawn:
#
# ![A table of the five tokens of the episode: the value model's guesses V(s_t), the
# rewards r_t (a small KL penalty at each token and the score 1.0 at the last), the TD
# errors delta_t and the GAE advantages, which are accumulated from the last token back,
# each step multiplied by gamma times lambda. Beside it, GRPO's alternative: no value
# model, and every token of a response gets the same advantage, computed from its group of
# answers to the same prompt.](../../book/images/ppo_gae.png)
#
# *PPO's learned value model and GAE, beside GRPO's group baseline.*
#
# ## The clipped surrogate
#
# PPO samples a batch with the old policy and takes several gradient steps on it. Each
# token's ratio $\rho_t = \pi_\theta(y_t \mid s_t) / \pi_{\text{old}}(y_t \mid s_t)$ enters
# $\min\big(\rho_t \hat A_t,\ \operatorname{clip}(\rho_t, 1-\epsilon, 1+\epsilon)\,\hat A_t\big)$.
# With $\epsilon = 0.2$, for a good token ($A = +1$) and a bad one ($A = -1$):

# %%
Table(["A", "ratio ρ", "objective", "d objective / d ρ", "still pushing?"],
      [[c["advantage"], c["ratio"], c["objective"], c["gradient"], "yes" if c["gradient"] else "no"]
       for c in ppo.clip_cases(0.2)], digits=2)

# %% [markdown]
# The minimum removes the incentive only once a move has gone far enough *in the
# helpful direction* (ratio above 1.2 for a good token, below 0.8 for a bad one). A
# harmful move is always penalised. This is not a hard limit on the ratio. Other tokens
# share the parameters and can push a clipped token's probability further. That is why
# Part I's audit reports the fraction of ratios outside the interval as well as the
# clipped fraction.
#
# ## One PPO step on the episode
#
# To see the pieces move together, give the policy one row of logits per state (four
# possible tokens, all equal at the start) and the value model one number per state. The
# old policy is the policy before the step, so all ratios start at exactly 1. One gradient
# step on the clipped objective plus half the value loss:

# %%
actions = [0, 1, 2, 3, 0]
episode = ppo.Episode(actions, result["advantages"], result["returns"], values)
step = ppo.tabular_ppo_step(torch.zeros(5, 4), episode, ppo.PpoStep(epsilon=0.2, learning_rate=0.5))
display(Table(["token t", "Â_t", "ratio after the step", "V before", "V after", "target"],
      [[t, a, r, v, va, g] for t, (a, r, v, va, g) in enumerate(zip(
          row(result["advantages"]), row(step["ratio_after"]), values, row(step["values_after"]),
          row(result["returns"])))], digits=4))
print(f"value loss {step['value_loss']:.4f} -> {step['value_loss_after']:.4f}")

# %% [markdown]
# Each token's probability rises in proportion to its advantage (all five are positive
# here, token 2 most). The values move towards their targets. A second step on the same
# batch would start from ratios above 1; once a token's ratio passed 1.2 its push would
# stop.
#
# ## GRPO's group baseline instead
#
# GRPO drops the value model. For each prompt it samples a group of $G$ responses,
# scores each once, and uses the group's mean (and spread) as the baseline. Every token
# of a response shares that response's advantage. Four responses to the same prompt with
# verifier scores 1, 0, 0, 1, with Part I's population standard deviation:

# %%
scores = torch.tensor([[1.0, 0.0, 0.0, 1.0]])
advantages, mean, std = group_advantages(scores)
print(f"group mean {mean.item():.2f}, std {std.item():.2f}, advantages {row(advantages[0], 3)}")
print("every token of response 0 gets", round(advantages[0, 0].item(), 3),
      "| PPO above gave its five tokens", row(result["advantages"], 3))

# %% [markdown]
# What GRPO gives up is credit assignment inside a response: a good answer with one bad
# token reinforces the bad token too, and only many samples average that out. What it
# gains: no value network to train, store and tune, and a baseline that is right
# on average by construction for that prompt. Finding a good baseline per prefix is
# hard, and a poor value model quietly biases PPO's advantages. The cost moves to
# sampling: $G$ responses per prompt, and no signal at all from a group whose responses
# all score the same (the GRPO chapters' zero-variance groups).
#
# ## The alignment tax
#
# InstructGPT measured that RLHF made the model worse on some public NLP benchmarks,
# which it called an alignment tax. Its PPO-ptx variant mixed pretraining-data gradients
# into the updates to recover part of it. Mixing in earlier data (rehearsal) helps, but
# nothing guarantees every capability survives. The remedy is measurement: evaluate
# general and domain ability on their own, next to the reward being optimised. Part I's
# evaluation and the Part III behaviour suite do this.
#
# ## Exercises
#
# **1. (GAE by hand)** With $\gamma = 1$ and $\lambda = 1$, what are the five advantages
# of the episode above? Check with the cell below.
#
# ```{admonition} Worked solution 1
# :class: dropdown
# With $\gamma = \lambda = 1$ the sum of $\delta$s telescopes: $\hat A_t$ is the sum of the
# rewards from $t$ to the end, minus $V(s_t)$. The rewards sum to 0.93 from token 0, so
# $\hat A_0 = 0.93 - 0.5 = 0.43$; from token 4 the remaining reward is 0.98, so
# $\hat A_4 = 0.98 - 0.9 = 0.08$. In between: 0.36, 0.58 and 0.26.
# ```

# %%
print(row(ppo.gae(rewards, values, 1.0, 1.0)["advantages"], 3))

# %% [markdown]
# **2. (zero-variance group)** What advantage does every response get if all four
# scores are 1? Which PPO component would still produce a learning signal in that case?
#
# ```{admonition} Worked solution 2
# :class: dropdown
# Exactly 0 for every response (the package returns 0.0, not a tiny number, for a
# constant group). No task gradient flows; only the KL term still pulls the policy
# towards the reference. In PPO-RLHF a value model that predicted less than 1 would
# still produce positive advantages and reinforce the responses, which is exactly
# where a poor value model can do harm as well as good.
# ```

# %%
print(group_advantages(torch.ones(1, 4))[0])
