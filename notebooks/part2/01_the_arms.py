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
# # Five arms, one registry
#
# The family study compares five variants ("arms") of the objective Part I trained with.
# In this package a variant is not a new training loop: it is one entry of the objectives
# registry, a frozen record of six choices (how rewards become advantages, at which level
# the importance ratio is taken, the clip interval, how per-token terms are summed into one
# loss, the KL term, and which sampler fills a batch). This chapter prints the entries,
# says what each arm changes relative to `grpo`, and shows what that does to the gradient
# every token receives.

# %% tags=["colab"]
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

from IPython.display import display

from verifiable_grpo.book.notebook import Table, show
from verifiable_grpo.part2 import demos
from verifiable_grpo.book import family_widgets
from verifiable_grpo.part2.lock import read_lock

head, rows = demos.arm_rows()
Table(head, rows)

# %% [markdown]
# ## What each arm changes
#
# The treatment lock of the study (chapter 3) records, for every arm, the registry fields
# in which it differs from `grpo`, and the TRL 1.16 settings that would run it. Two of the
# names deserve care. The study's `drgrpo` only drops the division by the group's
# standard deviation; the Dr. GRPO paper also drops the division by each response's
# length, which is TRL's `loss_type="dr_grpo"` (the registry's `dr_grpo` row). The study's
# `dapo` keeps the per-response token mean and adds a higher upper clip (0.28) and
# dynamic sampling; TRL's `loss_type="dapo"` is only the token-level reduction (the
# registry's `dapo_token` row).

# %%
lock, lock_sha = read_lock()  # configs/part2/lock.json
Table(["arm", "changes vs grpo", "TRL GRPOConfig", "needs a subclass for"],
      [[arm, ", ".join(entry["treatment_changes"]) or "(baseline)",
        ", ".join(f"{k}={v!r}" for k, v in entry["trl"]["config"].items()
                  if k in ("loss_type", "scale_rewards", "importance_sampling_level", "epsilon_high")),
        (entry["trl"]["subclass"] or "-").split(":")[0]]
       for arm, entry in lock["arms"].items()])

# %% [markdown]
# ## The weight of every token
#
# On policy the ratio is exactly 1, and the gradient of the loss with respect to the
# log-probability of token $t$ of response $i$ is a weight $w_{i,t}$: positive pushes the
# token up, negative down. With the per-response token mean ("grpo" aggregation) and $P$
# prompts of $G$ responses,
#
# $$w_{i,t} = \frac{\hat A_i}{P\,G\,|o_i|},$$
#
# so every response gets the same total weight $\hat A_i / (PG)$ however long it is, and a
# short response concentrates it on fewer tokens. A token sum divided by the batch's
# token count (`bnpo`, `dapo_token`) gives every token $\hat A_i / \sum_j |o_j|$ instead,
# and a long wrong answer collects more total push-down. The numbers below are autograd's,
# for one group with rewards $[1,0,1,0]$ and lengths $[3,5,2,7]$ tokens; `dr_grpo`
# divides by $G$ times a constant length, here 8.

# %%
weights = demos.token_weights([1, 0, 1, 0], [3, 5, 2, 7], max_length=8)
Table(["arm", "o1 (r=1, 3 tok)", "o2 (r=0, 5 tok)", "o3 (r=1, 2 tok)", "o4 (r=0, 7 tok)"],
      [[name] + w for name, w in weights.items()], digits=6)

# %% [markdown]
# `grpo`, `dapo`, `gspo` and `aero` share one row: on a mixed group of four, on policy,
# they are the same objective. Their differences live elsewhere: in the ratio once the
# policy has moved (chapter 2), in which groups are sampled and kept, and in the
# advantage of a group that keeps a single rollout (`aero`).
#
# ## Try it
#
# Set the rewards and lengths of a group. The figure below is the static version for the
# group above; the widget under it redraws when a kernel runs it (in the static book its
# controls do nothing).

# %%
display(show(family_widgets.plot_token_weights([1, 0, 1, 0], [3, 5, 2, 7])))

# %%
# NBVAL_IGNORE_OUTPUT
# (the widget's saved state embeds a rendered PNG; the figure above is the checked fallback)
family_widgets.make_token_weight_widget()

# %% [markdown]
# ## Exercise
#
# A group has rewards $[1, 0, 0, 0]$ and lengths $[4, 4, 4, 4]$. Predict the per-token
# weight of the correct response under `grpo` and under `drgrpo`, then check with
# `demos.token_weights([1, 0, 0, 0], [4, 4, 4, 4])`.
#
# ```{admonition} Solution
# :class: dropdown
# The mean is 0.25. `drgrpo` uses $\hat A = r - \bar r = 0.75$ for the correct response and
# $-0.25$ for the others; `grpo` divides by the sample standard deviation
# $\sqrt{(0.75^2 + 3 \cdot 0.25^2)/3} = 0.5$ plus $10^{-4}$, giving $\hat A \approx 1.4997$
# and $-0.4999$. Each token's weight is $\hat A / (G |o|) = \hat A / 16$: about $0.0937$
# (`grpo`) and $0.0469$ (`drgrpo`) for the correct response's tokens. Removing the std
# halves the push on this group; on a group with rewards $[1,0,1,0]$ (std 0.577) it
# multiplies it by 0.577. Which groups get more weight relative to others, not only the
# overall scale, is what the `drgrpo` arm changes.
# ```

# %%
weights = demos.token_weights([1, 0, 0, 0], [4, 4, 4, 4], names=("grpo", "drgrpo"))
Table(["arm", "correct", "wrong"], [[k, v[0], v[1]] for k, v in weights.items()], digits=6)
