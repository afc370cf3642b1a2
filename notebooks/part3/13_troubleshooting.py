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
# # Troubleshooting: from a symptom to a test
#
# A post-training run rarely fails with an error message. It fails quietly: the reward
# stops moving, or climbs while the outputs get worse, or the model stops ending its
# turns. This chapter collects the failures that Part III showed happening, on recorded
# runs, into one diagnostic table. The post-training module ends with such a table
# ({ref}`the post-training module <ref-module>`); ours is tied to the places in this book where
# you saw each failure.
#
# **What you will learn.**
# - Six symptoms, the usual causes of each, and the first measurement that tells them apart.
# - Where in Parts I-III each one appeared, with the recorded numbers (read from
#   `data/recorded/part3/`, not copied).
# - How to check one diagnosis quantitatively: does the zero-variance fraction of a GRPO
#   run match what its success rate predicts?
#
# A symptom has several possible causes, and a diagnosis is a hypothesis. Confirm it by
# changing one thing (an ablation) or by reading outputs, before acting on it.

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

from verifiable_grpo.book import lab_plots
from verifiable_grpo.book.notebook import Table, show
from verifiable_grpo.part3 import labs, troubleshooting as ts
from verifiable_grpo.part3.expert_iteration_lab.group_relative import mixed_group_probability

rows = ts.diagnostic_rows()

# %% [markdown]
# ## The table

# %%
Table(["symptom", "likely causes", "first diagnostic"],
      [[r["symptom"], r["causes"], r["diagnostic"]] for r in rows])

# %% [markdown]
# ## Where you saw each one
#
# | symptom | chapter |
# |---|---|
# | flat reward, no learning | {doc}`05_expert_iteration_vs_grpo` (GRPO's zero-variance groups); see also {doc}`../part1/09_group_size_exercise` for the group size |
# | KL grows while the task does not improve | {doc}`04_dpo` (off-policy pairs); {doc}`05_expert_iteration_vs_grpo` for $\beta$ |
# | length drifts | {doc}`04_dpo` (shorter) and {doc}`05_expert_iteration_vs_grpo` (longer) |
# | reward hacking | {doc}`03_reward_model` (best-of-n) and {doc}`05_expert_iteration_vs_grpo` (the substring checker) |
# | format failures | {doc}`01_masked_sft` (stop rate before and after SFT); {doc}`../part1/01_task_and_verifier` for a strict format checker |
# | preferred answers become less likely | {doc}`04_dpo` (chosen log-ratio) |
#
# The recorded evidence, read from the runs now:

# %%
for r in rows:
    print(f"{r['symptom']}:\n    {r['evidence']}")

# %% [markdown]
# Each line is a failure that a single headline number hid. Off-policy DPO reached
# perfect pair accuracy while its task accuracy fell to 0.229 (0.874 with on-policy
# pairs). The substring checker reported almost 98 % acceptance at 78 % exact answers.
# Before SFT, 62 % of the model's turns stopped, yet none of its answers was exact. In each case the fix started
# with logging a second number next to the first.
#
# ## Reading the symptoms in more detail
#
# **Flat reward.** GRPO learns only from groups whose responses score differently. If
# every response to a prompt fails (too hard) or succeeds (too easy, or already learned),
# all advantages are zero and only the KL term acts. Late in Lab 5 this is success, not
# failure: the policy has learned most prompts. Early in a run it means the task is out of
# reach at this group size. Part I's evaluation and group-size exercise show the same
# arithmetic on a real model.
#
# **KL growth.** A rising KL says the policy moved; it says nothing about whether the
# move helped. Always plot it next to a task metric measured on held-out prompts. A KL that grows with a flat
# task metric means the objective rewards something other than the task.
#
# **Length drift.** Averaging the loss per token, or a checker that accepts extra
# characters, makes length part of what is optimised. Lab 4's off-policy DPO made answers shorter;
# Lab 5's substring checker made them longer, because a longer string is more likely to
# contain the right digits.
#
# **Reward hacking.** Any reward that is not the task itself can be satisfied in ways
# the task does not accept. The defence is an independent check on a sample of
# high-reward outputs: an exact checker, a different judge, or a person. The fault-tree
# exercise of this part shows a structural reward scoring a useless reply 1.000.
#
# **Format failures.** A template mismatch between training and serving, untrained
# end-of-turn rows, or a loss on the wrong tokens show up as runs that never stop or as
# answers wrapped in the wrong markup. Render one conversation to token ids and compare
# it with training, and measure stopping separately from correctness.
#
# **Preferred answers less likely.** DPO's loss depends on the *difference* of two
# log-ratios; it can be minimised by pushing the rejected answer down faster than the
# chosen one. Log both ratios.
#
# ## Checking a diagnosis with numbers
#
# If the zero-variance groups of a GRPO run come from a high success rate, their
# fraction should match what that rate predicts: a group of $G$ independent tries at
# success rate $p$ is all-correct or all-wrong with probability $p^G + (1-p)^G$. Lab 5's
# $\beta = 0.04$ run, at its last logged iteration:

# %%
run = next(r for r in labs.recorded("expert-iteration")["metrics"]["grpo"]
           if r["beta"] == 0.04 and not r["substring"])
last = run["records"][-1]
predicted = 1 - mixed_group_probability(last["sampled_reward"], 8)
print(f"batch success rate {last['sampled_reward']:.3f} -> predicted zero-variance fraction "
      f"{predicted:.3f}; observed {last['zero_variance']:.3f} ({round(last['zero_variance'] * 32)} of 32 groups)")

# %% [markdown]
# The same check at every logged iteration of two runs of the lab: look at how closely each
# observed fraction (solid) follows its prediction from the batch's success rate (dashed).

# %%
healthy = [r for r in labs.recorded("expert-iteration")["metrics"]["grpo"] if not r["substring"]]
show(lab_plots.plot_zero_variance_check({f"β = {r['beta']:g}": r["records"] for r in healthy}, 8))

# %% [markdown]
# The prediction and the observation agree within the noise of one batch of 32 groups
# (one group is 0.031). So the flat reward late in this run is explained by success. If
# the observed fraction had been much higher than predicted at a low success rate, the
# cause would be elsewhere. Some prompts would then be solved every time while the rest
# are never solved, and the remedy would be different data, not more training.
#
# ## Exercises
#
# **1. (which symptom?)** A run's log shows the reward rising from 0.4 to 0.9 over 200
# steps, KL rising steadily to 3 nats, mean length doubling, and held-out exact accuracy
# unchanged. Which rows of the table apply, and what do you look at first?
#
# ```{admonition} Worked solution 1
# :class: dropdown
# Reward hacking (reward up, held-out accuracy flat), with its usual companions: length
# drift and KL growth. First read a sample of the highest-reward outputs next to an exact
# check of each, as Lab 5 did with its "accepted but wrong" samples. The KL and the length
# confirm that the policy moved a long way; only the samples say in which direction.
# ```
#
# **2. (a prediction for the substring run)** Compute the zero-variance fraction that the
# substring run's last batch success rate predicts, and compare it with the recorded one.
#
# ```{admonition} Worked solution 2
# :class: dropdown
# The cell below does it: 0.75 predicted, 0.78 observed, close again. The groups go
# flat because the lenient checker accepts almost everything. This shows the limit of this check. It tells you why the reward
# stopped moving. It cannot tell you that the reward is wrong; only the exact accuracy
# (0.778) shows that.
# ```

# %%
flawed = next(r for r in labs.recorded("expert-iteration")["metrics"]["grpo"] if r["substring"])
end = flawed["records"][-1]
print(f"predicted {1 - mixed_group_probability(end['sampled_reward'], 8):.3f}, "
      f"observed {end['zero_variance']:.3f}, exact accuracy {end['accuracy']:.3f}")
