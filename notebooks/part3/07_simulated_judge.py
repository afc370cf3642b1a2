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
# # Lab 6 (model-free part): a biased judge, and the statistics of small suites
#
# When no program can check an answer, a model is often asked to judge which of two
# answers is better. Such judges prefer the answer shown first ({term}`position bias <Position bias>`) and the longer answer
# ({ref}`Zheng et al. 2023 <ref-llm-judge>`).
#
# **What you will learn.** How position and length bias distort a judge's win rate, how
# much swapping the order repairs, and how a length-controlled estimate
# ({ref}`Dubois et al. 2024 <ref-length-controlled>`) removes the rest; then the statistics
# of a small suite: Wilson and bootstrap intervals, the exact McNemar test and
# Benjamini-Hochberg ({ref}`1995 <ref-bh>`) across categories.
#
# The sixth lab of a course module on LLM post-training ({ref}`the post-training module <ref-module>`) compares a base and an instruct checkpoint on a
# 40-item behavioural suite (the previous chapter), then simulates a biased judge. This
# chapter covers what runs without a model: the **simulated judge**, whose position and
# length biases we can dial, and the **statistics** used on the suite's scores. Those
# statistics are the package's `verifiable_grpo.evaluation.statistics`, which Parts I and
# II use too.
#
# **What is measured.** The judge's true, first-position, second-position, swap-averaged
# and length-controlled win rates. Then Wilson and bootstrap intervals, an exact McNemar
# p-value and Benjamini-Hochberg adjusted p-values, computed on counts that the published
# lab reports for its suite.

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

import numpy as np

from verifiable_grpo.book import lab_plots
from verifiable_grpo.book.notebook import Table, show
from verifiable_grpo.evaluation import statistics as st
from verifiable_grpo.part3 import labs
from verifiable_grpo.part3.judge_lab import judge

recorded = labs.recorded("judge")
print(labs.record_line("judge"))

# %% [markdown]
# ## A judge with two biases
#
# Each of 400 comparisons has a latent quality gap $q \sim N(0,1)$ (A is truly better
# when $q > 0$) and a length gap $\ell \sim N(0.8, 1)$ (A is usually longer). The judge
# prefers A when
#
# $$q + 0.4\,\ell + 0.5\,s > 0,$$
#
# where $s = +1$ if A is shown first and $s = -1$ if it is shown second. Showing both
# orders and averaging the two verdicts removes the $\pm 0.5$ position term on average. It
# leaves the $0.4\,\ell$ term untouched, because A is just as long in both orders. A
# logistic regression of the 800 verdicts on $[1, \ell, s]$ estimates the win rate the
# judge would report at $\ell = 0$, $s = 0$: $\sigma(w_0)$, a "length-controlled" rate.
# It is only as good as its model. This judge is a threshold rule, not a logistic one.

# %%
metrics = recorded["metrics"]
Table(["true", "A first", "A second", "swap average", "length-controlled"],
      [[metrics[k] for k in ("true_win", "first", "second", "swapped", "length_controlled")]],
      digits=[3, 3, 3, 3, 4])

# %% [markdown]
# Drawn against the truth (the dashed line): look at how far each order alone moves the
# judge, and how close the two corrected rates come back to the line.

# %%
show(lab_plots.plot_judge_win_rates(metrics))

# %% [markdown]
# **Reading.** A is truly better in 201 of 400 pairs (0.502). Shown first, it wins
# 0.755; shown second, 0.420. The swap average, 0.588, still overstates A by 8.5 points (235 against 201 of 400):
# that is the length preference. The logistic estimate lands below the truth, at 0.4655.
#
# *A difference from the published lab, stated.* The published text prints 0.466 for the last figure.
# It fits the same logistic model with a quasi-Newton solver that stops when the
# gradient is below $10^{-5}$. Our Newton iteration runs to the exact maximum-likelihood
# point, where the value is 0.465499... The exact optimum sits on the rounding boundary,
# so the solver's stopping point decides the third decimal. The other four rates
# reproduce exactly.

# %% [markdown]
# ## Intervals for a small suite
#
# **Wilson.** For $k$ successes in $n$ trials, the normal test accepts the proportion $p$
# when $|\hat p - p| \le z\sqrt{p(1-p)/n}$. Squaring gives a quadratic in $p$. Its two
# roots are the interval
#
# $$\frac{\hat p + \frac{z^2}{2n} \pm z\sqrt{\frac{\hat p(1-\hat p)}{n} + \frac{z^2}{4n^2}}}{1 + \frac{z^2}{n}}.$$
#
# At $k = 0$ the upper end is $z^2/(n + z^2)$. That is 0.434 for $n = 5$: zero successes
# in five is weak evidence that the rate is zero.
#
# **Percentile bootstrap.** Resample the $n$ items with replacement 10,000 times,
# recompute the mean each time, and take the 2.5th and 97.5th percentiles. With all-zero
# scores, every resample is all zero, and the interval collapses to $[0, 0]$. Resampling
# cannot show an uncertainty the sample never displayed.
#
# **Exact McNemar.** Two models scored on the same items differ only on the *discordant*
# items. If neither model is better, each discordant item favours either model with
# probability 1/2. The count that favours one of them is then Binomial($m$, 1/2), with $m$
# the number of discordant items. The two-sided p-value is $2P(X \le \min(k, m-k))$,
# capped at 1. The published run reports that the instruct model passes 5 items the base fails,
# and none the other way round:

# %%
rows = [[f"{k}/{n}", *st.wilson_interval(k, n)] for k, n in ((0, 5), (0, 10), (10, 10), (10, 40), (15, 40))]
Table(["successes", "Wilson low", "Wilson high"], rows, digits=3)

# %%
print("exact McNemar, 5 vs 0:", st.exact_mcnemar(5, 0), "| 8 vs 3:", round(st.exact_mcnemar(8, 3), 4))

# %% [markdown]
# The base model passes only the ten benign items (positions 21-30 of the suite). So its
# overall score vector is known exactly, and with the published shared generator
# (`default_rng(10)`, ten category calls before it), our bootstrap reproduces its printed
# interval for the base model's overall score, [0.125, 0.400]. The instruct model's
# vector depends on *which* five format items passed, and the published text does not say. Its
# intervals cannot be re-derived, and we do not guess them.

# %%
rng = np.random.default_rng(10)
for n in (10, 10, 10, 10, 10, 10, 5, 5, 5, 5):
    st.percentile_bootstrap(np.zeros(n), rng)
base = np.array([0] * 20 + [1] * 10 + [0] * 10, dtype=float)
low, high = st.percentile_bootstrap(base, rng)
print(f"base overall: {base.mean():.3f} [{low:.3f}, {high:.3f}]")

# %% [markdown]
# **Many categories at once.** Five categories give five tests. Reporting only the
# smallest p-value overstates the evidence. Benjamini-Hochberg sorts the $m$ p-values,
# scales the $i$-th smallest by $m/i$, and makes the result monotone, which controls the
# expected share of false discoveries. From the published category table, only *format*
# has discordant items (5 favouring instruct). Each of the other categories has equal
# pass vectors for both models, so its p-value is 1:

# %%
pvalues = [st.exact_mcnemar(5, 0), 1.0, 1.0, 1.0, 1.0]
adjusted, reject = st.benjamini_hochberg(pvalues, alpha=0.05)
Table(["category", "exact p", "BH adjusted", "reject at 0.05"],
      [[c, p, a, bool(r)] for c, p, a, r in zip(["format", "task", "benign", "refuse", "abstain"],
                                                pvalues, adjusted, reject)], digits=4)

# %% [markdown]
# ## Exercise with a checker: Benjamini-Hochberg adjusted p-values
#
# Write `my_bh(pvalues)`: a list of $m$ p-values in; the Benjamini-Hochberg adjusted
# p-values out, in the input order. Sort them, scale the $i$-th smallest by $m/i$, then walk
# from the largest down keeping a running minimum, so that no adjusted value exceeds the
# next larger one's. The checker names the mistake; a worked solution is hidden below.

# %%
def my_bh(pvalues):
    raise NotImplementedError("replace this line with your code")

# %%
from verifiable_grpo.exercises import check_benjamini_hochberg

result = check_benjamini_hochberg(my_bh)

# %% [markdown]
# ```{admonition} Worked solution
# :class: dropdown
# The running minimum is the step-up: a hypothesis is rejected whenever some larger
# p-value clears its own, larger threshold.
# ```

# %% tags=["hide-input"]
def solution_bh(pvalues):
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted, running = [0.0] * m, 1.0
    for rank in range(m, 0, -1):
        i = order[rank - 1]
        running = min(running, pvalues[i] * m / rank)
        adjusted[i] = running
    return adjusted


result = check_benjamini_hochberg(solution_bh)

# %% [markdown]
# ## Exercises
#
# **1. (measured, live)** Set the position bias to 0 and run the judge again. Which
# rates change, and does the swap average now equal the truth?
#
# ```{admonition} Solution
# :class: dropdown
# Without the position term, both orders give the same verdict, so first = second =
# swap average. The cell below shows all three at 241 of 400, still far above the true 0.502:
# swapping fixes position bias and nothing else. The length term is untouched.
# ```

# %%
no_position = judge.simulate_judge(position_bias=0.0)
print(" ".join(f"{k} {no_position[k]:.3f}" for k in ("true_win", "first", "second", "swapped")))

# %% [markdown]
# **2. (by hand)** The published text gives a McNemar example of 8 discordant items one
# way and 3 the other. Compute the exact p-value.
#
# ```{admonition} Solution
# :class: dropdown
# $m = 11$, $\min(8, 3) = 3$. $P(X \le 3) = (1 + 11 + 55 + 165)/2^{11} = 232/2048$, and
# doubling it gives $464/2048 = 0.2266$. That matches the cell above. Eight against three
# looks lopsided, but it is well within what chance produces on eleven items.
# ```
#
# **3. (by hand)** Why does the Wilson interval for 10/10 end exactly at 1, while its
# lower end is 0.722 and not 1?
#
# ```{admonition} Solution
# :class: dropdown
# With $\hat p = 1$, the square root reduces to $z/(2n)$. The two roots are
# $\big(1 + \frac{z^2}{2n} \pm \frac{z^2}{2n}\big)/(1 + z^2/n)$, that is $1$ and
# $n/(n + z^2) = 10/13.84 = 0.722$. The interval is lopsided because the proportion
# cannot exceed 1.
# ```
