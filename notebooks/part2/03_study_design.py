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
# # The study, locked before it runs
#
# A comparison of five arms over eight seeds invites a quiet kind of cheating: trying
# another metric, another seed or another analysis after seeing the numbers until one arm
# "wins". The study's answer is a treatment lock, written and committed before any
# recorded run: arms, seeds, budgets, metric and the whole analysis plan, with its random
# seed. Every run manifest carries the lock's SHA-256, and a run refuses to start when the
# lock, the registry entry of its arm, the profile or the warm start no longer match it.
#
# **Status.** The lock below was committed before the recorded study ran (2 regimes x 5
# arms x 8 seeds = 80 runs on the tiny model); the next chapter reads its results. This
# chapter shows the design and the published results of the study it follows; no number
# in it comes from a run of this project's family study.

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

from verifiable_grpo.book.notebook import Table
from verifiable_grpo.core.config import read_json, resolve
from verifiable_grpo.part2 import analysis, demos
from verifiable_grpo.part2.lock import read_lock

# %% [markdown]
# ## What the specification reports
#
# The study this part follows (the E1 model card) trained Qwen3-8B with LoRA on GSM8K for
# 30 steps of 4 prompts x 4 completions, eight pre-registered seeds per arm, and scored
# each run on 500 held-out problems. Its table, copied as data and attributed:

# %%
e1 = read_json(resolve(demos.E1_REFERENCE))
print("source:", e1["attribution"]["source"])
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
# Every comparison is inconclusive, as the study's own audit concluded. The `gspo` row is
# worth a second look: with one update per generation batch its gradient is exactly
# `grpo`'s (chapter 2), so its +0.005 is what two runs of the same objective with
# different nondeterministic kernels can differ by.
#
# ## Our study's design
#
# The lock below is the committed file `configs/part2/lock.json`, printed field by field.

# %%
print("lock SHA-256:", lock_sha)
print("status:", lock["status"], "| locked at:", lock["locked_at"])
print("base profile:", lock["base_profile"], "| warm start:", lock["warm_start"]["path"],
      lock["warm_start"]["sha256"][:12])
print("seeds:", lock["seeds"])
print("regimes:", {k: v["updates_per_rollout"] for k, v in lock["regimes"].items()},
      "(updates per rollout set)")
Table(["budget", "value"], [[k, str(v)] for k, v in lock["budget"].items()])

# %%
Table(["arm", "objective SHA-256", "changes vs grpo"],
      [[arm, e["objective_sha256"][:16], ", ".join(e["treatment_changes"]) or "(baseline)"]
       for arm, e in lock["arms"].items()])

# %%
ev = lock["evaluation"]
print(f"held-out: {ev['problems']} test problems ({', '.join(ev['populations'])}), greedy and "
      f"{ev['draws']} draws each; {ev['untrained_warm_start']}")
print("primary metric:", lock["metric"]["primary"])
for key in ("per_arm", "comparison", "p_value", "multiple_testing", "exclusions"):
    print(f"{key}: {lock['analysis'][key]}")
print("verdicts:", lock["analysis"]["verdicts"])
print("analysis RNG seed:", lock["analysis"]["rng_seed"], "| resamples:", lock["analysis"]["resamples"])

# %% [markdown]
# The lock's notes give the reasons for each choice that differs from the E1 card:

# %%
for note in lock["notes"]:
    print("-", note)

# %% [markdown]
# ## How to run it
#
# `python -m verifiable_grpo family study` runs every pre-registered run not finished yet
# (after the untrained warm start's held-out accuracy), each resumable from its newest
# checkpoint; `family status` lists what is missing; `family analyse` applies the plan
# above and refuses verdicts while any pre-registered run is missing.
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
print("iid ZVF at p = 0.64:", round(analysis.iid_zvf(0.64, 4), 3))
mixture = 0.64 * analysis.iid_zvf(0.95, 4) + 0.36 * analysis.iid_zvf(0.05, 4)
print("mixture of easy and hopeless prompts:", round(mixture, 3))
