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
# # Two placebo arms and a costly one
#
# Two of the study's arms change only how the importance ratio enters the loss: `gspo`
# takes it per sequence ({ref}`GSPO <ref-gspo>`), `dapo` raises the upper clip to $1.28$
# ({term}`clip-higher <Clip-higher>`, {ref}`DAPO <ref-dapo>`). With one update per rollout
# set the update is {term}`on policy <On policy / off policy>`: the ratio is 1 (to about
# $10^{-5}$) at the moment of the update, so neither change can act.
#
# **What you will learn.** Why a change to the ratio or its clip is a placebo on policy,
# proved with autograd; where the arms part once the policy has moved; and what DAPO's
# {term}`dynamic sampling`, the one change that does act on policy, costs in rollouts.

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

quiet()

from verifiable_grpo.book import family_plots
from verifiable_grpo.book.notebook import Table, show, significant
from verifiable_grpo.part2 import demos

# %% [markdown]
# ## Why the ratio cannot act on policy
#
# The surrogate of one token is $-\min(\rho A,\ \mathrm{clip}(\rho, 1-\epsilon_l, 1+\epsilon_h) A)$
# with $\rho = \exp(\log\pi_\theta - \log\pi_{\text{old}})$ and the old log-probability a
# constant. At $\rho = 1$ both branches of the min agree and neither clip bound is active,
# so the gradient is $-A\,\partial\rho/\partial\theta = -A\,\partial \log\pi_\theta/\partial\theta$,
# whatever $\epsilon_h$ is: clip-higher is inert. GSPO's sequence ratio is
# $s_i = \exp\big(\frac{1}{|o_i|}\sum_t (\log\pi_\theta - \log\pi_{\text{old}})\big)$ on every token
# of response $i$. At $s_i = 1$ its derivative with respect to one token's log-probability is
# $1/|o_i|$, and the token mean of the response sums $|o_i|$ copies of $A_i s_i$ divided by
# $|o_i|$: the response's gradient is $\frac{A_i}{|o_i|}\sum_t \partial\log\pi_\theta(o_{i,t})$,
# exactly the token-level one. So on policy `gspo` and `dapo`'s clip are the same
# objective as `grpo`.
#
# Below, autograd compares the gradients on random ragged log-probabilities: first with the
# current log-probs equal to the old ones (what the first update of a rollout set sees),
# then moved by a random shift, as the second update of the `two_updates` regime sees them.

# %%
rows = []
for seed in range(4):
    on = demos.placebo_gradients(seed, shift=0.0)
    off = demos.placebo_gradients(seed, shift=0.3)
    rows.append([seed, significant(on["gspo"], 1, below=1e-12), significant(on["dapo"], 1, below=1e-12),
                 significant(off["gspo"], 2, below=1e-12), significant(off["dapo"], 2, below=1e-12)])
Table(["seed", "on policy: gspo", "on policy: dapo clip", "moved: gspo", "moved: dapo clip"], rows)

# %% [markdown]
# On policy the differences are zero (or a rounding residue below $10^{-12}$ for the
# sequence ratio, which exponentiates a mean). In the study's loop the "old" log-probs are
# the ones captured while sampling; rescoring reproduces them within the $2\times10^{-4}$
# check (about $10^{-5}$ measured), so there the first update's ratios are 1 to that
# precision rather than exactly (TRL detaches the current log-probs, which gives exactly 1). Once the log-probs have moved, `gspo`
# differs on every seed; `dapo`'s clip differs only when some positive-advantage token has
# a ratio between 1.2 and 1.28, which a random shift does not always produce. This is why
# the lock pre-registers a second regime with two updates per rollout set: in the
# `on_policy` regime the `gspo` arm is a replicate of `grpo`, and its difference from `grpo`
# measures run-to-run noise rather than a treatment.
#
# ## What dynamic sampling costs
#
# `dapo` keeps only groups whose rewards vary and draws fresh prompts until it has four,
# at most 10 generation batches per step. A group of $G$ Bernoulli($p$) rewards varies with
# probability $1 - p^G - (1-p)^G$, so prompts the policy almost always solves, or almost
# never does, are expensive. The study's real sampler runs here on a fake source whose
# prompts have the success rates given (no model), 200 steps of 4 prompts x 4 completions.

# %%
rows, costs = [], {}
for rates in ([0.5], [0.2, 0.5, 0.8], [0.05, 0.3, 0.9], [0.02, 0.05, 0.95], [0.01]):
    cost = demos.dynamic_sampling_cost(rates, steps=200)
    costs[", ".join(f"{r:g}" for r in rates)] = cost
    rows.append([", ".join(f"{r:g}" for r in rates), cost["plain_rollouts_per_step"],
                 cost["rollouts_per_step"], cost["discarded_per_step"], cost["failed_steps"]])
Table(["prompt success rates", "plain rollouts/step", "dapo rollouts/step",
       "discarded/step", "steps that failed (cap)"], rows, digits=1)

# %% [markdown]
# The same numbers as a picture: look at how the red part, rollouts generated only to be
# thrown away, grows as the prompts' success rates move towards 0 or 1.

# %%
show(family_plots.plot_dynamic_sampling_cost(costs))

# %% [markdown]
# Every discarded rollout was generated, so it costs generation time although it trains
# nothing. When almost no group varies, the cap is reached and the step fails closed
# (`DynamicSamplingExhausted`, naming the fix) instead of training on a short batch.
# `dapo`'s logged zero-variance fraction is 0 by construction, which is why the study's
# ZVF is not comparable across arms.
#
# ## Exercise
#
# Suppose every prompt has success rate $p = 0.1$ and $G = 4$. How many rollouts per step
# should dynamic sampling draw on average to collect 4 varied groups (ignore the cap and the
# fact that whole batches of 4 prompts are drawn)? Check with
# `demos.dynamic_sampling_cost([0.1])`.
#
# ```{admonition} Solution
# :class: dropdown
# A group varies with probability $q = 1 - 0.1^4 - 0.9^4 = 1 - 0.0001 - 0.6561 = 0.3438$.
# Collecting 4 varied groups takes on average $4/q \approx 11.6$ prompts, i.e.
# $4 \times 11.6 \approx 46.5$ rollouts instead of 16. Drawing whole batches of 4 prompts
# rounds this up to the next batch, so the sampler's mean is higher (about 55 below);
# the extra eligible groups of the last batch are discarded too.
# ```

# %%
cost = demos.dynamic_sampling_cost([0.1], steps=200)
print("rollouts per step:", round(cost["rollouts_per_step"], 1), "| discarded:",
      round(cost["discarded_per_step"], 1), "| failed steps:", cost["failed_steps"])
