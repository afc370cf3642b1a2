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
# # Beyond the practical's budget: a measured sweep
#
# Chapters 6 and 8 recorded the practical's own GRPO run, and it barely moved the policy:
# an exact KL of about $10^{-3}$, no clipping, per-draw test success within noise of the
# warm start. This chapter leaves {ref}`the practical's specification <ref-practical>`
# (the assignment chapters 1 to 9 follow) on purpose. It asks whether *some*
# GRPO setting on the same tiny base, from the same recorded warm start, lifts per-draw
# test success above the warm start's, and it answers with runs we executed, not with a
# hope. Everything below is labelled **beyond the practical's budget**: the faithful record
# stays the one of chapters 5 to 9.
#
# The danger of a sweep is choosing the winner on the very numbers you then report. Try
# six settings and report the best test score, and you have reported the maximum of six
# noisy estimates: it is biased upwards even when no setting helps (the exercise at the
# end measures how much). So the rule was fixed before any run:
#
# 1. the settings below, and only those;
# 2. **select** one by per-draw success on the *validation* split (200 problems the test
#    never sees, 4 draws each, with draw seeds of their own);
# 3. **report** the selected setting's test result, paired with the warm start on the same
#    200 problems and the same draw seeds; it "learns" when the paired 95 % interval of the
#    per-problem success difference lies above zero.
#
# The test results of the other settings are shown too, for the record, but they do not
# choose anything.
#
# You will learn how to run a small sweep without fooling yourself, and you will measure,
# in the exercise, how often picking the winner on the test set reports a gain that is not
# there.

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

quiet()

import numpy as np

from verifiable_grpo.book import plots
from verifiable_grpo.book.notebook import Table, show
from verifiable_grpo.part1 import sweep

recorded = sweep.load_recorded()
summary = recorded["summary"]

# %% [markdown]
# ## The settings, declared before the runs
#
# Each is an ordinary Part I GRPO run (exact prefix KL with $\beta = 0.02$, the same
# prompts and sampling); only these four values differ from the recorded run's. (The
# sweep ran before GRPO learned to read each prompt once for its G responses, so it keeps
# `grpo.share_prompts` off: rerunning it gives the recorded bits.)

# %%
spec = sweep.SPEC
Table(["setting", "learning rate", "iterations", "updates / rollout set", "G", "why"],
      [["recorded run (chapter 6)", f"{spec['learning_rate']:.0e}", spec["iterations"],
        spec["updates_per_rollout"], spec["group_size"],
        "the specification's counts; its rate 1e-6 re-tuned to 1e-5 for the tiny model"]] +
      [[s.name, f"{s.learning_rate:.0e}", s.iterations, s.updates_per_rollout, s.group_size,
        s.why] for s in sweep.SETTINGS])

# %% [markdown]
# ## What each setting did while training

# %%
show(plots.plot_sweep_histories(recorded["results"], highlight=summary["selected"]))

# %% [markdown]
# ## Selection on validation, report on test

# %%
warm = summary["warm_start"]
print(f"warm start: validation per-draw {warm['validation_per_draw']['correct']}/800, "
      f"test greedy {warm['test_greedy']['correct']}/200, test per-draw "
      f"{warm['test_per_draw']['correct']}/800 (the same counts as chapter 8's record)")
def marked(row):
    return row["name"] + (" (selected)" if row["name"] == summary["selected"] else "")


def paired_interval(p):
    return f"{p['difference']:+.4f} [{p['low']:+.4f}, {p['high']:+.4f}]"


def verdict(p):
    return "below" if p["high"] < 0 else "above" if p["low"] > 0 else "no gain shown"


# Two narrow tables rather than one wide one: the verdict first, what moved beside it.
display(Table(["setting", "verdict (test per-draw)", "validation per-draw",
               "test per-draw vs warm start [95% CI]", "McNemar p (draw 0)"],
              [[marked(row), verdict(row["paired_vs_warm_start"]),
                f"{row['validation_per_draw']['correct']}/800",
                paired_interval(row["paired_vs_warm_start"]),
                f"{row['paired_vs_warm_start']['mcnemar_p']:.3f}"]
               for row in summary["settings"]], title="selection and verdict"))
Table(["setting", "test greedy", "test per-draw", "KL (last 10)", "max clipped", "train s"],
      [[row["name"], f"{row['test_greedy']['correct']}/200",
        f"{row['test_per_draw']['correct']}/800", f"{row['last10_kl']:.1e}",
        f"{row['clip_max']:.3f}", f"{row['train_seconds']:.0f}"]
       for row in summary["settings"]], title="what each setting did")

# %%
chosen = next(r for r in summary["settings"] if r["name"] == summary["selected"])
test = chosen["paired_vs_warm_start"]
print(f"selected by validation: {chosen['name']}")
print(f"test per-draw: warm start {test['first_rate']:.4f} -> {test['second_rate']:.4f}, "
      f"paired difference {test['difference']:+.4f}, 95% CI [{test['low']:+.4f}, "
      f"{test['high']:+.4f}]")
print("verdict:", "GRPO learned: the interval lies above zero" if summary["learns"] else
      "no demonstrated gain: the interval does not lie above zero")

# %% [markdown]
# ## What the sweep shows
#
# **No setting learns.** The validation rule chose `lr3e-5`, the setting closest to the
# recorded run's rate: on the test set it answers 128 of 800 draws against the warm start's 129,
# a paired difference of -0.001 with an interval of [-0.022, +0.020]. GRPO did not lift
# per-draw success on this base at any setting we tried.
#
# **A larger step did harm, measurably.** Every setting at $10^{-4}$ or above ends *below*
# the warm start, and for four of them the paired interval lies entirely below zero
# (`lr1e-4`, `lr3e-4`, `lr1e-4-4upd`, `lr1e-4-200it`). Their KL to the warm start is 4 to 14
# times the selected setting's, and the clip starts to act: up to 9.5 % of the tokens of
# one update, with four updates per rollout set (the clip panel above draws each
# iteration's largest update unsmoothed, so its peak is this one). Their training reward does not rise either: over the
# last 20 iterations it is 0.08 to 0.17, against 0.14 to 0.17 over the first 20. And at
# $3 \cdot 10^{-4}$ the share of constant-reward groups averages 0.77, so most groups
# stop carrying any gradient. The policy moves away from the warm start without moving
# towards the answers.
#
# **A tempting number that the rule ignores.** `lr1e-4-g8` has the best *greedy* test score
# (43 of 200 against 41, McNemar p = 0.57). Picking it for that reason would be exactly
# the best-of-six on the test set that the rule forbids: the exercise below measures how
# often such a pick looks like a gain when there is none.
#
# A second sweep should be declared as such before it runs, for example smaller steps for
# longer ($10^{-5}$ to $3 \cdot 10^{-5}$ over 300 iterations) or $G = 8$ at
# $3 \cdot 10^{-5}$. Running it, and choosing its settings after seeing these results, is
# fine as long as its report says so.
#
# The whole sweep (`python -m verifiable_grpo sweep --export`) takes about 25 minutes on a
# two-core CPU, most of it training; [the provenance appendix](../../book/provenance.md)
# lists what the other runs cost.

# %% [markdown]
# ## More signal per update: a second study, declared before it ran
#
# The sweep kept the practical's shape: 4 prompts and 16 responses per iteration.
# Perhaps the tiny model needs far more signal per update before anything carries to new
# problems. A second study, with its rules fixed in code and committed before its first run
# (`verifiable_grpo.part1.lift_study`), asks exactly that:
#
# - **primary metric:** per-draw success on the 200 test problems, paired with the warm
#   start problem by problem; greedy pass@1 with an exact McNemar test beside it;
# - **selection:** validation only. A candidate *learns* when its paired 95 % interval of
#   validation per-draw success lies above zero; candidates run in their declared order;
# - **candidates:** the tiny base with 64 prompts × G = 8 per iteration (32 times the
#   responses of the sweep) at $3 \cdot 10^{-5}$ for 100 iterations; then a pretrained
#   model (SmolLM2-135M-Instruct) with its own warm start on the task; then responses that
#   may show their working (this one needs a new base and verifier, and stays declared, not
#   run). A fourth, the first setting for twice the iterations, was declared after the first
#   result and is labelled so.

# %%
from verifiable_grpo.book import learning_plots
from verifiable_grpo.part1 import fresh_test, lift_study

study = lift_study.recorded()["summary"]
display(Table(lift_study.VERDICT_COLUMNS, lift_study.verdict_rows(study), title="verdict"))
Table(lift_study.DETAIL_COLUMNS, lift_study.detail_rows(study), title="the rates behind it")

# %%
display(show(learning_plots.plot_lift_intervals(study)))
print("warm start:", {k: round(v, 4) for k, v in study["warm_start"].items()})
print("selected by the declared rule:", lift_study.display_name(study["selected"]))
own = lift_study.recorded_own_warm_start()
ran_elsewhere = {s["candidates"][0]["name"] for s in own["summaries"]}
print("declared, not run:", ", ".join(n for n in study["not_run"] if n not in ran_elsewhere))

# %% [markdown]
# **What it shows.** With 512 responses per iteration the training reward rises and the
# policy changes on problems it never trained on. After 100 iterations its *greedy* answer
# is right on 63 of 200 test problems against the warm start's 41 (32 problems flip to
# right, 10 to wrong, McNemar p = 0.0009), but sampled at temperature 1 it solves 16.5 %
# of test draws against 16.1 %, and on validation the interval (+0.025, [−0.004, +0.054])
# still includes zero: by the rule fixed in advance it does not learn. GRPO sharpened the
# policy's most likely answer (the mode) before it moved the sampled distribution.
#
# That result suggested one more question, asked in the open: is it a matter of
# iterations? The same setting for 200 iterations was declared after the first result and
# is labelled so. It passes the validation rule (+0.036, [+0.007, +0.065]), so the rule
# selects it. On the test set, reported once, its greedy pass@1 is 0.305 against 0.205
# (McNemar p = 0.0012) and its per-draw success 0.175 against 0.161, a paired interval of
# [−0.010, +0.037] that still includes zero. The honest summary: on this 2.7M-parameter
# base, GRPO with much more signal per update lifts greedy accuracy on new problems
# clearly and per-draw success at most slightly; a validation gain of +0.036 shrinks to an
# unconfirmed +0.014 on the test set. That a second look was needed, and that the
# secondary metric moved first, is exactly what a study must not promote to its headline
# after the fact.

# %% [markdown]
# ### A pretrained model on the same CPU: SmolLM2-135M-Instruct
#
# The hope was that a pretrained model, which already adds and subtracts, would
# carry what GRPO teaches to new problems. The declared candidate runs SmolLM2-135M-Instruct
# (50 times the tiny base's parameters) with its own warm start, declared in code before the
# run: the same 128 warm-start problems in the model's own chat template, two epochs of
# batch 8 at $2 \cdot 10^{-5}$ (32 updates), then GRPO as declared: 4 prompts × G = 4,
# $10^{-5}$, β = 0.02 with the exact KL, 60 iterations. It is paired with *its own* warm
# start, scored with the same seeds and problems as the tiny candidates.

# %%
display(Table(lift_study.VERDICT_COLUMNS,
              [row for summary in own["summaries"] for row in lift_study.verdict_rows(summary)],
              title="verdict"))
Table(lift_study.DETAIL_COLUMNS,
      [row for summary in own["summaries"] for row in lift_study.detail_rows(summary)],
      title="the rates behind it")

# %%
for summary in own["summaries"]:
    print(summary["candidates"][0]["name"], "| its own warm start:",
          {k: round(v, 4) for k, v in summary["warm_start"].items()})
smollm2_run = own["results"][0]
print("groups with no signal (all answers wrong or all right), mean over iterations:",
      round(sum(h["zero_variance_fraction"] for h in smollm2_run["history"])
            / len(smollm2_run["history"]), 2))
learner = next(r for r in lift_study.recorded()["results"]
               if r["candidate"]["name"] == study["selected"])
display(show(learning_plots.plot_lift_curves([learner] + own["results"])))

# %% [markdown]
# **What it shows.** It does not learn, and the reason is upstream of GRPO: 32 updates of
# warm start left SmolLM2 writing the strict JSON answer correctly on about 1 % of draws
# (the tiny warm start: 16 to 20 %). With four answers per prompt, 95 % of groups were all
# wrong, so their advantages were zero and most iterations carried no gradient at all; the
# exact KL still wandered up to about 0.15 and back, the policy drifting without a signal.
# The lesson is the group-size exercise's (chapter 9): a group whose answers all agree
# teaches nothing, so GRPO can only amplify successes the sampler already finds. A longer warm start (or more draws per prompt) is the next
# candidate to declare, and it is listed as such rather than run here after the fact.

# %% [markdown]
# ## Decided once, on problems no run had seen
#
# By now the 200 test problems had been looked at four times: by the sweep, by candidate 1
# (whose test result shaped candidate 4's declaration), by candidate 4 and by the SmolLM2
# candidate. A test set that has shaped a decision no longer decides anything, so the
# numbers above describe; they do not settle whether GRPO lifted per-draw success. That
# question was asked again, once, on a **fresh** split declared before the run
# (`verifiable_grpo.part1.fresh_test`): 1,000 new problems (500 in range, 500 out of range,
# as the test split mixes them) from a new seed, each different from every problem of the
# dataset; candidate 4's setting trained again from the recorded warm start; 8 draws per
# problem, paired problem by problem with the warm start. With 1,000 problems × 8 draws the
# interval is about four times narrower than the test set's.

# %%
fresh = fresh_test.recorded()
rows = []
for mode, name in (("sample", "per-draw success (primary)"), ("greedy", "greedy pass@1")):
    r = fresh["paired"][mode]
    rows.append([name, f"{r['first_rate']:.3f}", f"{r['second_rate']:.3f}",
                 f"{r['difference']:+.3f} [{r['low']:+.3f}, {r['high']:+.3f}]",
                 f"{r['mcnemar_p']:.2g}"])
Table(["1,000 fresh problems", "warm start", lift_study.display_name(fresh["candidate"]),
       "paired difference [95%]", "McNemar p (draw 0)"], rows)

# %% [markdown]
# **What it shows.** On problems no run had seen, the setting lifts per-draw success from
# 0.138 to 0.170, and the paired interval, [+0.022, +0.041], lies above zero; greedy pass@1
# rises by 0.065. GRPO did make the tiny base better at new problems, by about three points
# of per-draw success: a small effect, which the 200-problem test set could not resolve
# (its interval, ±0.024, was wider than the effect). The setting itself was chosen after a
# result had been seen, and its name says so wherever it appears; what this split settles
# is whether *that* setting generalises, not whether a study declared in one go would have
# found it.

# %% [markdown]
# ## Exercise: how much does picking the best on the test set cheat?
#
# Simulate a sweep in which **no** setting helps: each of six settings answers the test
# problems x 4 draws with the warm start's own per-problem success rates (so every true
# difference is 0). A sweep keeps the setting with the best mean and reports its mean test
# difference to the warm start. How often does that report exceed 0.01 when the setting is
# picked on the test set itself, and how often when it is picked on an independent
# validation draw?
#
# Write `my_reported_difference(test, validation, warm_test, select_on_test)`: `test` and
# `validation` are arrays [settings, problems] of per-problem success fractions, `warm_test`
# is the warm start's [problems]; pick the setting with the highest mean on the test set
# (`select_on_test=True`) or on the validation set (`False`) and return its mean test
# difference to the warm start. The checker tests it; the simulation below uses it.

# %%
rates = np.array([np.mean([r for d, _, _, r in recorded["warm_start"]["test_sample"] if d == doc])
                  for doc in sorted({d for d, *_ in recorded["warm_start"]["test_sample"]})])
print("problems:", len(rates), "| mean per-problem success of the warm start:",
      round(float(rates.mean()), 3))

# %%
def my_reported_difference(test, validation, warm_test, select_on_test):
    raise NotImplementedError("replace this line with your code")

# %%
from verifiable_grpo.exercises import check_reported_difference

result = check_reported_difference(my_reported_difference)

# %% [markdown]
# ```{admonition} Solution
# :class: dropdown
# Average each setting over the problems on the split that chooses, take the best, and
# subtract the warm start's test outcomes from the chosen setting's test outcomes. The
# simulation draws, for every sweep, setting and problem, 4 Bernoulli outcomes at the
# problem's rate, once for validation and once for test, and the warm start's test outcomes
# likewise. Selecting on test reports the largest of six noisy differences; selecting on
# validation reports one difference whose choice did not look at it. The first share comes
# out more than twice the second: the best of six on the test set looks like a gain where
# there is none.
# The hidden cell below checks the function and runs the simulation.
# ```

# %% tags=["hide-cell"]
def solution_reported_difference(test, validation, warm_test, select_on_test):
    chooser = test if select_on_test else validation
    pick = np.argmax(chooser.mean(axis=1))
    return (test[pick] - warm_test).mean()


result = check_reported_difference(solution_reported_difference)


def simulate(select_on_test: bool, settings: int = 6, sweeps: int = 2000, seed: int = 0) -> float:
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(sweeps):
        warm_test = rng.binomial(4, rates) / 4
        test = rng.binomial(4, rates, size=(settings, len(rates))) / 4
        validation = rng.binomial(4, rates, size=(settings, len(rates))) / 4
        hits += solution_reported_difference(test, validation, warm_test, select_on_test) > 0.01
    return hits / sweeps


print("select on test:      ", round(simulate(True), 2))
print("select on validation:", round(simulate(False), 2))
