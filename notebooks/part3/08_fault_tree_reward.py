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
# # Exercise: a reward for fault trees, gamed and repaired
#
# A course module on LLM post-training ({ref}`the post-training module <ref-module>`)
# closes with an exercise in reward design. A model is asked to
# write a fault tree for a pump system as JSON. A program scores the tree without knowing
# the right answer. Such a structural reward is cheap and verifiable. It is also exactly
# what an optimiser will exploit. This chapter states the exercise in our words, runs the
# two rewards on five replies, and works through the repair.
#
# **What you will learn.** How to write a reward that checks structure without knowing
# the answer, how an optimiser would game it, and how to repair it so that the degenerate
# reply scores low while a genuine one keeps its score.
#
# **What is measured.** The initial and the revised reward for five replies: a gamed tree,
# a genuine two-gate tree, text that is not JSON, an empty tree, and a tree with a cycle.
# The results are read from `data/recorded/part3/fault-tree.json` and recomputed live
# below. The computation involves no randomness and no floating-point kernels, so the
# values are exact.

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
import json

from verifiable_grpo.book import lab_plots
from verifiable_grpo.book.notebook import Table, show
from verifiable_grpo.part3 import labs
from verifiable_grpo.part3.fault_tree_lab import fault_tree as ft

print(labs.record_line("fault-tree"))

# %% [markdown]
# ## The exercise, in our words
#
# A fault tree explains how a top event (say, "loss of pumping") can happen. Gates combine
# causes. An **AND** gate fires when all its children fire, an **OR** gate when any one
# does. The leaves are **basic events**, each with a probability and a label. The reply
# must be a JSON object: `top` names the top event, and `events` maps every event name
# either to a gate `{"type": "gate", "gate": "AND"|"OR", "children": [...]}` or to a
# basic event `{"type": "basic", "p": number, "label": text}`. The system has four
# components: pump, valve, seal and motor.
#
# *Task.* (a) Design a reward in $[0, 1]$ that a program can compute from the reply
# alone. (b) Find a reply that scores full marks on the first reward without being a
# useful tree. (c) Change the reward so that this reply loses and a genuine tree keeps
# full marks, and explain every term. Malformed replies must score 0 and must not crash
# the checker.
#
# ## The first reward: seven structural checks
#
# A parse step rejects anything that is not a well-formed tree. That covers text that is
# not JSON, missing keys, wrong types, unknown event kinds, and **cycles**. A cycle is
# searched from every event, including parts not connected to the top. The reward is then
# the fraction of these checks that pass:

# %%
for i, name in enumerate(ft.CHECKS, 1):
    print(i, name)

# %% [markdown]
# Check 4 always passes once parsing succeeded: a cycle has already made the reply
# malformed. The published lab keeps it as a placeholder, and so do we, so that the fractions
# match its own.

# %%
replies = ft.fixtures()
print("the gamed reply:", replies["degenerate"])
Table(["reply", "initial reward", "revised reward"],
      [[name, ft.initial_reward(ft.COMPONENTS, r), ft.revised_reward(ft.COMPONENTS, r)]
       for name, r in replies.items()], digits=3)

# %% [markdown]
# The gamed reply is one OR gate whose two "children" are the same basic event. That
# event's label lists every component name. It passes all seven checks. Check 2 counts
# children, not *distinct* children. Check 7 looks for each component name anywhere in
# any label.
#
# ## The repair
#
# The revised reward changes three things.
#
# - Check 2 now requires at least two **distinct** children and no duplicates.
# - 40% of the reward is **coverage**: the share of components that have their own basic
#   event with an explicit `"component"` field. A word inside a label no longer counts.
# - A **penalty** of 0.2 applies when there are fewer basic events than components.
#
# The reward is $\max(0,\; 0.6 \cdot \text{checks passed}/7 + 0.4 \cdot \text{coverage} - \text{penalty})$.
#
# For the gamed reply: 6 of 7 checks pass (check 2 now fails), coverage is 0 (no
# `component` fields), and the penalty applies (1 basic event, 4 components). That gives
# $0.6 \cdot 6/7 - 0.2 = 0.314$. The genuine tree, OR(AND(pump, valve), seal, motor) with
# one basic event per component, keeps 1.000:

# %%
recorded = labs.recorded("fault-tree")["metrics"]
live = ft.run_exercise()
print("recorded == recomputed:", recorded == live)
print(f"gamed: 0.6 * 6/7 - 0.2 = {0.6 * 6 / 7 - 0.2:.3f} | revised reward {live['revised']['degenerate']:.3f}")
assert live["revised"]["degenerate"] < live["revised"]["two_gate"] and live["revised"]["cycle"] == 0

# %% [markdown]
# The recorded rewards drawn: look at the gamed reply (`degenerate`), which the initial reward
# scores as high as the honest two-gate tree and the revised reward sets apart.

# %%
show(lab_plots.plot_reward_by_reply({reply: (recorded["initial"][reply], recorded["revised"][reply])
                                     for reply in recorded["initial"]}))

# %% [markdown]
# ## What the repair does not fix
#
# The revised reward still checks *form*, not *truth*. A tree with the right shape, the
# four component names and made-up probabilities scores 1.000. Nothing checks that an
# AND gate is the right gate, or that $p = 0.01$ is a plausible failure rate. A verifier
# teaches exactly what it accepts: the same lesson as Lab 5's substring checker.

# %% [markdown]
# ## Exercise with a checker: the probability of the top event
#
# A fault tree is also a calculation. Write `my_top_probability(top, events)` for a tree
# in this chapter's format whose basic events fail independently, each with its `"p"`: an
# AND gate fails with the product of its children's probabilities, an OR gate with
# $1 - \prod(1 - p)$. Return the top event's probability. The checker includes the
# chapter's genuine tree; a worked solution is hidden below.

# %%
def my_top_probability(top, events):
    raise NotImplementedError("replace this line with your code")

# %%
from verifiable_grpo.exercises import check_top_event_probability

result = check_top_event_probability(my_top_probability)

# %% [markdown]
# ```{admonition} Worked solution
# :class: dropdown
# Recurse from the top. Adding an OR gate's probabilities counts coinciding failures
# twice; for the genuine tree, with small probabilities, the sum is close but not equal.
# ```

# %% tags=["hide-input"]
import math


def solution_top_probability(top, events):
    event = events[top]
    if event["type"] == "basic":
        return event["p"]
    kids = [solution_top_probability(k, events) for k in event["children"]]
    if event["gate"] == "AND":
        return math.prod(kids)
    return 1 - math.prod(1 - p for p in kids)


result = check_top_event_probability(solution_top_probability)

# %% [markdown]
# ## Exercises
#
# **1. (measured)** Build a reply that scores 1.000 on the *revised* reward but puts
# every component under a single OR gate with made-up probabilities. Does the revised
# reward tell it apart from the genuine tree?
#
# ```{admonition} Solution
# :class: dropdown
# It does not. Four basic events, each with a `component` field, under one OR gate:
# all checks pass, coverage is 1 and there is no penalty. The cell below scores it 1.000,
# the same as the genuine two-gate tree. Telling them apart would need knowledge of the
# system (which failures must coincide), not more structure checks.
# ```

# %%
flat = {"top": "TOP", "events": {"TOP": {"type": "gate", "gate": "OR",
                                         "children": [f"B{i}" for i in range(4)]}}}
for i, component in enumerate(ft.COMPONENTS):
    flat["events"][f"B{i}"] = {"type": "basic", "p": 0.5, "component": component, "label": component}
print(f"flat OR tree, revised reward: {ft.revised_reward(ft.COMPONENTS, json.dumps(flat)):.3f}")

# %% [markdown]
# **2. (by hand)** A reply has the genuine tree's structure, but its seal event carries
# `"p": 1.5`. What do the two rewards give?
#
# ```{admonition} Solution
# :class: dropdown
# Only check 6 fails, so the initial reward is 6/7 = 0.857. The revised reward is
# $0.6 \cdot 6/7 + 0.4 \cdot 1 - 0 = 0.914$: coverage and the number of basic events are
# unaffected. An impossible probability costs less than a missing component. Whether
# that ordering is right is a design decision, and it should be stated, not inherited.
# The cell below checks both values.
# ```

# %%
tree = json.loads(replies["two_gate"])
tree["events"]["B3"]["p"] = 1.5
text = json.dumps(tree)
print(f"initial {ft.initial_reward(ft.COMPONENTS, text):.3f} | revised {ft.revised_reward(ft.COMPONENTS, text):.3f}")
