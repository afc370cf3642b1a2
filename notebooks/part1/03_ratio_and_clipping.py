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
#
# %% [markdown]
# # The ratio and its clip
#
# GRPO reuses one set of sampled responses for more than one update. The policy ratio
# $\rho = \exp(\log p_\text{current} - \log p_\text{old})$ says how much more (or less)
# likely the current policy makes a sampled token than the policy that sampled it, and the
# clipped objective $\min(\rho A,\ \mathrm{clip}(\rho, 1-\epsilon, 1+\epsilon)\,A)$ stops
# rewarding a move once the ratio has gone far enough in the direction the advantage asks
# for. The clip comes from PPO, proximal policy optimisation
# ({ref}`Schulman et al. 2017 <ref-ppo>`), which GRPO keeps; what GRPO drops is PPO's learned
# value function (Part III, chapter 11, shows the difference).
#
# You will learn what the ratio measures, where the clip removes the gradient for a positive
# and for a negative advantage, and why a wrong clip can hide behind tests that use only
# positive advantages.
#
# **Invariant.** Where the clipped branch is the smaller one, the token contributes a
# constant and its gradient is exactly zero; the sign of $A$ decides on which side that
# happens; on the first update of a rollout set every ratio is 1, up to rounding (about
# $10^{-5}$: the old log-probabilities come from the sampler, the new ones from a separate
# forward pass).

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
    os.chdir(os.path.join(clone, "notebooks", "part1"))
    from verifiable_grpo.book.colab import report_versions
    report_versions()

# %%
from verifiable_grpo.book.notebook import quiet

quiet()  # first: progress bars read their settings when their modules are imported

from verifiable_grpo.part1 import demos
from verifiable_grpo.book import widgets
from verifiable_grpo.book.notebook import Table, show

# %% [markdown]
# ## Both signs of the advantage
#
# Two signs of $A$ and three places for the ratio (below, inside or above the interval
# $[1-\epsilon, 1+\epsilon]$) make six regions. The clip removes the gradient in two of them,
# one for each sign:
#
# ![Two panels of the per-token objective against the ratio rho, for A = +1 and A = -1,
# each split at 0.8 and 1.2 into three regions. For A > 0 the gradient is kept below the
# interval (a good token that became less likely is pulled back up) and inside it, and
# removed above it. For A < 0 it is removed below the interval and kept inside and above
# it (a bad token that became more likely is pushed back
# down).](../../book/images/clip_regions.png)
#
# *The clipped objective of one token for a better-than-average response (top) and a worse
# one (bottom): six regions of the ratio, two of which carry no gradient.*
#
# For one token with log-probability ratio $\rho$ and advantage $A$, the table gives the
# objective, the branch that `min` selects, and the gradient with respect to the token's
# log-probability, computed by autograd in float64 through the package's
# `clipped_group_surrogate` (with $\epsilon = 0.2$).
#
# **Two gradients of the same objective.** Write the token's objective as
# $L(\rho) = \min(\rho A,\ \mathrm{clip}(\rho, 1-\epsilon, 1+\epsilon)\,A)$. On the branch
# that `min` selects,
#
# $$\frac{\partial L}{\partial \rho} = \begin{cases} A & \text{unclipped branch selected} \\
#   0 & \text{clipped branch strictly smaller (a constant)} \end{cases}$$
#
# The model does not output $\rho$, it outputs $\log p$, and
# $\rho = \exp(\log p - \log p_\text{old})$ gives $\partial \rho / \partial \log p = \rho$.
# By the chain rule
#
# $$\frac{\partial L}{\partial \log p} = \rho\, \frac{\partial L}{\partial \rho}
#   = \begin{cases} \rho A & \text{unclipped} \\ 0 & \text{clipped.} \end{cases}$$
#
# The plots below show the slope in $\rho$ (flat at $A$ wherever the gradient is on); the
# table's last column is the gradient in $\log p$ that the optimiser actually receives,
# $\rho$ times that slope. Both vanish on exactly the same tokens: the clip decides *whether*
# a token has a gradient, the ratio scales *how much*. The table shows both columns.

# %%
rows = demos.clip_gradient_table(ratios=(0.5, 0.7, 0.9, 1.0, 1.1, 1.3, 1.5))
slope = {a: dict(zip(c["ratios"].tolist(), c["gradient"].tolist())) for a, c in
         ((a, widgets.clipping_curves(a, 0.2, ratios=[r["ratio"] for r in rows])) for a in (1.0, -1.0))}
Table(["A", "ratio", "objective", "branch", "d objective / d rho (the plot)",
       "d objective / d log p (autograd)"],
      [[r["advantage"], r["ratio"], r["objective"], r["branch"], slope[r["advantage"]][r["ratio"]],
        r["d_objective_d_logp"]] for r in rows])

# %%
print("d/d log p = rho * d/d rho on every row, within 1e-12:",
      all(abs(r["d_objective_d_logp"] - r["ratio"] * slope[r["advantage"]][r["ratio"]]) < 1e-12
          for r in rows))

# %% [markdown]
# With $A > 0$ the clip acts only above $1+\epsilon$: the token has already become more
# likely, and pushing further earns nothing. Below $1-\epsilon$ the unclipped term is the
# smaller one, so the gradient stays on: a good token that became *less* likely is still
# pulled back up. With $A < 0$ it is the mirror image. That asymmetry is why a
# tutorial that tests only positive advantages can ship a wrong clip without noticing.

# %%
for advantage in (1.0, -1.0):
    display(show(widgets.plot_clipping(widgets.clipping_curves(advantage, clip_epsilon=0.2))))

# %% [markdown]
# ## Try it
#
# Move $A$, $\epsilon$ and a separate upper $\epsilon$ (DAPO's "clip-higher" makes the upper
# bound wider than the lower one). The shaded band is where the clip removes the gradient.
# The red dot is one token at the ratio you choose: the table names which of the six
# regions (two signs of $A$, ratio below, inside or above the interval) it sits in. In the
# built book the widget below runs in your browser, with the package's arithmetic.
#
# <div class="vg-live" data-widget="clip" data-advantage="1" data-epsilon="0.2"
# data-ratio="1.3"><em>(A live widget appears here in the built book. In Jupyter or on
# Colab, run the next cell.)</em></div>
# <script src="../../_static/vg-live.js"></script>

# %% tags=["remove-output"]
# NBVAL_IGNORE_OUTPUT
# In Jupyter or on Colab: the same widget, computed by the package in Python.
widgets.make_clipping_widget(advantage=1.0, clip_epsilon=0.2)

# %% [markdown]
# ## Why one update per rollout set never clips
#
# At the first update on a freshly sampled set, the current policy is the policy that
# sampled it, so $\rho = 1$ for every token and no clip can act. Only after the parameters
# have moved can a ratio leave $[0.8, 1.2]$. The demonstration below uses a six-token
# categorical policy, one group of four three-token responses and a deliberately large
# step, so the effect is visible after a single update.

# %%
report = demos.two_updates_on_one_rollout_set(updates=3, learning_rate=5.0, seed=0)
print("rewards:", report[0]["rewards"], "advantages:", [round(a, 6) for a in report[0]["advantages"]])
Table(["update", "min ratio", "max ratio", "outside [0.8,1.2]", "active clip", "grad norm"],
      [[r["update"], r["min_ratio"], r["max_ratio"], r["outside_fraction"],
        r["active_clip_fraction"], r["gradient_norm"]] for r in report], digits=4)

# %% [markdown]
# {ref}`The practical's specification <ref-practical>` (the assignment Part I follows)
# asks for two updates per rollout set, and they are what give the clip something to do;
# TRL's default of one update per generation batch leaves its clip metrics at zero. The
# GRPO chapter measures how far the ratios actually moved, update by update, in the
# recorded run of the tiny model.
#
# ## Error to diagnose: refreshing the old log-probabilities
#
# A tempting shortcut recomputes the "old" log-probabilities from the current model before
# each update, instead of keeping the values captured during sampling. The code runs, the
# loss looks fine, and the clip is silently gone: every ratio is 1 again.

# %%
buggy = demos.two_updates_on_one_rollout_set(updates=3, learning_rate=5.0, seed=0, refresh_old=True)
Table(["update", "min ratio", "max ratio", "active clip"],
      [[r["update"], r["min_ratio"], r["max_ratio"], r["active_clip_fraction"]] for r in buggy],
      digits=4)

# %% [markdown]
# The package keeps the captured behaviour log-probabilities for the whole life of a
# rollout set and checks, before the first update, that rescoring the full sequences
# recovers them within $2\times10^{-4}$ (chapter on GRPO).

# %% [markdown]
# ## Exercise: the clipped surrogate of one token
#
# Write `my_clipped_objective(ratio, advantage, epsilon)` for float64 tensors of one shape:
# the per-token objective $\min(\rho A,\ \mathrm{clip}(\rho, 1-\epsilon, 1+\epsilon)A)$
# (to be maximised). The checker compares the values for both signs of $A$ and several
# $\epsilon$, and the gradient with respect to $\rho$ through autograd, so keep $\rho$ in the
# graph.

# %%
import torch

def my_clipped_objective(ratio, advantage, epsilon):
    raise NotImplementedError("replace this line with your code")

# %%
from verifiable_grpo.exercises import check_clipped_surrogate

result = check_clipped_surrogate(my_clipped_objective)

# %% [markdown]
# ```{admonition} Worked solution
# :class: dropdown
# Clip the *ratio*, multiply by $A$, take the
# smaller branch; `torch.clamp` and `torch.minimum` route the gradient to the selected branch.
# ```

# %% tags=["hide-input"]
def solution_clipped_objective(ratio, advantage, epsilon):
    clipped = torch.clamp(ratio, 1 - epsilon, 1 + epsilon)
    return torch.minimum(ratio * advantage, clipped * advantage)

result = check_clipped_surrogate(solution_clipped_objective)
