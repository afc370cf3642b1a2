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
#
# %% [markdown]
# # Exercise: two group sizes
#
# How much does the size of a group matter? First with **constructed** rewards (numbers
# typed in, not produced by a model) to see what constant groups do; then by actually
# training G = 2 and G = 8 for 20 iterations from the same warm start on the same 80
# prompt presentations, with the same 40 updates, and evaluating both like the main
# policies.
#
# You will learn to predict, from a probability of success, how often a group carries no
# signal at all, why a prediction from one pooled probability misses, and what larger groups
# cost.
#
# **Invariant.** A constant group gives advantages and reward gradients of exactly zero;
# the verifier is not changed to make groups informative; the main run's weights, results
# and configuration are provably untouched by the exercise.

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

from verifiable_grpo.part1 import exercise
from verifiable_grpo.book import learning_plots, plots
from verifiable_grpo.core.config import load_config
from verifiable_grpo.book.notebook import Table, load_recorded, show

config = load_config("tiny")

# %% [markdown]
# ## Constructed groups (not model outputs)
#
# Every ratio is 1 here, as at the first update of a rollout set; only the rewards matter.

# %%
Table(["G", "rewards", "population std", "advantages", "surrogate loss", "all gradients zero"],
      [[g["group_size"], str([int(r) for r in g["rewards"]]), g["population_std"],
        ", ".join(f"{a:+.6f}" for a in g["advantages"]), g["surrogate_loss"], g["all_gradients_zero"]]
       for g in exercise.constructed_groups(config)], digits=6)

# %% [markdown]
# Why is the surrogate loss 0 even where the gradients are not? With every ratio 1, a
# group's loss is $-\frac{1}{G}\sum_g A_g$, and group-relative advantages sum to zero, so
# the value is 0 for every group. Its gradient is $-\frac{1}{G}\sum_g A_g \nabla\log\pi(y_g)$:
# each response is pushed by its own advantage, up for the right answers and down for the
# wrong ones, and those pushes do not cancel. Only a constant group, whose advantages are
# all 0, has no gradient at all. The loss value is not a progress signal in GRPO; the
# gradient is.

# %% [markdown]
# ## Your task
#
# 1. **Predict.** If each response to a prompt is correct with probability $p$,
#    independently, how often is a group of $G$ constant? Write
#    `my_constant_probability(p, G)`; the checker tests it.
# 2. **Predict from data.** The recorded G = 8 branch drew eight responses for each of its
#    prompts. From those groups alone, predict the share of constant groups that G = 2 and
#    G = 4 would see on the same prompts, before looking at what those runs measured. (Hint:
#    a group of 2 drawn from the same prompt is constant when a random pair of the 8
#    responses agrees.)
# 3. **Compare** with the zero-variance fractions the G = 2 branch and the first 20
#    iterations of the main G = 4 run measured, and explain the difference to the naive
#    formula with one pooled $p$.
# 4. **Read the outcome**: did the more informative groups change the test results?

# %%
def my_constant_probability(p, group_size):
    raise NotImplementedError("replace this line with your code")

# %%
from verifiable_grpo.exercises import check_constant_group_probability

result = check_constant_group_probability(my_constant_probability)

# %% [markdown]
# ```{admonition} Solution, step 1
# :class: dropdown
# All right or all wrong: $p^G + (1-p)^G$. Larger groups are less often silent, but each
# costs G generations. The hidden cell below checks it and tabulates it for three group sizes.
# ```

# %% tags=["hide-cell"]
def solution_constant_probability(p, group_size):
    return p ** group_size + (1 - p) ** group_size

result = check_constant_group_probability(solution_constant_probability)
Table(["p"] + [f"G={g}" for g in (2, 4, 8)],
      [[p] + [solution_constant_probability(p, g) for g in (2, 4, 8)] for p in (0.05, 0.1, 0.2, 0.3, 0.5)],
      digits=3)

# %% [markdown]
# Move $p$ and $G$ below: the left panel is the chance that a group is mixed (so it has
# signal), $1 - p^G - (1-p)^G$, for several group sizes; the right splits one group's
# outcomes into all wrong, $(1-p)^G$, mixed, and all right. The last row divides by the
# price: groups with signal per 100 sampled responses. A larger group is more often mixed,
# but not in proportion to what it costs.
#
# <div class="vg-live" data-widget="signal" data-p="0.2" data-g="4"><em>(A live widget
# appears here in the built book.)</em></div>
# <script src="../../_static/vg-live.js"></script>

# %% [markdown]
# ```{admonition} Solution, steps 2 and 3
# :class: dropdown
# A prompt's $p$ is unknown, and prompts differ, so one pooled $p$ is not enough: by
# convexity, $\mathbb{E}[p^G + (1-p)^G] \ge \bar p^G + (1-\bar p)^G$, and a mix of easy and
# hard prompts is *more* often silent than the pooled formula says. With $k$ correct
# responses among $n = 8$ drawn for one prompt, the chance that a random subset of $G$ of
# them is constant is $\big[\binom{k}{G} + \binom{n-k}{G}\big] / \binom{n}{G}$: an unbiased
# estimate of that prompt's $p^G + (1-p)^G$, with no assumption about how prompts differ.
# Averaged over the G = 8 groups it predicts the other branches' zero-variance fractions.
# The hidden cell below computes both predictions and sets them beside the measured
# fractions.
# ```

# %% tags=["hide-cell"]
from math import comb

g8_groups = [grp["rewards"] for h in load_recorded("learning/grpo-g8-continuous.json")["history"]
             for grp in h["groups"]]
pooled = sum(map(sum, g8_groups)) / sum(map(len, g8_groups))

def predicted_constant_share(groups, size):
    shares = []
    for rewards in groups:
        n, k = len(rewards), int(sum(rewards))
        shares.append((comb(k, size) + comb(n - k, size)) / comb(n, size))
    return sum(shares) / len(shares)

def measured_constant_share(history):
    return sum(h["zero_variance_fraction"] for h in history) / len(history)

measured = {2: measured_constant_share(load_recorded("learning/grpo-g2-continuous.json")["history"]),
            4: measured_constant_share(load_recorded("learning/grpo-continuous.json")["history"][:20]),
            8: measured_constant_share(load_recorded("learning/grpo-g8-continuous.json")["history"])}
print("pooled success rate of the G = 8 branch's responses:", round(pooled, 3))
Table(["G", "pooled-p formula", "predicted from the G=8 groups", "measured zero-variance fraction"],
      [[g, solution_constant_probability(pooled, g), predicted_constant_share(g8_groups, g), measured[g]]
       for g in (2, 4, 8)], digits=3)

# %% [markdown]
# ```{admonition} Solution, step 3: reading the table
# :class: dropdown
# The G = 8 row agrees by construction (the estimate of a group of 8 from itself). For
# G = 2 and G = 4 the prediction uses other draws than the ones each branch measured, and
# the branches' policies drift apart as they train: each measures its own draws, so a branch
# whose responses were right less often (the mean reward column of the table below) is
# more often silent than predicted. The pooled formula misses in a known direction, too few
# silent groups, because prompts differ in difficulty.
# ```

# %% [markdown]
# ## The trained branches (recorded tiny run)

# %%
summary = load_recorded("exercise/group-size.json")
main = load_recorded("learning/grpo-continuous.json")
records = {b: load_recorded(f"learning/{b}-continuous.json") for b in ("grpo-g2", "grpo-g8")}
rows = []
for branch, record in records.items():
    b = summary["budgets"][branch]
    history = record["history"]
    zero_variance = sum(h["zero_variance_fraction"] for h in history) / len(history)
    reward = sum(h["mean_reward"] for h in history) / len(history)
    rows.append([branch, b["iterations"], b["updates"], b["prompts"], b["rollouts"], reward,
                 zero_variance, b["seconds"]])
first20 = main["history"][:20]
rows.append(["grpo (G=4, first 20 of 100)", 20, 40, sum(len(h["document_ids"]) for h in first20),
             sum(len(g["rewards"]) for h in first20 for g in h["groups"]),
             sum(h["mean_reward"] for h in first20) / 20,
             sum(h["zero_variance_fraction"] for h in first20) / 20, None])
Table(["branch", "iterations", "updates", "prompt presentations", "rollouts", "mean reward",
       "zero-variance groups", "training s"], rows, digits=3)

# %% [markdown]
# Look at how fast each branch collects groups whose rewards differ (left), the only ones
# that move the weights, while the three branches' rewards (right) stay in the same range:
# the gap on the left comes from the size of the groups.

# %%
show(learning_plots.plot_group_size_branches(
    {"G = 2": records["grpo-g2"]["history"], "G = 4 (main run, first 20)": first20,
     "G = 8": records["grpo-g8"]["history"]}))

# %%
results = load_recorded("results.json")
exercise_results = load_recorded("exercise/results.json")
merged = {"policies": {**results["policies"], **exercise_results["policies"]}}
Table(plots.RESULTS_COLUMNS, plots.results_rows(merged), digits=3)

# %% [markdown]
# ```{admonition} Solution, step 4: reading the outcome
# :class: dropdown
# Group size did to the training signal what the formula predicts: G = 2 left most of its
# groups constant, G = 8 few of them (the table above). It did not, within 40 updates at
# this learning rate, change what the policies can do on the test set: both exercise
# branches sit within noise of the warm start they started from in the results table (the
# evaluation chapter's paired intervals show how wide that noise is). The informative groups
# were bought with rollouts and training time, in the proportions of the branch table.
# ```

# %% [markdown]
# **What this comparison is not.** The statement recorded with the run:

# %%
print(summary["limitation"])
print("same initial weights:", summary["same_initial_digest"], "| same prompt order:",
      summary["same_prompt_order"], "| presentations:", summary["prompt_presentations"])

# %% [markdown]
# ## Error to diagnose: a bonus to make the curve move
#
# When most groups are constant, the reward curve is flat and it is tempting to add a
# small bonus (for valid JSON, for a near miss) so that groups differ and the loss goes
# down. That would change the task being measured. The exercise keeps the verifier and
# records the null result; the protection check proves that the main artifacts and the
# verifier were the same bytes after the exercise as before.

# %%
protected = load_recorded("exercise/protected.json")
print("files protected:", len(protected["files"]) if "files" in protected else len(protected))
print("main artifacts unchanged:", summary["main_artifacts_unchanged"],
      "| verifier unchanged:", summary["verifier_unchanged"])
