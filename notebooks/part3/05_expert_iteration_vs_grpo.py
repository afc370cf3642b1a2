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
# # Lab 5: success-only SFT against GRPO, and a verifier that can be gamed
#
# **What you will learn.** How {term}`expert iteration` ({ref}`Anthony et al. 2017 <ref-expert-iteration>`) and {term}`GRPO` use the same verifier differently; why GRPO's
# group mean is a leave-one-out {term}`baseline <Baseline>`; why its groups fall silent as
# the policy improves; what the KL coefficient buys; and how a policy learns exactly what a
# flawed verifier accepts.
#
# The chapter follows the fifth lab of a course module on LLM post-training
# ({ref}`the post-training module <ref-module>`). Both methods start
# from the same noisy digit-addition policy used in Lab 4. Both learn
# from the same exact verifier: the reply must equal the sum. **Expert iteration** samples,
# keeps what the verifier accepts, and fine-tunes on it. **GRPO** samples groups of eight
# answers per prompt and pushes each answer up or down according to how it compares with
# its own group. A third run gives GRPO a flawed verifier that accepts any reply *containing*
# the answer. That run shows a policy learning exactly what its checker accepts
# ({term}`reward hacking`).
#
# **What is measured.** For expert iteration: kept samples, covered prompts, accuracy and
# KL per round. For GRPO: batch reward, the fraction of groups with no task signal
# (zero variance), sampled exact accuracy, sequence KL to the reference, mean length, and
# an independent pass rate under the training verifier. All of it is read from
# `data/recorded/part3/expert-iteration.json`, which reproduces the published
# figures digit for digit. Those digits belong to one kind of processor: the runs sample
# thousands of tokens, and on another CPU a single draw that falls the other way late in a
# run moves every row after it (one Intel machine ended the gamed-verifier run at 79.6 %
# accuracy instead of 77.8 %). The conclusions below hold on any CPU. The 100 prompts
# are shared by training and evaluation, so this measures reshaping a policy on a fixed
# task, not generalisation.

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

import torch
from IPython.display import display
from matplotlib.figure import Figure

from verifiable_grpo.book.notebook import Table, show
from verifiable_grpo.part3 import labs
from verifiable_grpo.part3.expert_iteration_lab import group_relative as gr

record = labs.recorded("expert-iteration")
lab = record["metrics"]
print(labs.provenance_line("expert-iteration"))
print("parameters:", lab["policy_parameters"], "| reference sampled:", lab["reference"],
      "| greedy accuracy:", lab["reference_greedy_accuracy"])

# %% [markdown]
# ## Sample, verify, keep
#
# Each round draws 8 samples for every one of the 100 prompts. It keeps the exact-correct
# ones and takes 200 SFT steps on them. If a prompt has per-sample success probability
# $p$, it contributes at least one kept sample with probability $1-(1-p)^k$ for $k$
# samples. That is the same formula as best-of-n success with a perfect verifier. A prompt
# the policy never solves gives no signal at all. Here every prompt is covered from the
# first round, because the reference is noisy but never hopeless. That is why expert
# iteration does so well on this task.

# %%
Table(["round", "kept", "covered prompts", "accept rate", "task accuracy", "KL"],
      [[r["round"], r["accepted"], r["covered_prompts"], r["accept_rate"], r["accuracy"], r["kl"]]
       for r in lab["expert_iteration"]], digits=3)

# %% [markdown]
# ## The group baseline, and when a group teaches
#
# For a group of $G$ rewards $r_1, \dots, r_G$ with mean $\bar r$, the advantage of answer
# $i$ compares it with its group. Write $\bar r_{-i}$ for the mean of the *other* $G-1$
# rewards. Then $\bar r = \frac{r_i + (G-1)\bar r_{-i}}{G}$, so
#
# $$r_i - \bar r = \frac{G-1}{G}\,\big(r_i - \bar r_{-i}\big).$$
#
# Subtracting the group mean is the same as subtracting a **leave-one-out** baseline and
# scaling by $(G-1)/G$. The leave-one-out baseline does not depend on answer $i$'s own
# sample, so it adds no bias to the policy gradient. The constant factor only rescales
# the step. The published lab then divides by the group's *sample* standard deviation
# (denominator $G-1$) plus $10^{-6}$. Part I divides by the *population* standard
# deviation. The two differ by the factor $\sqrt{(G-1)/G}$: 0.935 for $G = 8$.
#
# A group whose rewards are all equal has advantage exactly zero. The published lab enforces
# this with an explicit branch, not with the $10^{-6}$. With independent draws of success
# probability $p$, a group is **mixed** (it has at least one success and at least one
# failure) with probability
#
# $$P(\text{mixed}) = 1 - P(\text{all succeed}) - P(\text{all fail}) = 1 - p^G - (1-p)^G.$$
#
# It peaks at $p = 1/2$ and vanishes as $p \to 0$ or $p \to 1$. As GRPO improves a policy,
# more of its groups go silent.

# %% [markdown]
# **Try it.** The live widget of {doc}`GRPO on a pretrained model <../part1/12_pretrained_model>`
# computes this same probability, $1 - p^G - (1-p)^G$, in the page: move $p$ and $G$ there and watch a
# group go silent as $p$ nears 0 or 1.

# %% [markdown]
# ## The update and its KL estimate
#
# Each of 150 iterations samples 32 prompts (with replacement) times $G = 8$ answers and
# freezes the old and reference log-probabilities. It then takes two Adam steps on the
# clipped surrogate minus $\beta$ times the **k3** estimate of the KL
# ({ref}`Schulman 2020 <ref-kl-approx>`). The objective is
# averaged over each answer's tokens, then over answers. With $u = \pi_{\text{ref}}/\pi_\theta$
# on a sampled token, $k3 = u - \log u - 1 \ge 0$, and its expectation under $\pi_\theta$
# is $\mathrm{KL}(\pi_\theta \| \pi_{\text{ref}})$, because $E_{\pi_\theta}[u] = 1$.
# Part I instead computes that KL exactly over the whole vocabulary at every prefix. For
# $u = 0.8$, k3 is:

# %%
print(f"k3(u=0.8) = {float(gr.k3(torch.log(torch.tensor(0.8, dtype=torch.float64)))):.4f}"
      f"  (the plain log-ratio -log u is {-torch.log(torch.tensor(0.8)).item():.3f})")

# %% [markdown]
# ## Three GRPO runs
#
# Each run makes 150 iterations from the same start: with the exact verifier at
# $\beta = 0.04$ and at $\beta = 0.5$, and with the substring verifier at $\beta = 0.04$.
# The figure follows accuracy, KL drift, answer length and the share of silent groups.

# %%
names = {0: "exact, beta 0.04", 1: "exact, beta 0.5", 2: "substring, beta 0.04"}
figure = Figure(figsize=(7.5, 5.5))  # the column's width: its text stays readable
axes = figure.subplots(2, 2)
for i, run in enumerate(lab["grpo"]):
    records = run["records"]
    for key, ax in zip(("accuracy", "kl", "length", "zero_variance"), axes.ravel()):
        points = [(r["iteration"], r[key]) for r in records if r[key] is not None]
        ax.plot(*zip(*points), "o-", label=names[i])
        ax.set(xlabel="iteration", ylabel=key)
        ax.grid(alpha=0.2)
axes[0, 0].legend(fontsize=9)
figure.suptitle("GRPO on the digit policy: accuracy, drift, length, silent groups", fontsize=11)
figure.tight_layout()
display(show(figure))

# %% [markdown]
# The numbers behind the figure, every 25 iterations (click to show the table):

# %% tags=["hide-output"]
keys = ["sampled_reward", "zero_variance", "accuracy", "kl", "length", "verifier_reward"]
Table(["run", "iteration", "batch reward", "zero-variance", "exact accuracy", "KL", "length",
       "verifier pass"],
      [[names[i], r["iteration"], *[r[k] for k in keys]]
       for i, run in enumerate(lab["grpo"]) for r in run["records"][1:]], digits=3)

# %% [markdown]
# **Reading.** At $\beta = 0.04$, exact accuracy climbs from 0.478 to 0.963 with KL 0.629.
# At $\beta = 0.5$ it reaches 0.870 with KL 0.376: a stronger pull towards the reference
# costs task reward. The zero-variance fraction rises with accuracy, as the formula
# predicts. At iteration 125 of the first run, 81% of the groups carry no task signal.
#
# The substring run looks best by its own measure: 97.6% of its answers pass the checker
# it was trained on. But only 77.8% are correct, and mean length grows from 1.57 to
# 1.74 digits. The policy found longer strings that contain the answer:

# %%
print("accepted but wrong (prompt, reply, answer):", lab["grpo"][2]["accepted_but_wrong"])

# %% [markdown]
# Expert iteration (0.994, KL 0.734) beats all three GRPO runs here. That is not a general
# ranking. Every prompt is covered, so keeping successes wastes nothing, while GRPO's
# signal fades as its groups go silent. A task where most prompts start at $p \approx 0$
# would reverse the picture for expert iteration, and for GRPO too.

# %% [markdown]
# ## Try this: four more variants
#
# This lab has five variants. The first, no KL term, is exercise 2 below.
# The other four are recorded by one run, `python -m verifiable_grpo lab try-this`. Each
# has 150 iterations at $\beta = 0.04$ from the same reference, and its defaults
# reproduce the $\beta = 0.04$ run above bit for bit (the tests check it).
#
# **Dr. GRPO-like: no std scaling, and MAXLEN as the length denominator.** Advantages are
# $r - \bar r$ only, and each reply's token sum is divided by MAXLEN = 5 instead of by its
# own length.

# %%
tried = labs.recorded("try-this")["metrics"]["grpo"]
plain = tried["seeds"]["exact"][0]          # seed 41: the beta = 0.04 run above


def last(run):
    return run["records"][-1]


Table(["run (150 iterations)", "exact accuracy", "KL", "length", "zero-variance (last batch)"],
      [[name, last(run)["accuracy"], last(run)["kl"], last(run)["length"], last(run)["zero_variance"]]
       for name, run in (("sample std, token mean (the run above)", plain), ("r - mean, sum / MAXLEN", tried["dr_grpo"]))],
      digits=3)

# %% [markdown]
# The two end close together (0.954 against 0.963 accuracy, KL 0.596 against 0.629).
# Replies here are one or two digits long, so the length denominator can hardly matter.
# Without the std, a group's advantages are smaller where its spread is small: the odd
# one out in a group of eight gets $\pm 0.875$ instead of $\pm 2.47$. Near the end, when
# most mixed groups have a single outlier, the updates are smaller. That fits the slightly
# lower KL. One seed cannot separate 0.954 from 0.963 (the seeds below differ by up to 0.006).
#
# **Drop the silent groups and refill.** Keep only groups whose rewards differ, and draw 32
# fresh prompts at a time until 32 mixed groups are in hand (at most 8 draws per iteration).
# Every generated reply counts, kept or not.

# %%
refill = tried["refill"]
Table(["iteration", "plain: replies generated", "exact accuracy", "refill: replies generated",
       "exact accuracy", "draws that iteration", "silent share of its first draw"],
      [[a["iteration"], f"{a['generations']:,}", a["accuracy"], f"{b['generations']:,}", b["accuracy"],
        b["draws"], b["zero_variance"]]
       for a, b in zip(plain["records"][1:], refill["records"][1:])], digits=3)

# %% [markdown]
# Per update, refilling helps: 0.988 after 150 iterations against 0.963, because every
# group in every update now carries a task signal. Per generated reply, it costs. By
# iteration 150 four groups in five are silent, and the sampler needs 7 draws per
# iteration. The run generates 140,288 replies against 38,400, and at equal cost the plain run is
# ahead: 0.946 after 25,600 replies against 0.879 after 23,552. Whether refilling pays
# depends on what is scarce. Generation is the larger cost in LLM training, so the count
# matters as much as the accuracy.
#
# **G = 4 against G = 16, at 256 replies per iteration.** 64 prompts of 4, or 16 prompts of
# 16, against the 32 of 8 above.

# %%
Table(["groups x size", "exact accuracy", "KL", "zero-variance (last batch)"],
      [[f"{run['settings']['prompts_per_iteration']} x {run['settings']['group_size']}",
        last(run)["accuracy"], last(run)["kl"], last(run)["zero_variance"]]
       for run in sorted(tried["group_size"] + [plain], key=lambda r: r["settings"]["group_size"])],
      digits=3)

# %% [markdown]
# Final accuracy is 0.967, 0.963 and 0.959: the same within one seed's noise. What
# changes is where the signal comes from. With $G = 4$, 86 % of the last batch's groups
# are silent. With $G = 16$, only 44 % are, because a larger group is more likely to hold
# both a success and a failure ($1 - p^G - (1-p)^G$ grows with $G$). But it covers fewer
# prompts per iteration. On this task, where every prompt is easy by the end, the two
# effects cancel.
#
# **The exact checker against the substring checker, at three seeds.** Seed 41 is the
# run above. The repaired checker is the exact one.

# %%
Table(["seed", "exact checker: accuracy", "substring checker: accuracy", "its acceptance",
       "accepted but wrong", "mean length"],
      [[e["settings"]["seed"], last(e)["accuracy"], last(s)["accuracy"], last(s)["verifier_reward"],
        last(s)["verifier_reward"] - last(s)["accuracy"], last(s)["length"]]
       for e, s in zip(tried["seeds"]["exact"], tried["seeds"]["substring"])], digits=3)

# %% [markdown]
# At every seed, the substring checker ends accepting about 98 % of samples while 78 %
# to 83 % are exactly right. The gap of 0.14 to 0.20 is what the policy learned to
# exploit. Its replies grow longer (1.65 to 1.74 digits, against 1.45 with the exact checker).
# The exact checker ends at 0.963 to 0.969 at all three seeds. The size of the
# exploit varies with the seed, but it is there at every seed: the failure is the
# checker's, not a bad draw.

# %% [markdown]
# ## Exercise with a checker: the share of silent groups
#
# Write `my_silent_fraction(rewards)`: `rewards` is a float64 tensor `[P, G]` of 0/1
# rewards, one group per row. Return the share of groups whose rewards are all equal: the
# groups that give GRPO no signal (this chapter's silent-group fraction). The checker names
# the mistake; a worked solution is hidden below.

# %%
def my_silent_fraction(rewards):
    raise NotImplementedError("replace this line with your code")

# %%
from verifiable_grpo.exercises import check_silent_fraction

result = check_silent_fraction(my_silent_fraction)

# %% [markdown]
# ```{admonition} Worked solution
# :class: dropdown
# A group is silent when its largest and smallest reward agree: all wrong *or* all right.
# ```

# %% tags=["hide-input"]
def solution_silent_fraction(rewards):
    silent = rewards.max(dim=1).values == rewards.min(dim=1).values
    return silent.double().mean().item()


result = check_silent_fraction(solution_silent_fraction)

# %% [markdown]
# ## Exercises
#
# **1. (by hand)** For the group $[1, 0, 1, 0]$, compute the module's advantages and Part
# I's. Then check the leave-one-out identity for the first answer.
#
# ```{admonition} Solution
# :class: dropdown
# Mean 0.5. Sample std $\sqrt{(4 \cdot 0.25)/3} = 0.5774$, so the advantages are
# $\pm 0.5/(0.5774 + 10^{-6}) = \pm 0.866$. Population std is 0.5, giving
# $\pm 0.5/(0.5 + 10^{-8}) \approx \pm 1$. Leave-one-out for answer 1: the other three
# rewards average $1/3$, so $r_1 - \bar r_{-1} = 2/3$. Multiplied by $(G-1)/G = 3/4$,
# that gives $0.5 = r_1 - \bar r$. The cell below checks the module's function.
# ```

# %%
advantage, sd = gr.group_advantages_sample_std(torch.tensor([[1.0, 0.0, 1.0, 0.0]], dtype=torch.float64))
population, _ = gr.group_advantages_sample_std(torch.tensor([[1.0, 0.0, 1.0, 0.0]], dtype=torch.float64),
                                               epsilon=1e-8, correction=0)
print("sample std:", [round(a, 4) for a in advantage[0].tolist()],
      "| population std:", [round(a, 4) for a in population[0].tolist()])

# %% [markdown]
# **2. (measured: the lab's first "Try this", and Part I's convention)** Remove the KL
# term ($\beta = 0$), and separately replace the sample std by the population std at
# $\beta = 0.04$. Keep the same seed and budget. Which change moves the results more?
#
# ```{admonition} Solution
# :class: dropdown
# The recorded runs are in the table below, next to the published $\beta = 0.04$ run.
# Neither change moves the end point much. The population std multiplies every
# advantage by $1/0.935 = 1.07$. It ends at accuracy 0.966 and KL 0.639, against 0.963
# and 0.629. Dropping the KL term ends at 0.971 and 0.653. At $\beta = 0.04$ the KL
# penalty is already a weak pull compared with advantages of order 1. The $\beta = 0.5$
# run shows what a strong pull does: KL 0.376. With a single seed, differences of a
# few thousandths are within run-to-run noise. Running several seeds would be the next
# step before calling either change an effect.
# ```

# %%
rows = []
for label, run in [("module: sample std, beta 0.04", lab["grpo"][0]),
                   ("Part I: population std, beta 0.04", lab["variants"][0]),
                   ("no KL term, beta 0", lab["variants"][1])]:
    final = last(run)
    rows.append([label, final["accuracy"], final["kl"], final["length"], final["zero_variance"]])
Table(["run (150 iterations)", "exact accuracy", "KL", "length", "zero-variance (last batch)"], rows, digits=3)

# %% [markdown]
# **3. (by hand)** At iteration 125 the $\beta = 0.04$ run has zero-variance fraction 0.812
# and exact accuracy 0.958. If every prompt had success probability 0.958, what fraction
# of groups of 8 would be silent? Why is the measured fraction higher?
#
# ```{admonition} Solution
# :class: dropdown
# $p^8 + (1-p)^8 = 0.958^8 + 0.042^8 \approx 0.71$. The measured 0.81 is higher because
# accuracy is not uniform across prompts. Most prompts are near $p = 1$ (always silent),
# and a few are harder. The mean of $p^8 + (1-p)^8$ over prompts exceeds its value at the
# mean $p$, because $p^8 + (1-p)^8$ is convex in $p$ (Jensen). The batch also holds only 32
# groups, so 0.812 is itself noisy: 26 of 32.
# ```
