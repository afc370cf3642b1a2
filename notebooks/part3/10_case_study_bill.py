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
# # The running case study and its bill
#
# The post-training module ({ref}`cited here <ref-module>`) follows one
# hypothetical project from start to finish: an assistant that drafts safety-case
# arguments (claims, strategies and evidence links, as JSON) for a pressure-relief system,
# on the 9.55B model of the previous chapter. Nothing here was trained by anyone; it is a
# worked plan. What this chapter adds is that every number of the plan is recomputed by
# the package, so that you can change an assumption and see what moves.
#
# **What you will learn.**
# - How a serving workload (prompt, output, requests per day) shapes a training plan.
# - What the SFT and GRPO plans cost in tokens, GPU-hours and dollars, stage by stage,
#   and which assumptions carry the bill.
# - How a composite reward with a term that only some briefs have (preservation of
#   content in edits) caps the others at 0.8, and when that matters for GRPO.
# - How much memory the merged model needs to serve, and why the storage rule matters.
#
# The published text prints its results (about USD 7.50 for SFT, 58 for a GRPO trial, 200 for
# three trials of each, 5.53 GB to serve) but not every assumption behind them. Ours are
# in `verifiable_grpo.part3.case_study` and in a table below; with them the figures agree.

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

import matplotlib

matplotlib.use("Agg")
import torch

from verifiable_grpo.book import case_study_widgets as cw
from verifiable_grpo.book import cost_plots
from verifiable_grpo.book.notebook import Table, show
from verifiable_grpo.models import accounting as acc
from verifiable_grpo.part3 import case_study as cs
from verifiable_grpo.training.losses import group_advantages

MODEL, WORK, SFT, GRPO, PRICES = acc.CASE_STUDY, cs.Workload(), cs.SftPlan(), cs.GrpoPlan(), cs.Prices()

# %% [markdown]
# ## The workload
#
# Each request carries a long stable prefix (system prompt, JSON schema, reference
# material) and a shorter request-specific part, and the answer can be long. Requests
# arrive every day, so whatever the model costs per token is paid again and again:

# %%
daily = WORK.requests_per_day * (WORK.prompt_tokens + WORK.output_tokens)
Table(["quantity", "value"],
      [["prompt tokens (stable + request)", f"{WORK.stable_prompt_tokens:,} + {WORK.request_tokens:,}"],
       ["output tokens (at most)", f"{WORK.output_tokens:,}"],
       ["requests per day", f"{WORK.requests_per_day:,}"],
       ["tokens per day (prompt + output)", f"{daily:,}"],
       ["share of prompt tokens that repeat", f"{WORK.stable_prompt_tokens / WORK.prompt_tokens:.0%}"]])

# %% [markdown]
# Three quarters of every prompt is the same text. A server that caches that prefix
# avoids recomputing most prompt tokens. Training, by contrast, sees the whole sequence:
# the plans below are sized on full prompt-plus-answer sequences.
#
# The published case study starts from a base model that went through continued pretraining on domain
# text (1.8B domain tokens with 0.2B of general "replay" tokens mixed in, so 10 % replay).
# A base model has never seen the chat template in use, so SFT must teach the
# conversation format as well as the task. This is Lab 1's lesson about untrained template rows,
# at scale.
#
# ## The SFT plan
#
# LoRA at rank 64 with $\alpha = 128$ on all seven projections of every layer, learning
# rate $10^{-4}$ with 3 % warmup and cosine decay, two epochs over 50M tokens packed into
# 8,192-token rows, about a third of them general instruction data. The numbers that follow from it:

# %%
trainable = acc.lora_parameters(MODEL, SFT.rank)
rows_per_epoch = -(-int(SFT.tokens) // SFT.pack_length)
sft_setup = acc.TrainingSetup(method="lora", lora_rank=SFT.rank, sequence_length=SFT.pack_length)
Table(["SFT quantity", "value"],
      [["adapter parameters", f"{trainable:,} ({trainable / MODEL.parameters():.2%} of the model)"],
       ["scale α/r", acc.lora_scale(SFT.alpha, SFT.rank)],
       ["packed rows per epoch", f"{rows_per_epoch:,}"],
       ["general-data tokens per epoch", f"{SFT.tokens * SFT.general_share / 1e6:.1f} M"],
       ["training tokens (both epochs)", f"{SFT.epochs * SFT.tokens / 1e6:.0f} M"],
       ["memory per 8,192-token row (LoRA, bf16 base)", f"{acc.memory_rows(MODEL, sft_setup)[-1][1] / 1e9:.2f} GB"]])

# %% [markdown]
# One row fits on one 80 GB accelerator with the base kept in bf16; QLoRA is not needed.
# Before any RL, the SFT model has to beat the prompted instruct release on the
# evaluation suite (paired comparisons, per category, with a stated tolerance on general
# ability), as in the evaluation chapter. If it does not, the next step is better data,
# not a more complex training stage.
#
# ## The GRPO plan
#
# 3,000 prompts, two sampling passes over them, a group of 8 responses per prompt, one
# update per batch of rollouts, $\beta = 0.04$, and the SFT policy as the frozen
# reference. (If the RL update is a second adapter, switching adapters off must give
# back the SFT model, not the base model.)

# %%
Table(["GRPO quantity", "value"],
      [["responses generated", f"{GRPO.responses():,}"],
       ["generated tokens (at most)", f"{GRPO.responses() * WORK.output_tokens / 1e6:.0f} M"],
       ["tokens through the model per pass", f"{GRPO.responses() * (WORK.prompt_tokens + WORK.output_tokens) / 1e6:.0f} M"],
       ["groups", f"{GRPO.prompts * GRPO.epochs:,}"],
       ["β", GRPO.beta]])

# %% [markdown]
# ## A composite reward, and the 0.8 ceiling
#
# A checker can verify structure (every claim linked, evidence on every leaf, references
# that exist, no cycles), so the reward is built from parts. An artifact that does not
# parse, or is empty, scores 0. Otherwise the reward adds a share of the structural rules
# passed, a judged coverage of the hazard log (capped), and, **only for edit briefs**,
# the share of required content that survived the edit. A reviewed degeneracy flag
# subtracts a penalty. The published case study fixes only that preservation is worth 0.2; the other
# weights (0.5 structure, 0.3 coverage, 0.3 penalty) are ours.

# %%
examples = [("does not parse", dict(parsed=False)),
            ("perfect new brief", dict(parsed=True, structure=1, coverage=1)),
            ("perfect edit brief", dict(parsed=True, structure=1, coverage=1, preservation=1)),
            ("edit that lost half the content", dict(parsed=True, structure=1, coverage=1, preservation=0.5)),
            ("new brief, flagged degenerate", dict(parsed=True, structure=1, coverage=1, degenerate=True))]
Table(["artifact", "reward", "renormalised"],
      [[name, cs.composite_reward(cs.Artifact(**kw)), cs.composite_reward(cs.Artifact(**kw), renormalise=True)]
       for name, kw in examples])

# %% [markdown]
# A new brief cannot score above 0.8, because it has nothing to preserve. Calling that
# missing term "perfect preservation" would be wrong, so `cs.Artifact` takes
# `preservation=None` for it. Does the ceiling matter to GRPO? Within one group, every
# response answers the same brief, and standardising by the group's spread removes any
# common scale. The ceiling then changes nothing. Without the division, as in Dr. GRPO,
# a new brief's advantages are 0.8 times those of an edit brief:

# %%
group = torch.tensor([[0.8, 0.4, 0.0, 0.8]])
for name, rewards in (("as scored (max 0.8)", group), ("renormalised (÷ 0.8)", group / 0.8)):
    standardised = group_advantages(rewards)[0]
    centred = rewards - rewards.mean()
    print(f"{name:>22}: standardised {[round(x, 3) for x in standardised[0].tolist()]}"
          f"  centred only {[round(x, 3) for x in centred[0].tolist()]}")

# %% [markdown]
# So the choice between keeping the ceiling and renormalising is a choice about how much
# weight new briefs get relative to edits. It only bites when advantages are not divided
# by the group's spread, or when rewards are compared across groups. Either way, the
# choice should be made on purpose and written down.
#
# ## The bill
#
# SFT is compute-bound: every token goes forward and backward through the frozen base
# and the adapters, $4(N - Vd) + 6LTd$ FLOPs (previous chapter). A GRPO trial has three
# stages. First, **generation**: one forward pass per token, at lower utilisation because
# decoding one token at a time is limited by memory bandwidth. Second, **scoring**: the
# old policy's and the reference's log-probabilities, one forward pass each. Third, the
# **update**: a LoRA training pass over prompt and response. The assumptions:

# %%
Table(["assumption", "value"], [[k, f"{v:.4g}" if isinstance(v, float) else v] for k, v in cs.assumptions()
                                if k.startswith(("prices", "GRPO: scoring", "GRPO: inner"))])

# %%
result = cs.bill()
sft, grpo = result["sft"], result["grpo"]
Table(["item", "GPU-hours", "USD (ours)", "USD (module)"],
      [["SFT, one run", sft["gpu_hours"], sft["usd"], "about 7.50"]] +
      [[f"  GRPO {stage}", hours, hours * PRICES.usd_per_gpu_hour, ""]
       for stage, hours in grpo["stage_hours"].items()] +
      [["GRPO, one trial", grpo["gpu_hours"], grpo["usd"], "about 58"],
       ["three trials of each", 3 * (sft["gpu_hours"] + grpo["gpu_hours"]), result["total_usd"], "about 200"]],
      digits=2)

# %% [markdown]
# The bill drawn: look at how one GRPO trial's hours split between generation, scoring and
# updates, and at how small one SFT run is beside it.

# %%
show(cost_plots.plot_bill(result, PRICES.usd_per_gpu_hour))

# %% [markdown]
# The three stages of a GRPO trial cost about the same, and together they are about
# eight times SFT, although GRPO sees fewer distinct prompts. Each of the 3,000 prompts
# becomes 16 full sequences that are generated, scored twice and trained on. The bill
# leaves out judge calls, data review, failed runs and engineering time. Those often
# cost more than the GPUs. It is a model of the cost under stated assumptions, not a
# quote or a measurement.

# %% [markdown]
# The bill at the default setting, stage by stage:

# %%
show(cw.plot_bill(cw.bill_view()))

# %% [markdown]
# **Try it.** In Jupyter or on Colab, the controls below change an assumption and recompute
# the bill and its figure.

# %% tags=["remove-output"]
cw.make_bill_widget()

# %% [markdown]
# ## Serving memory
#
# After training, the adapters are merged into the bf16 checkpoint, and the result is
# quantised for serving; every gate is then run again on the quantised model, and its
# hash recorded. The case study's illustrative serving format stores the block weights in 4 bits with one
# FP16 scale per 128 weights, and the two 152,064 × 4,096 tables in 8 bits:

# %%
serving = cs.serving_memory()
Table(["part", "bits per weight", "GB"],
      [["block weights (8,305,020,928)", serving["block_bits"], serving["block_bytes"] / 1e9],
       ["embedding + output tables (1,245,708,288)", 8, serving["table_bytes"] / 1e9],
       ["total", "", serving["total_bytes"] / 1e9],
       ["for comparison: every weight at 4 bits, no scales", 4, serving["uniform_4bit_bytes"] / 1e9]],
      digits=3)

# %% [markdown]
# 4.28 GB + 1.246 GB = 5.53 GB, before file headers and runtime buffers (the KV cache for
# a 6,000-token context comes on top). The flat 4-bit figure, 4.78 GB, is smaller. But it
# assumes the tables are quantised as hard as the blocks and that scales are free, and
# neither is true of this format. The training-time QLoRA estimate differs again: it keeps
# the tables in bf16. Three storage rules, three numbers; the release file is the one to measure.
#
# ## Exercises
#
# **1. (prefix caching)** Suppose generation could reuse the stable 3,000-token prefix of
# each prompt, so that only the request tokens and the output are generated or prefilled. Recompute the
# GRPO generation stage. (Scoring and updates still see the full sequence.)
#
# ```{admonition} Worked solution 1
# :class: dropdown
# Generation cost is proportional to the tokens it processes: 3,000 of 6,000 per
# response are saved, so the stage halves (about 3.3 GPU-hours instead of 6.6, about
# USD 8 saved per trial). The cell below computes it with the package. The other two
# stages do not change, so the trial drops by about 14 %.
# ```

# %%
forward = acc.forward_flops_per_token(MODEL, PRICES.context_length)
cached = GRPO.responses() * (WORK.request_tokens + WORK.output_tokens) * forward
hours = PRICES.hours(cached, generation=True)
print(f"generation with a cached prefix: {hours:.2f} GPU-hours "
      f"(was {grpo['stage_hours']['generation']:.2f}); trial USD "
      f"{(grpo['gpu_hours'] - grpo['stage_hours']['generation'] + hours) * PRICES.usd_per_gpu_hour:.2f}")

# %% [markdown]
# **2. (group size)** Lab 5 of the module and this plan both use $G = 8$. What does
# $G = 4$ at the same number of prompts do to the bill, and what does it cost in learning
# signal? (Use the widget, and the mixed-group probability of the GRPO chapter.)
#
# ```{admonition} Worked solution 2
# :class: dropdown
# Every GRPO stage is proportional to the number of responses, so halving $G$ halves
# the trial (about USD 29). But a group of 4 is all-correct or all-wrong more often: at a
# success rate of 0.9 the chance that a group carries any task gradient falls from
# $1 - 0.9^8 - 0.1^8 \approx 0.57$ to $1 - 0.9^4 - 0.1^4 \approx 0.34$. Half the price keeps
# $0.34 / 0.57 \approx 60$ % of the informative groups: more than half, so per dollar the
# smaller group buys about 1.2 times as many groups with a signal. What it gives up is
# per group: four answers make a noisier baseline than eight, and more of the prompts
# teach nothing at all.
# ```
