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
# # Model merging: soups, task arithmetic, TIES and DARE
#
# Two fine-tunes of one base model each learned something. Can their weights be
# combined into one model that does both, without training again? Surprisingly often,
# yes, and sometimes not at all. This chapter runs the common recipes for real on two
# fine-tunes of Part III's GRU digit policy. The post-training module surveys the same
# recipes ({ref}`the post-training module <ref-module>`).
#
# **What you will learn.**
# - What a weight soup, a task vector and task arithmetic are, and why a soup of
#   fine-tunes of one base is task arithmetic at scale $1/k$.
# - How TIES resolves conflicting task vectors (trim, elect a sign, average the agreeing
#   entries) and how DARE drops most of a task vector and rescales the rest.
# - Why two LoRA adapters must be merged as products $B A$, not by averaging their
#   factors, shown with a 2 × 2 example.
# - That every merge is a new model, to be evaluated like one.
#
# The fine-tunes and merges were run by `python -m verifiable_grpo lab merging` (about a
# minute on one CPU thread) and recorded in `data/recorded/part3/merging.json`; the
# chapter reads that record. The small examples are computed live.

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

from verifiable_grpo.book import lab_plots
from verifiable_grpo.book.notebook import Table, show
from verifiable_grpo.part3 import labs
from verifiable_grpo.part3.merge_lab import merging

lab = labs.recorded("merging")["metrics"]

# %% [markdown]
# ## Two fine-tunes of one base
#
# The base is Lab 4's reference policy: a 24,043-parameter GRU that answers "a + b" for
# digits a and b, trained on noisy answers, so it gives the exact answer a probability
# of about 0.47. From it we make two fine-tunes, each 100 steps of SFT on exact answers:
# **A** sees only prompts with $a \le 4$, **B** only prompts with $a \ge 5$. Each model is
# scored by the probability it gives the exact answer (digits, then end of sequence),
# averaged over each half of the 100 prompts.

# %%
columns = list(next(iter(lab["rows"].values())))
Table(["model"] + columns, [[name] + [s[c] for c in columns] for name, s in lab["rows"].items()],
      digits=3)

# %% [markdown]
# The same rows drawn: look at how each fine-tune has one long bar and one short one, and
# which merges keep both bars long.

# %%
show(lab_plots.plot_scores_by_model(lab["rows"], columns[:2]))

# %% [markdown]
# Each fine-tune masters its own half (0.99) and gets *worse* than the base on the
# other half (0.41 and 0.38). Shared weights mean learning one half partly overwrites
# the other. That is the situation merging is meant for.
#
# ## Soups and task arithmetic
#
# A **weight soup** averages the models' weights. Averaging only makes sense when the
# models sit in one basin of the loss, which is usually true of fine-tunes of one base
# and usually false of independently trained networks. (Hidden units can be permuted
# without changing the function, so two separate trainings rarely line up.)
#
# A **task vector** is what fine-tuning added: $\tau = \theta_{\text{fine-tuned}} -
# \theta_{\text{base}}$. **Task arithmetic** adds scaled task vectors to the base,
# $\theta = \theta_{\text{base}} + \lambda \sum_i \tau_i$. A uniform soup of $k$ fine-tunes
# of one base is exactly task arithmetic with $\lambda = 1/k$. The soup above is the
# $\lambda = 0.5$ row of this sweep:

# %%
Table(["λ"] + columns, [[r["scale"]] + [r[c] for c in columns] for r in lab["scale_sweep"]], digits=3)

# %% [markdown]
# Too small a scale leaves each half under-trained; the full sum ($\lambda = 1$)
# overshoots, because the two vectors overlap and their shared part is counted twice.
# How much do they overlap? Their cosine similarity:

# %%
print(f"cosine(τ_A, τ_B) = {lab['cosine']:.2f}")

# %% [markdown]
# Clearly positive: part of what each fine-tune learned is common (emitting exact sums
# and ending them), and part is specific to its half. For models this small the two
# tasks compete for the same weights; the larger the model, the more room each
# fine-tune's change has, and the better merges tend to work.
#
# ## TIES: trim, elect, merge
#
# TIES targets two problems of plain addition: many small entries of a task vector are
# noise, and where vectors disagree in sign they cancel. It keeps only the largest
# `density` fraction of each task vector, elects for each entry the sign of the trimmed
# sum, and averages only the entries that agree with it. On three toy vectors:

# %%
toy = [{"w": torch.tensor(v)} for v in ([1.0, -2.0, 0.5], [3.0, 1.0, -0.5], [-1.0, -2.0, 0.0])]
zero = {"w": torch.zeros(3)}
print("task arithmetic (sum):", merging.task_arithmetic(zero, toy)["w"].tolist())
print("TIES (density 1):     ", merging.ties(zero, toy, density=1.0)["w"].tolist())

# %% [markdown]
# In entry 0 the sum is $1 + 3 - 1 = 3$, while TIES averages the two agreeing values to 2. In
# entry 2, two vectors cancel exactly and TIES keeps nothing. On the digit policy, TIES at
# density 0.2 (the first table) scores about 0.8 on both halves (0.816 and 0.795). It is
# more balanced than the full sum, though below the plain average. A recipe that helps on
# large models is not guaranteed to help on this one.
#
# ## DARE: drop and rescale
#
# DARE sets each entry of a task vector to zero with probability $p$ and multiplies the
# survivors by $1/(1-p)$, so the vector is unchanged *on average*. On large language
# models, fine-tuning deltas are small and redundant, and a large $p$ (0.9 and more) often
# costs little. Here the delta is neither small nor redundant:

# %%
for drop, share in lab["dare_sparsity"].items():
    print(f"drop {drop}: {share:.0%} of τ_A's entries are now zero")

# %% [markdown]
# and the DARE rows of the first table fall below the base at $p = 0.9$. The rescaled
# survivors are right on average but wrong in every individual weight, and a
# 24k-parameter network has no redundancy to absorb that. Check, on your model, that a
# merge recipe's assumptions hold before relying on it.
#
# ## LoRA adapters merge as products
#
# An adapter's update to a weight matrix is the product $\Delta W = B A$. Two adapters
# trained separately share no coordinates: rank direction 1 of one has nothing to do
# with rank direction 1 of the other. Averaging their $A$s and $B$s separately therefore
# builds a product that neither adapter learned. Take two rank-1 adapters on a 2 × 2
# layer, one that learned $\Delta W_1 = e_1 e_1^\top$ and one that learned $\Delta W_2 = e_2 e_2^\top$:

# %%
example = merging.adapter_merge_example()
print("average of the products (B1 A1 + B2 A2) / 2:\n", example["average_of_products"])
print("product of the averages  ((B1 + B2) / 2) ((A1 + A2) / 2):\n", example["product_of_averages"])

# %% [markdown]
# The right merge is $0.5\,I$; averaging the factors gives a matrix of 0.25s. It
# changes the off-diagonal entries that neither adapter touched. To keep a merged model as
# an adapter, stack the factors instead. $B = [w_1 B_1,\ w_2 B_2]$ and $A = [A_1; A_2]$
# give exactly $w_1 B_1 A_1 + w_2 B_2 A_2$, at rank $r_1 + r_2$:

# %%
e1, e2 = torch.tensor([[1.0], [0.0]]), torch.tensor([[0.0], [1.0]])
b, a = merging.stack_adapters([(e1, e1.T), (e2, e2.T)], [0.5, 0.5])
print("stacked rank:", a.shape[0], "| B A =", (b @ a).tolist())

# %% [markdown]
# Or merge each scaled product into the floating-point base weights, as Lab 2 does, and
# quantise only afterwards. Whatever the route, a merged model is a new model: run the
# whole evaluation again and record its hash.
#
# ## Exercises
#
# **1. (weighted soup)** The soup gives each fine-tune weight 0.5. Find the weight $w$
# on A (and $1 - w$ on B) that maximises the score on all 100 prompts, among 0.3, 0.4,
# 0.5, 0.6 and 0.7.
#
# ```{admonition} Worked solution 1
# :class: dropdown
# The cell below shows the five recorded soups. The score on all 100 prompts peaks at
# 0.5 (0.894, with 0.892 at 0.4), and the halves trade off against each other as $w$ moves. With two
# symmetric tasks, the equal weight is a sensible default; an asymmetric weight only pays
# when one task matters more.
# ```

# %%
Table(["w on A"] + columns, [[r["weight_on_a"]] + [r[c] for c in columns] for r in lab["soup_weights"]],
      digits=3)

# %% [markdown]
# **2. (why not average the factors?)** Two adapters happen to have $B_2 = B_1$ and
# $A_2 = A_1$ (two runs that converged to the same factors). Does averaging the
# factors then give the right merge?
#
# ```{admonition} Worked solution 2
# :class: dropdown
# Yes: the averages are $B_1$ and $A_1$, and their product is $B_1 A_1$, which is the
# average of the two equal products. Factor averaging is right only when the factors
# already line up, which is exactly what separately trained adapters cannot promise:
# $B A = (B Q)(Q^{-1} A)$ for any invertible $Q$, so the factors are not unique.
# ```
