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
# # GRPO on a pretrained model
#
# Every chapter so far trained the project's own 2.7M-parameter base. Here a real
# pretrained model, SmolLM2-135M-Instruct, learns under GRPO on a CPU, and gets better at
# problems it never trained on.
#
# You will learn:
# - why GRPO can only amplify what a model already does sometimes, and how to predict,
#   from a model's success rate, how many of its groups will teach it anything;
# - how to **screen** a task before spending an hour of CPU on it, with a rule fixed in
#   advance;
# - how to read a GRPO run on a pretrained model: reward, held-out success, KL, entropy and
#   answer length, and failures split into format against arithmetic;
# - what a paired comparison on held-out problems says, and what it does not.
#
# The run used here, and everything it was compared with, was declared in code and
# committed before it started; the record says which commit it ran and when it started
# (`data/recorded/band/`).

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

from verifiable_grpo.book import band_plots
from verifiable_grpo.book.notebook import Table, show
from verifiable_grpo.part1 import band_study
from verifiable_grpo.task import small_sums

screen = band_study.recorded("screen")
band = band_study.recorded("band")

# %% [markdown]
# ## Why a task must be in the model's band
#
# GRPO's advantage for response $i$ of a group is its reward minus the group's mean reward,
# divided by the group's standard deviation. If every response of the group gets the same
# reward, every advantage is exactly zero, and so is the group's whole contribution to the
# gradient (the KL term aside). With a reward of 0 or 1 and a per-draw success $p$ for the
# prompt, $G$ independent draws are all wrong with probability $(1-p)^G$ and all right with
# probability $p^G$, so the group carries a learning signal with probability
#
# $$s(p, G) = 1 - p^G - (1-p)^G .$$
#
# Two consequences. If the model almost never solves a task ($p \to 0$), $s \approx Gp$:
# doubling the group only doubles a tiny number, and nearly all compute goes into groups
# that teach nothing. And a task the model already solves ($p \to 1$) is silent too. GRPO
# works in between, on problems the model *sometimes* solves: it raises the probability of
# what worked. A practical band is roughly $0.05 \le p \le 0.5$.
#
# SmolLM2-135M-Instruct almost never solves StockArithmetic (five numbers in prose): after
# a 32-update warm start its per-draw success was 0.013, and 95 % of its groups were silent
# (chapter 10). Move the sliders to see where the recorded starting points sit.

# %%
marks = band_plots.band_marks()
for name, rate in marks:
    print(f"{name}: p = {rate:.3f}, groups of 8 with a signal if every problem had that p: "
          f"{band_plots.signal_share(rate, 8):.2f}")

# %% [markdown]
# Move $p$ and $G$ here (in the built book, this runs in the page):
#
# <div class="vg-live" data-widget="signal" data-p="0.1" data-g="8"><em>(A live widget
# appears here in the built book.)</em></div>
# <script src="../../_static/vg-live.js"></script>
#
# In Jupyter or on Colab, the widget below draws the same curves on a log axis of $p$, with
# the recorded starting points marked.

# %% tags=["remove-output"]
band_plots.make_signal_widget(0.1, 8, marks)

# %% [markdown]
# ## A task in its band: small sums
#
# **SmallSums-v1** asks for one addition or subtraction of numbers from 0 to 20 ("What is
# 12 + 5?"), answered in StockArithmetic's JSON format and scored by the same strict
# verifier: `a + b` is the stock `a` after a delivery of `b`, `a - b` after a withdrawal.
# The prompt is the model's own chat template with two worked examples as earlier turns
# (a *2-shot* prompt), which shows the format without any training:

# %%
example = small_sums.splits()["test"][0]
for turn in small_sums.messages(example["statement"]):
    print(f"{turn['role']:>9}: {turn['content']!r}")

# %% [markdown]
# The family has 672 problems; two are the worked examples, and 616 of the others are drawn
# once into disjoint splits: 64 for the screen, 256 to train on, 96 for a held-out curve and
# 200 for the one test.
#
# ## The screen, declared before it ran
#
# Before an hour of training, a minute of measurement: the instruct model as it is, on the
# 64 screen problems, one greedy answer and 4 sampled answers each. The rule, fixed in code
# before the screen ran: go ahead when $0.05 \le p \le 0.5$ and the greedy answer is right
# more often than a sampled one (the model's most likely answer is often right, but sampling
# spreads probability onto wrong ones: exactly what GRPO's sharpening removes first).

# %%
Table(["screen, 64 problems (an extension)", "per-draw success", "greedy", "groups of 8 with a signal",
       "passes?"],
      [["SmolLM2-135M-Instruct", screen["per_draw"], screen["greedy"],
        screen["signal_share_g8"], "yes" if screen["passed"] else "no"]], digits=3)

# %% [markdown]
# The estimated share of informative groups (0.25) is lower than $s(\bar p, 8)$ at the
# pooled rate: the successes are concentrated on some problems, and a problem the model
# never solves stays silent whatever the pooled rate says. The exercise at the end makes
# that precise. To rerun the screen yourself (about a minute on a laptop once the model is
# converted):
#
# ```bash
# python -m verifiable_grpo learn band-screen --out runs/mine --exploratory
# ```
#
# `--exploratory` labels your run as such: a recorded run must start on a clean, committed
# tree, and stamps the commit and its start time before it computes anything.
#
# ## The run
#
# GRPO as in chapter 6, unchanged: clipped surrogate, the exact KL on every visited prefix
# with $\beta = 0.02$, population-std advantages, two AdamW updates per rollout set, the
# captured log-probabilities checked against full rescoring (within $2\times10^{-4}$) before
# the updates. The policy and the frozen reference both start as the instruct model. The
# declared budget:

# %%
Table(["prompts per iteration", "G", "iterations", "updates", "learning rate", "beta", "clip"],
      [[band["setting"][k] for k in ("prompts_per_iteration", "group_size", "iterations")]
       + [2 * band["setting"]["iterations"], f"{band['setting']['learning_rate']:.0e}",
          band["setting"]["kl_coefficient"], band["setting"]["clip_epsilon"]]])
print(f"training: {band['train_seconds'] / 60:.0f} minutes on a 2-core CPU; "
      f"started {band['started']['started_at']} at commit {band['started']['git_commit'][:12]}"
      f" (clean tree: {band['started']['clean_tree']})")

# %%
show(band_plots.plot_band_curves(band))

# %% [markdown]
# **What a rollout set costs.** The run took about 0.6 s per sampled response on two CPU
# cores, because every rollout set goes through one padded batch with a KV cache, each prompt
# read once for its 8 answers. The same rollout set, timed in one process against TRL's
# `GRPOTrainer` on the same model, prompts and settings (`python -m verifiable_grpo bench
# band`):

# %%
from verifiable_grpo.core.config import read_json, repo_root

speed = read_json(repo_root() / "data" / "recorded" / "bench" / "band.json")
Table(["arm (4 prompts x G = 8, two updates)", "seconds per rollout set", "seconds per response"],
      [[arm["arm"], f"{arm['median_seconds']['total']:.1f}",
        f"{speed['seconds_per_response'][arm['arm']]:.2f}"] for arm in speed["arms"]])

# %% [markdown]
# ## The result, on problems it never saw
#
# The 200 test problems were scored once, after training: one greedy answer and 8 sampled
# answers per problem, for the instruct model and for the trained policy, with the same
# seed for the same (problem, draw). The primary metric is per-draw success, compared
# problem by problem (each problem's 8 draws before against its 8 after), with a bootstrap
# over problems for the 95 % interval.

# %%
rows = []
for mode, name in (("sample", "per-draw success (primary)"), ("greedy", "greedy pass@1")):
    r = band["paired"][mode]
    rows.append([name, f"{r['first_rate']:.3f}", f"{r['second_rate']:.3f}",
                 f"{r['difference']:+.3f} [{r['low']:+.3f}, {r['high']:+.3f}]",
                 f"{r['mcnemar_p']:.1g}"])
Table(["SmallSums-v1 test, 200 problems (an extension)", "instruct model", "after GRPO",
       "paired difference [95%]", "McNemar p (draw 0)"], rows)

# %%
Table(["sampled test answers (an extension)", "right", "wrong format", "wrong number"],
      [[side] + [band["failures"][side][k] for k in ("right", "format", "arithmetic")]
       for side in ("before", "after")])

# %%
Table(["per-draw success by kind (an extension)", "instruct model", "after GRPO"],
      [[kind, v["before"], v["after"]] for kind, v in band["by_population"].items()], digits=3)

# %% [markdown]
# Answers to the same test problems (first draw, same seed) before and after, problems
# whose outcome changed first:

# %%
Table(["problem", "instruct model", "after GRPO"], band_plots.completions(band, 8))

# %% [markdown]
# **What it shows.** On 200 problems it never trained on, the trained policy's sampled
# answers are right 0.630 of the time against the instruct model's 0.114: a paired
# difference of +0.516, with a 95 % interval of [+0.462, +0.569]. Its greedy answer is right
# on 0.690 of them against 0.205. The held-out curve rose from the first checkpoint on and
# was still creeping up at the end. The gain is mostly arithmetic, not format: answers the
# verifier refused as malformed fell from 207 to 16 of 1,600, wrong numbers from 1,210 to
# 576, and the wrong numbers that remain are more often near misses (the table below).
#
# **What it does not show.** This is one run, with one seed and one learning rate, so the size
# of the gain is this run's. The band is narrow and easy: numbers up to 20, one operation.
# The exact KL to the instruct model climbed through the run: its 10-iteration mean ended at
# 0.21 nats per answer token, and single iterations reached 0.34 (the KL panel above). The
# entropy of an answer token fell by more than half: much of what GRPO did here is
# sharpen the model onto answers it could already produce, which is exactly what the
# screen's greedy-versus-sampled gap predicted. On StockArithmetic, outside the model's
# band, the same trainer taught it nothing (chapter 10).

# %%
Table(["how the wrong numbers were wrong", "instruct model", "after GRPO"],
      band_plots.wrong_numbers(band))

# %% [markdown]
# ## Exercise: how many groups will teach?
#
# The screen gave each problem its own success rate. Write `informative_share(rates, G)`:
# the expected share of groups of $G$ draws that carry a signal, given the per-problem
# per-draw success rates `rates`. Then compare it with $s(\bar p, G)$ at the pooled rate.

# %%
from verifiable_grpo.exercises.band_signal import check_informative_share


def informative_share(rates, group_size):
    raise NotImplementedError  # your code here


check_informative_share(informative_share)

# %% [markdown]
# ````{admonition} Worked solution
# :class: dropdown
# The signal probability is not linear in $p$, so it must be averaged
# over problems, not computed at the average:
#
# ```python
# def informative_share(rates, group_size):
#     return sum(1 - p**group_size - (1 - p)**group_size for p in rates) / len(rates)
# ```
#
# On the screen's rates this gives the 0.25 in the table above, while the pooled rate of
# 0.098 would promise about 0.56: half of the promised signal is missing, because most
# successes come from a few problems the model already half-knows.
# ````
