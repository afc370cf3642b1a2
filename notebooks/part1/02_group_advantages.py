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
# # One group of four answers
#
# GRPO needs no learned critic. For each prompt it samples a *group* of G responses, scores
# each with the verifier, and judges every response only against its own group: the
# advantage is the reward minus the group mean, divided by the group's standard deviation
# plus a small constant $\delta$ (delta; the book keeps $\epsilon$ for the clip of chapter 3).
# This chapter builds one such group from a real model, computes
# its advantages, and applies one update to see which answers become more likely.
#
# **Invariant.** Every group has one prompt and G responses scored by the same verifier;
# advantages use the population standard deviation and $\delta = 10^{-8}$; a group whose
# rewards are all equal has advantages of exactly zero; sampling runs in eval mode.

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

import torch

from verifiable_grpo.task import data
from verifiable_grpo.part1 import demos
from verifiable_grpo.training import losses, objectives, rollout
from verifiable_grpo.book import widgets
from verifiable_grpo.core.config import load_config
from verifiable_grpo.book.notebook import Table, recorded_policy
from verifiable_grpo.task.statements import render_statement

config = load_config("tiny")     # the recorded policies are tiny-profile models (CPU is enough)
policy, tokenizer, meta = recorded_policy("warmstart", config)
print("policy: warm start of the recorded tiny run |",
      f"{sum(t.numel() for t in policy.parameters()):,} parameters")

# %% [markdown]
# ## A real group
#
# First the whole mechanism on one made-up group: one prompt, four sampled responses, the
# verifier's reward for each, the group's mean and standard deviation, and the advantage
# each response receives.
#
# ![A diagram of one group: a prompt, four sampled responses, two right answers with reward
# 1 and two wrong ones with reward 0; the group's mean 0.5 and population std 0.5; the
# advantages +1 for the right answers and -1 for the wrong ones. A group of four right (or
# four wrong) answers has std 0 and every advantage exactly 0: no
# signal.](../../book/images/group_advantages.png)
#
# *One group: four responses to one prompt, their rewards, the group's mean and std, and
# the advantage each response receives.*
#
# Now a group produced by a real model.
#
# The policy is the warm-start model of the recorded run: the same starting point GRPO
# uses. It answers training problems four times each at temperature 1 over its full
# vocabulary, with one seeded generator, problem after problem, until a group's rewards
# differ. Every constant group met on the way is counted: on a small model they are the
# common case, not the exception. The model, its tokenizer, the profile (token limits, KV
# cache) and the seeded generator travel together as one `rollout.Sampler`.

# %%
problems = data.generate_problem_set(config["data"]["seed"])
generator = torch.Generator().manual_seed(7)
sampler = rollout.Sampler(policy, tokenizer, config, generator)
constant = 0
for index, (problem, _) in enumerate(problems["train"]):
    example = {"document_id": f"train-{index}", "statement": render_statement(problem, 0),
               "problem": problem}
    group = rollout.sample_group(sampler, example, group_size=4, group_id=f"demo-{index}")
    if not group["zero_variance"]:
        break
    constant += 1
group = objectives.with_advantages(group, objectives.objective_from_config(config))  # Part I's rule
print(f"constant groups before the first informative one: {constant}")
print(example["statement"], "| expected:", group["responses"][0]["verifier"]["expected"])
Table(["response", "finish", "verdict", "reward", "advantage"],
      [[repr(r["text"]), r["finish_reason"],
        "correct" if r["verifier"]["reward"] else (r["verifier"]["reason"] or "wrong number"),
        r["verifier"]["reward"], a] for r, a in zip(group["responses"], group["advantages"])],
      digits=6)

# %% [markdown]
# ## The advantage, exactly
#
# For rewards $[1, 0, 1, 0]$ the mean is 0.5 and the population standard deviation is 0.5,
# so the advantages are $\pm 0.5 / (0.5 + 10^{-8})$: about $\pm 1$, but not exactly, and
# $\delta$ is the reason. Part III's labs, TRL and `torch.std` use the *sample* standard
# deviation instead (divide by $G-1$), which gives $\pm 0.866$ for the same group of four
# and $\pm 0.707$ for a group of two.

# %%
rows = []
for rewards in ([1.0, 0.0, 1.0, 0.0], [1.0, 0.0], [1.0, 0.0, 0.0, 0.0]):
    for correction in (0, 1):
        adv, mean, std = losses.group_advantages(torch.tensor([rewards], dtype=torch.float64),
                                                 correction=correction)
        rows.append([str(rewards), "population" if correction == 0 else "sample",
                     float(std[0, 0]), ", ".join(f"{a:+.10f}" for a in adv[0].tolist())])
Table(["rewards", "std", "std value", "advantages"], rows, digits=6)

# %% [markdown]
# ## Why the group mean is a valid baseline
#
# For one prompt $x$, the expected reward is $J(\theta) = \mathbb{E}_{y \sim \pi_\theta}[R(y)]$.
# Its gradient can be written without differentiating the reward, which is what makes a
# verifier usable at all (it is a function of text, not of $\theta$). Since
# $\nabla_\theta \pi_\theta(y) = \pi_\theta(y)\, \nabla_\theta \log \pi_\theta(y)$,
#
# $$\nabla_\theta J = \sum_y R(y)\, \nabla_\theta \pi_\theta(y)
#   = \mathbb{E}_{y \sim \pi_\theta}\big[R(y)\, \nabla_\theta \log \pi_\theta(y)\big].$$
#
# A **baseline** $b$ that does not depend on $y$ can be subtracted for free:
# $\mathbb{E}[b\, \nabla_\theta \log \pi_\theta(y)] = b\, \nabla_\theta \sum_y \pi_\theta(y)
# = b\, \nabla_\theta 1 = 0$. It changes the variance of the estimate, not its mean.
#
# The group mean is *almost* such a baseline. For response $i$ of a group of $G$ independent
# draws, $\bar r = \frac{1}{G}r_i + \frac{1}{G}\sum_{j \ne i} r_j$. The second part does not
# depend on $y_i$, so it is a valid baseline; the first part is the response's own reward.
# Writing $\bar r_{-i} = \frac{1}{G-1}\sum_{j \ne i} r_j$ for the **leave-one-out** mean,
#
# $$r_i - \bar r = \frac{G-1}{G}\,\big(r_i - \bar r_{-i}\big),$$
#
# so centring on the group mean is the unbiased leave-one-out estimator scaled by the
# constant $(G-1)/G$: the direction of the expected gradient is unchanged. Dividing by the
# group's standard deviation is another matter: the std depends on $r_i$ too, so the
# standardised advantage is no longer exactly unbiased, and it weights prompts unequally.
# A prompt the policy almost always solves (or almost always fails) has a small std, and its
# rare informative group is scaled up; this **difficulty bias** is one of the caveats that
# {ref}`the practical's specification <ref-practical>` (the assignment Part I follows)
# states, and the "no std" variants of Part II remove it. The check below
# verifies the identity on the group above.

# %%
r = torch.tensor([float(x["verifier"]["reward"]) for x in group["responses"]], dtype=torch.float64)
G = len(r)
leave_one_out = torch.stack([torch.cat([r[:i], r[i + 1:]]).mean() for i in range(G)])
print("r_i - group mean      :", [round(v, 6) for v in (r - r.mean()).tolist()])
print("(G-1)/G * (r_i - LOO) :", [round(v, 6) for v in ((G - 1) / G * (r - leave_one_out)).tolist()])
print("equal within 1e-15:", bool(((r - r.mean()) - (G - 1) / G * (r - leave_one_out)).abs().max() < 1e-15))

# %% [markdown]
# ## The group that says nothing
#
# When every response gets the same reward, every advantage is exactly zero: the group
# carries no reward gradient (only the KL term and the optimiser's own rules still act).
# The book never invents a winner for such a group; it counts them. On a small model most
# groups can look like this, which is why the GRPO chapter reports the zero-variance
# fraction at every iteration.

# %%
for rewards in ([0.0] * 4, [1.0] * 4, [0.3] * 8):
    adv, _, _ = losses.group_advantages(torch.tensor([rewards], dtype=torch.float32))
    print(rewards, "->", adv[0].tolist(), "| exactly zero:", bool((adv == 0).all()))

# %% [markdown]
# ## One update on this group
#
# The package's GRPO update (clipped surrogate plus 0.02 times the exact KL to a frozen
# copy) is applied once to a copy of the policy, at the tiny run's own learning rate
# (1e-5). The correct response, with the only positive advantage, should gain
# log-probability and the wrong ones should lose it. The gradient acts on tokens, not on
# whole answers, so a wrong answer that shares most of its tokens with the right one can
# move much less than one that does not (or even move slightly up).
#
# The log-probabilities are computed live, so the table rounds them to two decimals: after
# the update they differ in the fourth decimal from one CPU to another. Kernels that sum in
# another order change the last bits of the gradient, and the optimiser step carries that
# into every weight.

# %%
result = demos.update_on_one_group(policy, group, config, learning_rate=config["grpo"]["learning_rate"])
Table(["response", "advantage", "log p before", "log p after", "change"],
      [[repr(r["text"]), a, b, c, c - b] for r, a, b, c in
       zip(group["responses"], group["advantages"], result["before"], result["after"])],
      digits=[0, 4, 2, 2, 2])

# %% [markdown]
# ## Try it
#
# Edit the rewards of a group, switch between the population and the sample standard
# deviation, change $\delta$ (the package names this argument `epsilon`). Try a group of
# eight with one right answer, then one with seven: the lone outlier gets the large
# advantage. In the built book the widget below runs in your browser; the same computation
# as `losses.group_advantages`, checked against it.
#
# <div class="vg-live" data-widget="advantages" data-rewards="1, 0, 1, 0"><em>(A live
# widget appears here in the built book. In Jupyter or on Colab, run the next cell.)</em>
# </div>
# <script src="../../_static/vg-live.js"></script>

# %% tags=["remove-output"]
# NBVAL_IGNORE_OUTPUT
# In Jupyter or on Colab: the same widget, computed by the package in Python.
widgets.make_advantage_widget("1, 0, 1, 0")

# %% [markdown]
# ## Error to diagnose: dropout during sampling or scoring
#
# The behaviour log-probabilities captured while sampling must be reproducible when the
# same sequence is scored again. With dropout active, two scorings of the same tokens
# disagree, the ratio drifts from 1 for no reason, and the clip acts on noise. The sampler
# refuses a model in training mode; eval mode turns dropout off but does not turn off
# autograd, so updates still work.

# %%
ids = torch.tensor([group["responses"][0]["prompt_ids"] + group["responses"][0]["response_ids"]])
print("max |difference| between two scorings, dropout 0.1:",
      f"{demos.dropout_changes_scores(policy, ids, dropout=0.1):.3g}")
print("max |difference| between two scorings, eval mode:",
      demos.dropout_changes_scores(policy, ids, dropout=0.0))
policy.train()
try:
    fresh = rollout.Sampler(policy, tokenizer, config, torch.Generator().manual_seed(0))
    rollout.generate(fresh, group["prompt_ids"])
except ValueError as error:
    print("ValueError:", error)
_ = policy.eval()  # back to eval mode

# %% [markdown]
# ## Exercise: group advantages
#
# Write `my_group_advantages(rewards, delta)`: `rewards` is a float64 tensor `[P, G]`, one
# group per row; return $A = (r - \bar r) / (\sigma + \delta)$ per row, with the
# **population** standard deviation $\sigma$. A constant group must give exactly 0. The
# checker tries hand-computable groups, several groups at once, a tiny std where $\delta$
# matters, and constant groups, and names the usual mistakes (the sample std, one mean over
# the whole batch, a missing $\delta$).

# %%
def my_group_advantages(rewards, delta=1e-8):
    raise NotImplementedError("replace this line with your code")

# %%
from verifiable_grpo.exercises import check_group_advantages

result = check_group_advantages(my_group_advantages)

# %% [markdown]
# ```{admonition} Worked solution
# :class: dropdown
# The one subtle line is the constant group: the
# float mean of three rewards of 0.1 is not exactly 0.1, so the solution uses the common value.
# ```

# %% tags=["hide-input"]
def solution_group_advantages(rewards, delta=1e-8):
    mean = rewards.mean(dim=1, keepdim=True)
    constant = (rewards == rewards[:, :1]).all(dim=1, keepdim=True)
    mean = torch.where(constant, rewards[:, :1], mean)       # exact zeros for a constant group
    centred = rewards - mean
    std = centred.square().mean(dim=1, keepdim=True).sqrt()   # population std: divide by G
    return centred / (std + delta)

result = check_group_advantages(solution_group_advantages)
