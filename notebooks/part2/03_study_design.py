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
# # The study, locked before it runs
#
# A comparison of five arms over eight seeds invites a quiet kind of cheating: trying
# another metric, another seed or another analysis after seeing the numbers until one arm
# "wins". The study's answer is {term}`pre-registration <Pre-registration (treatment lock)>`:
# a treatment lock, written and committed before any recorded run, that fixes the arms,
# seeds, budgets, metric and the whole analysis plan, down to its random seed. A run
# refuses to start when the lock, its arm's registry entry, the profile or the warm start
# no longer match it.
#
# **What you will learn.** How to read a published comparison of the five arms with the
# right (paired) question; what our study fixed in advance and why it departs from the
# published one where it does; and why a mean reward far from 0 or 1 can still leave most
# groups with nothing to learn from.
#
# This chapter shows the design and the published results of the study it follows
# ({ref}`the family study card <ref-study-card>`); no number in it comes from our runs,
# which the next chapter reads.

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
from verifiable_grpo.book.notebook import Table, show
from verifiable_grpo.core.config import read_json, resolve
from verifiable_grpo.part2 import analysis, demos
from verifiable_grpo.part2.lock import read_lock

# %% [markdown]
# ## What the published study reports
#
# The study this part follows (its card calls it E1) trained Qwen3-8B with
# {term}`LoRA` on GSM8K, a set of grade-school word problems, for 30 steps of 4 prompts x 4
# completions, with eight pre-registered seeds per arm and no KL term, and scored each run
# on 500 held-out problems. Its table, copied as data and attributed:

# %%
e1 = read_json(resolve(demos.E1_REFERENCE))
print("model and budget:", e1["attribution"]["model"])
print("status:", e1["attribution"]["status"])
Table(["arm", "seeds", "mean held-out accuracy", "95% CI (card)"],
      [[r["arm"], r["seeds"], f"{r['mean']:.4f}", f"[{r['low']:.4f}, {r['high']:.4f}]"]
       for r in e1["card_table"]])

# %% [markdown]
# All five arms lie within about one accuracy point. Overlapping marginal intervals do
# not compare arms, though: the seeds are shared, so the right question is the paired
# one, arm minus `grpo` on the same seed. Our pre-registered analysis, applied to the
# published per-seed accuracies, gives the paired differences, an exact sign-flip test
# over the eight seeds, Benjamini-Hochberg across the four comparisons, and a verdict.
# (The intervals are ours, from the lock's RNG seed; they need not match the card's
# digits, whose resampling stream is another.)

# %%
lock, lock_sha = read_lock()
result = analysis.analyse(lock, demos.e1_runs())
part = result["regimes"]["on_policy"]
Table(["arm - grpo", "difference", "95% CI (paired bootstrap)", "p (sign flip)", "BH", "verdict"],
      [[c["arm"], f"{c['difference']:+.5f}", f"[{c['low']:+.5f}, {c['high']:+.5f}]",
        f"{c['p_value']:.4f}", f"{c['p_adjusted']:.4f}", c["verdict"]] for c in part["comparisons"]])

# %% [markdown]
# Drawn, each arm is a dot with its interval: look for an interval that stays clear of the
# dashed zero line. None does.

# %%
show(family_plots.plot_paired_differences(part["comparisons"], "the card's runs"))

# %% [markdown]
# Every comparison is inconclusive, as the study's own audit concluded. The `gspo` row is
# worth a second look: with one update per generation batch its gradient is exactly
# `grpo`'s (chapter 2), so its +0.005 is what two runs of the same objective with
# different nondeterministic kernels can differ by.
#
# ## Our study's design
#
# The lock is the committed file `configs/part2/lock.json`. What a reader needs from it:

# %%
budget = lock["budget"]
ev = lock["evaluation"]
Table(["what", "fixed in advance"], [
    ["locked on", lock["locked_at"]],
    ["starting point", "Part I's recorded warm start (the tiny model, 2.7M parameters)"],
    ["arms", ", ".join(lock["arms"])],
    ["seeds (each run of every arm)", ", ".join(map(str, lock["seeds"]))],
    ["regimes (updates per rollout set)",
     ", ".join(f"{k}: {v['updates_per_rollout']}" for k, v in lock["regimes"].items())],
    ["steps x prompts x completions", f"{budget['steps']} x {budget['prompts_per_step']} x "
                                      f"{budget['group_size']}"],
    ["learning rate, KL coefficient, temperature",
     f"{budget['learning_rate']:g} (linear decay to 0), {budget['beta']:g}, {budget['temperature']:g}"],
    ["trained parameters", budget["trainable"]],
    ["held-out evaluation", f"{ev['problems']} test problems, greedy and {ev['draws']} draws each"],
    ["primary metric", lock["metric"]["primary"]],
    ["comparison", lock["analysis"]["comparison"]],
    ["test and correction", f"{lock['analysis']['p_value']}; {lock['analysis']['multiple_testing']}"],
])

# %% [markdown]
# The verdict rule, also fixed in advance: an arm is "better" or "worse" than `grpo` only
# when the Benjamini-Hochberg-corrected test rejects *and* the paired interval excludes
# zero; otherwise "inconclusive". No run may be excluded: a run that fails is reported as
# failed, never rerun with another seed.
#
# **Where the design departs from the card, and why** (the lock records each reason):
#
# - **Learning rate $3\cdot10^{-5}$, not $10^{-6}$.** On the tiny model $10^{-6}$ leaves the
#   policy where it started (an exact KL of about $2\cdot10^{-6}$ after 50 updates).
# - **The whole model is trained, not LoRA adapters.** The model is small enough to train
#   whole on a CPU, and Part I trains it whole, so the arms differ from Part I's run only in
#   the objective and the sampler. (The lock's note adds that LoRA "is not wired into the
#   study runner". That was true when the lock was written; the study runner has since
#   learned to train LoRA adapters when a lock says `trainable: lora`, tested to resume
#   exactly. The recorded lock trains the whole model, and it cannot be edited: a LoRA study
#   would be a new lock.)
# - **Two regimes.** With one update per rollout set the ratio is 1 and the clip cannot
#   act (chapter 2), so a second regime with two updates per rollout set lets `gspo` and
#   `dapo`'s clip do something.
#
# **Did it run?** The lock's own `status` field still reads as it was written,
# `preregistered-not-run`: the field is part of the locked file, and editing it would change
# the lock's hash and void every run. Whether the study ran is told by the record, where
# every run states the hash of the lock it ran under:

# %%
from verifiable_grpo.part2 import results

record = results.load()
planned = len(lock["seeds"]) * len(lock["arms"]) * len(lock["regimes"])
under_this_lock = sum(run["lock_sha256"] == lock_sha for run in record["runs"].values())
print(f"pre-registered runs: {planned}; recorded: {len(record['runs'])}, "
      f"of which under this lock: {under_this_lock}")

# %% [markdown]
# ## How to run it
#
# `python -m verifiable_grpo family study` runs every pre-registered run not finished yet
# (after the untrained warm start's held-out accuracy), each resumable from its newest
# checkpoint; `family status` lists what is missing; `family analyse` applies the plan
# above and refuses verdicts while any pre-registered run is missing.
#
# ## Running the study on TRL
#
# The card ran its arms on TRL's `GRPOTrainer` with an 8B model on a GPU. A reader with
# GPUs can do the same from this project: `family run --backend trl` takes the same lock,
# the same seeds and the same arm names, trains a LoRA adapter through `GRPOTrainer`, and
# writes the same `run_manifest.json`, so `family analyse` reads a GPU study exactly as it
# reads ours. Three of the five arms are nothing but `GRPOConfig` settings, and so is
# `dapo`'s clip-higher; the lock already stores them, next to what TRL cannot do by itself:

# %%
base_fields = lock["arms"]["grpo"]["trl"]["config"]
Table(["arm", "GRPOConfig fields that differ from grpo's", "added by our GRPOTrainer subclass"], [
    [arm, ", ".join(f"{k}={v}" for k, v in entry["trl"]["config"].items()
                    if base_fields.get(k) != v) or "(none)",
     "dynamic sampling" if entry["trl"]["subclass"] and arm == "dapo" else
     "AERO rescue, curation, posterior advantages" if entry["trl"]["subclass"] else "-"]
    for arm, entry in lock["arms"].items()
])

# %% [markdown]
# For `dapo` and `aero` the subclass hands each step to the same sampler our runner uses,
# drawing every completion through TRL's own generation, so the groups it trains on are
# the ones our sampler would pick from the same rewards (a test checks this row by row).
# The card's set-up is a configuration file, launched with one command per run:
#
# ```bash
# python -m verifiable_grpo family run --backend trl \
#     --config configs/part2/card-qwen3-8b-gsm8k.yaml \
#     --accelerate-config configs/accelerate/one-gpu.yaml --arm drgrpo --seed 107
# ```
#
# A run checkpoints every 5 steps and the same command continues it. What comes back and
# what is redone: TRL's checkpoint restores the adapter, the optimizer, the learning-rate
# schedule, the step counter and log, and the random states; it does not store the order of
# the prompts or the completions of the step in flight, so it replays the seeded prompt
# order and generates the next step's completions again. Since the random states are
# restored, the regenerated steps are the ones the uninterrupted run drew: on a CPU, at
# smoke size, a run stopped after one step and resumed ends with the same adapter, bit for
# bit. Before any model loads, the command refuses an arm TRL cannot express, a changed
# lock, a GPU configuration on a machine without a GPU, and more processes than GPUs.
#
# ## Exercise
#
# The card's run (`drgrpo`, seed 107) logged a mean ZVF of 0.783 with a training reward
# near 0.64. What ZVF would i.i.d. rewards with $p = 0.64$ and $G = 4$ give? Why is the
# observed value so much higher?
#
# ```{admonition} Solution
# :class: dropdown
# $p^4 + (1-p)^4 = 0.64^4 + 0.36^4 \approx 0.168 + 0.017 = 0.185$. The formula assumes every
# prompt has the same success rate. The ZVF of a mixture of prompts is the mean of
# $p_q^G + (1-p_q)^G$ over the prompts' own rates $p_q$, and that function is convex: a set of
# prompts that are mostly either easy ($p_q \approx 1$) or hopeless ($p_q \approx 0$, e.g.
# truncated answers) has a mean reward near 0.64 and a ZVF near 1. For instance 64 % of
# prompts at $p_q = 0.95$ and 36 % at $p_q = 0.05$ give a mean reward of about 0.63 and a ZVF
# of about $0.95^4 + 0.05^4 \approx 0.81$.
# ```

# %%
iid = analysis.iid_zero_variance_fraction
print("iid ZVF at p = 0.64:", round(iid(0.64, 4), 3))
mixture = 0.64 * iid(0.95, 4) + 0.36 * iid(0.05, 4)
print("mixture of easy and hopeless prompts:", round(mixture, 3))
