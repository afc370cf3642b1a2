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
# # The study's results
#
# The previous chapter fixed everything before any run: five arms, eight seeds, two
# regimes, the budget, the metric and the analysis. This chapter reads what the 80 runs
# produced.
#
# **What you will learn.** How to read a small multi-seed comparison: seed by seed, then
# paired against the baseline with an interval *and* an exact test; why the two can
# disagree with eight seeds; what the arms did to held-out accuracy; and whether the clip,
# the sequence ratio, dynamic sampling and AERO's curation actually acted.
#
# Nothing here is re-run: `data/recorded/part2` holds each run's record (its settings,
# telemetry per step and held-out results), and the pre-registered analysis is recomputed
# from those records by the tests.

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

import numpy as np
from IPython.display import display

from verifiable_grpo.book.family_plots import plot_curves, plot_per_seed
from verifiable_grpo.book.notebook import Table, show
from verifiable_grpo.part2 import results
from verifiable_grpo.part2.lock import read_lock

record = results.load()
lock, lock_sha = read_lock()
analysis = record["analysis"]
regimes = list(analysis["regimes"])

# %% [markdown]
# ## What ran
#
# Every run started from the same recorded warm start (Part I's, 2.7M parameters) and
# trained for 30 steps of 4 prompts x 4 completions at temperature 1, with no KL term
# ($\beta = 0$; chapter 1 says why), a learning rate of $3 \cdot 10^{-5}$ decaying linearly to 0, and full
# fine-tuning. Each run was then scored on the 200 test problems: one greedy answer each
# (the primary metric) and 4 sampled answers each (per-draw success).

# %%
runs = record["runs"]
print(f"runs recorded: {len(runs)}, analysed under the committed lock: "
      f"{'yes' if analysis['lock_sha256'] == lock_sha else 'NO'}")
print(f"run time summed over the runs: {results.wall_seconds(record) / 60:.0f} min on a CPU")
warm = analysis["warm_start"]
print(f"untrained warm start: held-out greedy {warm['correct']}/{warm['problems']} = "
      f"{warm['success_rate']:.3f}")

# %% [markdown]
# ## Held-out accuracy, seed by seed
#
# Each dot is one run; the bar is the arm's mean over its eight seeds; the dashed line is
# the warm start before any GRPO step.

# %%
show(plot_per_seed({r: results.per_seed(record, r) for r in regimes}, warm["success_rate"]))

# %%
for regime in regimes:
    part = analysis["regimes"][regime]
    print(f"regime {regime}: {lock['regimes'][regime]['updates_per_rollout']} update(s) per "
          "rollout set")
    display(Table(["arm", "seeds", "mean greedy (ALL)", "95% CI over seeds", "rollouts / run",
                   "discarded / run", "ZVF logged", "ZVF if i.i.d."],
                  [[row["arm"], row["seeds"], f"{row['mean']:.4f}",
                    f"[{row['low']:.4f}, {row['high']:.4f}]", f"{row['rollouts_generated']:.0f}",
                    f"{row['rollouts_discarded']:.0f}",
                    f"{row['zero_variance_fraction_logged']:.3f}",
                    f"{row['zero_variance_fraction_iid']:.3f}"] for row in part["arms"]]))

# %% [markdown]
# ## The pre-registered comparisons
#
# For each arm, the per-seed difference from `grpo` on the same seed (the seeds share their
# prompt order and sampling stream, so the pairing removes what the seeds have in common),
# a paired bootstrap interval over the eight seeds, an exact sign-flip p-value, and
# Benjamini-Hochberg over the four arms within a regime ({term}`paired bootstrap`,
# {term}`sign-flip test`; {ref}`Efron 1979 <ref-bootstrap>`, {ref}`Benjamini and Hochberg 1995 <ref-bh>`). The verdict rule was written in
# the lock: "better" or "worse" only when BH rejects and the interval excludes zero.

# %%
for regime in regimes:
    part = analysis["regimes"][regime]
    print(f"regime {regime}")
    # the verdict beside the arm, so it stays on screen on a phone
    display(Table(["arm - grpo", "verdict", "difference", "95% CI (paired)", "p (sign flip)",
                   "BH"],
                  [[c["arm"], c["verdict"], f"{c['difference']:+.4f}",
                    f"[{c['low']:+.4f}, {c['high']:+.4f}]", f"{c['p_value']:.4f}",
                    f"{c['p_adjusted']:.4f}"]
                   for c in part["comparisons"]]))
verdicts = {r: [c["verdict"] for c in analysis["regimes"][r]["comparisons"]] for r in regimes}
separated = {r: sorted({v for v in vs if v != "inconclusive"}) for r, vs in verdicts.items()}
for regime, found in separated.items():
    print(f"{regime}: {'the arms separate: ' + ', '.join(found) if found else 'no arm separates from grpo'}")

# %% [markdown]
# ## What the study shows
#
# **No arm separates from `grpo`, in either regime.** Every verdict is "inconclusive". Two
# rows show why the lock asked for both an interval and a test:
#
# - In `on_policy`, `drgrpo` - `grpo` has a paired bootstrap interval of
#   [-0.0187, -0.0025], which excludes zero, but the exact sign-flip test gives p = 0.078
#   (0.31 after Benjamini-Hochberg). With eight seeds, a percentile bootstrap interval is
#   too narrow: it can only reshuffle the eight observed differences and never sees a
#   seed that would have gone the other way. The exact test counts all $2^8$ sign
#   patterns and is honest about how little eight pairs can show.
# - In `two_updates`, `dapo` - `grpo` is +0.023 with an interval of [+0.002, +0.048], and
#   again p = 0.094 (0.375 after BH). Had we read only the interval, we would have
#   announced a winner.
#
# **`gspo` equals `grpo` with one update per rollout set.** The paired difference is
# exactly 0 at every seed, and for 7 of the 8 seeds all 1,000 held-out completions are
# the same, character for character, although the final weights differ in their last
# digits. Chapter 2 derived why: when every token's
# ratio is 1, the sequence ratio and the token ratio give the same gradient, up to float
# rounding.
#
# **Training did not raise held-out accuracy; the arms differ in how much they lost.** The
# warm start answers 41 of 200 test problems greedily (0.205). Every arm's mean is at or
# below that in both regimes, and per-draw success fell for every arm (table below; the
# warm start's per-draw rate is 0.161). A second, off-policy update per rollout set made
# it worse for the plain arms (`grpo` 0.205 -> 0.178). `dapo` and `aero`, which train on
# batches whose rewards vary or are curated, lost the least. The training reward they
# report is higher (0.35-0.38 against 0.17-0.19), but that is the reward of the batch they
# chose to optimise, not of the policy's fresh samples.
#
# So the study is a negative result on this model and budget, and it is the one the
# published card reached on a much larger model: at 30 steps the five
# objectives are not distinguishable with eight seeds.

# %%
warm_draw = record["warm_start"]["heldout"]["per_draw"]["ALL"]["success_rate"]
print(f"warm start per-draw success: {warm_draw:.4f}")
rows = []
for regime in regimes:
    greedy = results.per_seed(record, regime)
    draws = results.per_seed(record, regime, "heldout_per_draw_all")
    trained = results.per_seed(record, regime, "last10_mean_reward")
    seconds = results.per_seed(record, regime, "seconds_per_step")
    for arm in results.arms_of(record):
        rows.append([regime, arm, f"{np.mean(greedy[arm]):.4f}", f"{np.mean(draws[arm]):.4f}",
                     f"{np.mean(trained[arm]):.3f}", f"{np.mean(seconds[arm]):.2f}"])
Table(["regime", "arm", "greedy (mean of 8)", "per-draw (mean of 8)",
       "training reward, last 10 steps", "s / step"], rows)

# %% [markdown]
# Beside the published study (Qwen3-8B with LoRA on GSM8K, 500 held-out problems; its
# card's table, attributed, from chapter 3): its arms also lay within about a point of
# each other, with no verdict either.

# %%
from verifiable_grpo.core.config import read_json, resolve
from verifiable_grpo.part2 import demos

card = {r["arm"]: r for r in read_json(resolve(demos.E1_REFERENCE))["card_table"]}
ours = {r: {row["arm"]: row for row in analysis["regimes"][r]["arms"]} for r in regimes}
Table(["arm", "card: 8B model, GSM8K (mean, 95% CI)"] + [f"ours, {r}" for r in regimes],
      [[arm, f"{card[arm]['mean']:.4f} [{card[arm]['low']:.4f}, {card[arm]['high']:.4f}]"] +
       [f"{ours[r][arm]['mean']:.4f} [{ours[r][arm]['low']:.4f}, {ours[r][arm]['high']:.4f}]"
        for r in regimes] for arm in results.arms_of(record)])

# %% [markdown]
# The seconds per step are wall times on a shared machine (other jobs ran beside parts of
# the study), so they compare arms only roughly; the rollout counts above are the
# exact cost: `dapo` drew about 2.3 times as many rollouts as `grpo` and discarded 56-57 % of
# them.

# %% [markdown]
# ## Training curves
#
# The mean training reward of the batch each arm optimised, averaged over the eight seeds
# and smoothed over five steps. `dapo` trains only on groups whose rewards vary, and
# `aero` on curated groups, so their curves are not the reward of the policy's fresh
# samples; the next figure shows that one (the reward of every rollout drawn).

# %%
display(show(plot_curves({r: results.step_curve(record, r, "mean_reward") for r in regimes},
                         "reward of the optimised batch")))

# %% [markdown]
# The reward of every rollout the policy drew, kept or discarded: the same measure for
# every arm.

# %%
display(show(plot_curves({r: results.step_curve(record, r, "mean_reward_drawn") for r in regimes},
                         "reward of every rollout drawn")))

# %% [markdown]
# ## Did the mechanics act?
#
# With one update per rollout set the importance ratio of every token is 1 up to the
# difference between the log-probabilities captured while sampling and those recomputed
# for the update (about $10^{-5}$), so the clip cannot act and `gspo`'s
# sequence ratio equals `grpo`'s token ratio: the two arms differ only by float noise.
# The second regime's second update runs off policy; there the clip and the sequence ratio
# can bind. The table says how often they did.

# %%
for regime in regimes:
    print(f"regime {regime}")
    display(Table(["arm", "clipped tokens per update", "ratio range", "final exact KL",
                   "rollouts / step", "discarded / step", "curation"],
                  [[m["arm"], ", ".join(f"{c:.4f}" for c in m["clipped_per_update"]),
                    f"[{m['ratio_min']:.4f}, {m['ratio_max']:.4f}]", f"{m['final_kl']:.2e}",
                    f"{m['rollouts_per_step']:.1f}", f"{m['discarded_per_step']:.1f}",
                    ", ".join(f"{k} {v}" for k, v in sorted(m["strategies"].items()))]
                   for m in results.mechanics(record, regime)]))

# %% [markdown]
# With one update per rollout set nothing was clipped and every ratio was 1 to four
# decimals, as predicted. With two, the second update saw token ratios from about 0.19 to
# 2.2, yet the clip removed the gradient of only 0.15-0.27 % of the tokens: the policy moves
# little in one update at this learning rate, and the few tokens far outside
# [0.8, 1.2] (or [0.8, 1.28] for `dapo`) are rare. `gspo`'s sequence ratio, a mean over a
# response's tokens, stayed within [0.90, 1.09], so its clip never acted at all. The
# mechanics bind a little in the second regime, not enough to separate the arms.

# %% [markdown]
# ## Exercise
#
# Take `drgrpo`'s and `grpo`'s per-seed greedy accuracies in the `two_updates` regime and
# compute, without the package: the eight paired differences, their mean, and the exact
# two-sided sign-flip p-value (the share of the $2^8 = 256$ sign patterns whose summed
# difference is at least as large in absolute value as the observed one). Then compare
# with the table above.

# %%
arm_values = results.per_seed(record, "two_updates")
print("grpo  :", arm_values["grpo"])
print("drgrpo:", arm_values["drgrpo"])

# %% [markdown]
# ```{admonition} Solution
# :class: dropdown
# The differences are `d = drgrpo - grpo` seed by seed. Enumerate the 256 sign patterns
# $s \in \{-1, +1\}^8$ and count those with $|\sum_i s_i d_i| \ge |\sum_i d_i|$; divide by
# 256. Seeds whose difference is 0 contribute nothing, so $k$ zero differences give every
# count a factor $2^k$ and leave the p-value unchanged. The cell below does exactly this.
# ```

# %%
import itertools

d = np.subtract(arm_values["drgrpo"], arm_values["grpo"])
signs = np.array(list(itertools.product((1, -1), repeat=len(d))))
p = float(np.mean(np.abs(signs @ d) >= abs(d.sum()) - 1e-12))
print("mean difference:", round(float(d.mean()), 4), "| sign-flip p:", round(p, 4))
table_p = next(c["p_value"] for c in analysis["regimes"]["two_updates"]["comparisons"]
               if c["arm"] == "drgrpo")
print("matches the analysis table:", abs(p - table_p) < 1e-12)
