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
# # What taught it
#
# The previous chapter trained SmolLM2-135M-Instruct with GRPO on small sums: on 200
# problems it never saw, its per-draw success went from 0.114 to 0.630. A careful reader
# asks three questions at once, and this chapter is about how to answer them:
#
# - **Was it the verifier's reward, or any reward?** With a clipped objective even a
#   random 0/1 reward can move a model: random and format-only rewards lifted a math model
#   in {ref}`Shao et al. 2025 <ref-spurious-rewards>`.
# - **Was it this seed?** The run was one run, with one seed.
# - **Did GRPO widen what the model can do, or only sharpen it?** At large $k$, base models
#   catch up with their RL-trained versions in pass@k ({ref}`Yue et al. 2025
#   <ref-rl-beyond-base>`).
#
# You will learn:
# - what the recorded answers already say, with no new run: a check for memorised twins,
#   pass@k from the stored draws, and how much of the gain format repairs can explain;
# - the unbiased pass@k estimator, why the obvious formula is biased, and how to write it;
# - how a control study is declared before it runs: arms at equal budget, seeds, one
#   decision rule fixed in advance; and what this one found when it ran.

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

from verifiable_grpo.book import taught_plots
from verifiable_grpo.book.notebook import Table, show
from verifiable_grpo.part1 import (
    band_reading,
    band_study,
    control_declaration,
    control_reading,
    control_study,
)

band = band_study.recorded("band")

# %% [markdown]
# ## Learnt by heart? Commuted twins
#
# The training split holds 256 of the family's problems and the test split 200 others, so
# no test problem was ever trained on. But a test sum $a + b$ may have its commuted twin
# $b + a$ among the training problems, and a model could answer the test sum from what it
# learnt on the twin. If that were how it improved, test sums with a trained twin would
# gain much more than test sums without one. Differences $a - b$ have no such twin.

# %%
twins = band_reading.twin_table(band)
Table(["test problems (an extension)", "problems", "instruct model", "after GRPO",
       "paired gain [95%]"],
      [[r["group"], r["problems"], f"{r['before']:.3f}", f"{r['after']:.3f}",
        f"{r['difference']:+.3f} [{r['low']:+.3f}, {r['high']:+.3f}]"] for r in twins])

# %% [markdown]
# **Twins.** The 50 test sums whose twin was trained went from 0.095 to 0.657 per draw, the
# 87 sums without a trained twin from 0.139 to 0.681, and the 63 differences, which have
# no twin at all, from 0.095 to 0.538. The gain is as large without a trained twin as with
# one: the policy did not answer test sums by recalling their twins. Differences gained
# less than sums, but they gained too, with nothing to recall.
#
# ## pass@k: sharper, or wider?
#
# Per-draw success asks how often one answer is right. **pass@k** asks whether at least
# one of $k$ answers is right. If GRPO only sharpened the model onto answers it could
# already give, the instruct model allowed several tries would catch up: its pass@k at
# large $k$ would reach the trained policy's.
#
# Each test problem has $n = 8$ stored draws, $c$ of them right. The estimate of pass@k
# for $k \le n$ counts the subsets of $k$ draws that hold at least one right answer
# ({ref}`Chen et al. 2021 <ref-codex>`):
#
# $$\widehat{\text{pass@}k} = 1 - \frac{\binom{n-c}{k}}{\binom{n}{k}}
#   = 1 - \prod_{i=n-c+1}^{n} \left(1 - \frac{k}{i}\right),$$
#
# which is unbiased: its expectation over the $n$ draws is exactly the chance that $k$
# fresh draws hold a right one. The product form never forms the binomial coefficients,
# which overflow floating point for large $n$. The tempting shortcut
# $1 - (1 - c/n)^k$ is biased: the exercise below shows by how much. A suite's pass@k is
# the mean over problems, with a bootstrap interval over problems as everywhere in the
# book.

# %%
curves = band_reading.pass_at_k_table(band)
Table(["pass@k, 200 test problems (an extension)", *[f"k = {r['k']}" for r in curves["before"]]],
      [["instruct model", *[f"{r['value']:.3f}" for r in curves["before"]]],
       ["after GRPO", *[f"{r['value']:.3f}" for r in curves["after"]]],
       ["paired gain [95%]", *[f"{r['difference']:+.3f} [{r['low']:+.3f}, {r['high']:+.3f}]"
                               for r in curves["gain"]]]])

# %%
show(taught_plots.plot_pass_at_k(curves))

# %% [markdown]
# **pass@k.** From the 8 stored draws, the instruct model's pass@k is 0.114, 0.198, 0.319
# and 0.480 at $k$ = 1, 2, 4 and 8; the trained policy's is 0.630, 0.713, 0.781 and 0.835.
# The gap narrows as $k$ grows, from +0.516 at $k = 1$ to +0.355 at $k = 8$, but its
# interval at $k = 8$, [+0.280, +0.430], still lies far above zero: within eight tries
# the instruct model does not catch up, so the gain is more than sharpening within this
# range. Whether it catches up at $k = 64$ needs 64 draws per problem, which the recorded
# run does not have: the declared study below measures it.
#
# ## Format, or arithmetic?
#
# A reward for the right number in strict JSON also rewards the JSON. Part of the gain
# could be the model learning the format, not the sums. The sampled test answers, split
# three ways:

# %%
breakdown = band_reading.answer_breakdown(band)
show(taught_plots.plot_answer_breakdown(breakdown))

# %% [markdown]
# **Format or arithmetic.** Malformed answers fell from 207 to 16 of 1,600 and wrong
# numbers from 1,210 to 576. The trained policy gave 825 more right answers than the
# instruct model; a repaired format can account for at most 191 of them (every malformed
# answer that disappeared, had each become right), so most of the gain is arithmetic.
#
# ## The controls
#
# The three readings above use only the recorded run. The first two questions need new
# runs, and the way to keep those honest is to fix the study before any of it runs: which
# arms, which seeds, which budget, which comparison decides, and what it must show. The
# declaration below is committed in `configs/part1/controls.yaml`; the command that runs
# it refuses a tree with uncommitted changes and stamps its commit and start time before
# it computes anything, as the band study did.
#
# Three arms train from the instruct model at the same budget, each on its own reward: the
# **verifier** (the strict verifier's 0/1, as recorded), **random** (a 0/1 coin,
# independent of the answer, drawn from the run's seed and the response's place in the
# run, so a resumed run draws the same coins), and **format** (1 for a well-formed JSON
# answer with an integer final stock, whatever the number). Each seed drives the prompt
# order and the sampling, and the random arm's coin.

# %%
declaration = control_declaration.load()
Table(["arm (declared)", "reward", "seeds", "per-draw success, seeds averaged",
       "seeds' min .. max"],
      control_study.controls_table(declaration, control_study.recorded()))

# %%
budget, scoring, later = declaration["budget"], declaration["scoring"], declaration["pass_at_k"]
print("primary:", declaration["analysis"]["primary"])
print("rule:", declaration["analysis"]["rule"])
Table(["declared", "value"],
      [["GRPO iterations per run", budget["iterations"]],
       ["otherwise", "the band study's setting: " + ", ".join(
           f"{k} {v}" for k, v in declaration["setting"].items())],
       *[[f"departure: {k}", why] for k, why in declaration["departures"].items()],
       ["random arm's rate of a 1", declaration["random_rate"]],
       ["scoring", f"{scoring['problems']} test problems x {scoring['draws']} draws, once per run, "
                   "paired with the instruct model"],
       ["pass@k (third part)", f"{later['problems']} test problems x {later['draws']} draws, "
                                f"k = 1..{later['k_max']}: {', '.join(later['policies'])}"]])

# %% [markdown]
# **The plan.** The study runs in three parts, each stamped when it starts: the first half
# scores the instruct model and trains one seed of each arm, the second half the other
# four runs, and a third part draws 64 answers per problem for pass@k. The times below are
# estimates from the recorded run's speed on two CPU cores (`learn controls --dry-run`
# prints them without computing anything):

# %%
print(control_declaration.plan_text(declaration, identity=False))

# %% [markdown]
# To run it, on a quiet machine, from a clean checkout:
#
# ```bash
# python -m verifiable_grpo learn controls-first --out runs/learn --export
# python -m verifiable_grpo learn controls-second --out runs/learn --export
# python -m verifiable_grpo learn controls-pass-at-k --out runs/learn --export
# ```
#
# Whatever it shows, every arm's record is published; if a control lifts the model as much
# as the verifier does, this chapter says that the reward's content was not what taught it.
#
# ## The first half
#
# Every run below trained from the instruct model for the declared 34 iterations and was
# scored once on the same 1,600 sampled test answers as the instruct model (the same
# problems, draws and sampling seeds), so each row is directly comparable with the
# instruct model's per-draw success.

# %%
halves = control_reading.halves_recorded()
Table(["half", "arm", "seed", "per-draw success", "minus the instruct model",
       "minutes, instruct model to test score"],
      control_reading.runs_rows(halves))

# %%
show(taught_plots.plot_control_training(
    [run for half in halves.values() for run in half["runs"].values()]))

# %% [markdown]
# **First half.** Against the instruct model's 0.114 per draw, the run paid by the verifier
# reached 0.456 (+0.342), the run paid by a fair coin 0.101 (-0.014) and the run paid for
# well-formed JSON 0.103 (-0.011). The format run learnt what it was paid for: its
# malformed answers fell from 207 to 7 of 1,600, yet its right answers went from 183 to
# 165, so a repaired format did not repair the sums. The figure shows, for every run, what
# the verifier would have paid its samples: it rose for the verifier's run and stayed near
# its start for both controls, although the coin paid about half of the random run's
# answers all along. Both controls still moved away from the instruct model (their exact
# KL grew): a reward that says nothing about the answer does change the policy, only not
# towards right answers. These are single seeds. The declared rule reads the arms averaged
# over their seeds, with intervals, once the second half's four runs exist.
#
# ## The 15-minute run

# %%
fifteen = control_reading.fifteen_minute_run(halves, declaration)
Table(["the declared secondary: verifier-1234", "value"],
      control_reading.fifteen_minute_rows(fifteen))

# %% [markdown]
# **The 15-minute run.** The declaration named verifier-1234 as the run that should take
# the instruct model to its test score within 15 minutes with a gain of at least +0.3 per
# draw. Its gain is +0.342 [+0.287, +0.396], so that target is met. It took 20.1 minutes
# (16.5 of training, 3.4 of scoring), so the time target is not: its iterations averaged
# 29.1 s against the recorded run's 20.3 s, because other work shared the two cores while
# it trained. The record does not show a 15-minute run, and this book does not claim one.
#
# ## Both halves: the declared test
#
# With the second half's four runs, every arm has its declared seeds, and the declared
# analysis can run: each arm's per-draw success averaged over its seeds problem by problem,
# then each arm against the instruct model and the verifier's arm against each control,
# paired by problem, with a bootstrap over the 200 problems.

# %%
combined = control_study.recorded("controls")
show(taught_plots.plot_controls(combined["analysis"]))

# %%
Table(["declared contrast", "per-draw difference", "95% interval", "above 0"],
      control_reading.contrast_rows(combined))

# %% [markdown]
# **Both halves.** Averaged over its seeds, the verifier's arm reached 0.455 per draw (its
# three seeds from 0.438 to 0.471), the coin's arm 0.117 (0.101 to 0.134) and the format
# arm 0.137 (0.103 to 0.171), against the instruct model's 0.114. The verifier's arm beat
# the random arm by +0.338 [+0.294, +0.382] and the format arm by +0.318 [+0.275, +0.362]:
# both intervals lie above zero, so by the rule declared before any run, the verifier's
# reward is what taught the model. The coin taught nothing measurable (+0.003 [-0.020,
# +0.026] against the instruct model). The format reward did teach a little (+0.023
# [+0.006, +0.040]), almost all of it in one of its two seeds: a model that writes its
# answer well-formed more often is right a little more often, but that is about a fifteenth of
# what the verifier's reward gave. Every arm's record is published, the controls included.
# The third declared part, 64 answers per problem for pass@k up to $k = 64$, has not run
# yet; until it has, this chapter's pass@k stops at the 8 stored draws.
#
#
# ## Exercise: pass@k without bias
#
# Write `pass_at_k(n, c, k)`: the unbiased estimate of pass@k from $c$ right answers among
# $n$ draws. Refuse a $k$ above $n$ (raise `ValueError`): $n$ draws cannot estimate it.
# The checker names the biased shortcut if you write it.

# %%
from verifiable_grpo.exercises.pass_at_k import check_pass_at_k


def pass_at_k(n, c, k):
    raise NotImplementedError  # your code here


check_pass_at_k(pass_at_k)

# %% [markdown]
# ````{admonition} Worked solution
# :class: dropdown
# Count the subsets of $k$ draws with no right answer, as a product so
# that nothing overflows:
#
# ```python
# def pass_at_k(n, c, k):
#     if not 1 <= k <= n:
#         raise ValueError(f"k must lie in 1..{n}")
#     if n - c < k:  # every subset of k draws holds a right one
#         return 1.0
#     none_right = 1.0
#     for i in range(n - c + 1, n + 1):
#         none_right *= 1 - k / i
#     return 1 - none_right
# ```
#
# Why the shortcut is biased: with one right answer in 8 draws and $k = 4$, half of the
# subsets of 4 draws hold the right one, so the estimate is 1/2; the shortcut
# $1 - (7/8)^4$ gives about 0.41. It pretends the draws were independent fresh tries at a
# known rate $c/n$, when they are the very draws we count: for $k = n$ it would still say
# $1 - (1 - c/n)^n < 1$ for a problem the model has already solved.
# ````
