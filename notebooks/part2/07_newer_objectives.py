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
# # Newer objectives: CISPO, GMPO, SAPO, RLOO, REINFORCE and importance corrections
#
# The five arms of this part's study are not the end of the family. Configuration files of
# current engines (TRL 1.16, verl, OpenRLHF) name a further set of objectives, and each of
# them changes exactly one piece of GRPO: how a reward becomes an advantage (the
# *baseline*), how a token's log-probability enters the loss once the policy has moved (the
# *surrogate*), or how the trainer corrects for a sampler whose log-probabilities are not
# its own (*importance corrections*). The registry holds each as one more frozen entry, so
# they can be printed, hashed, trained and compared with TRL exactly like the study's arms.
#
# **What you will learn.**
# - Four baselines side by side: the group mean, leave-one-out (RLOO), a group mean scaled by
#   the whole batch's spread (REINFORCE++), and none at all (plain REINFORCE).
# - What each surrogate does to a token the policy has already moved: PPO's hard clip
#   drops it, CISPO keeps it with a capped weight, GMPO clips in log space inside a
#   geometric mean, SAPO fades it out smoothly, REINFORCE ignores the ratio.
# - What truncated and masked importance sampling (TIS, MIS) weigh, and which of these
#   entries TRL 1.16's `GRPOTrainer` can run as they are.
#
# - How each of them trains: nine recorded runs on the eight prompts where Part I's GRPO
#   learns, side by side with it.
#
# The tables are computed live, in float64, from the registry's own loss by autograd; the
# runs' section reads the recorded runs.

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

from IPython.display import display

from verifiable_grpo.book import family_widgets
from verifiable_grpo.book.notebook import Table, show
from verifiable_grpo.part2 import demos, newer_objectives

Table(*newer_objectives.entry_rows())

# %% [markdown]
# Each row differs from the study's `grpo` arm only in the columns it names. The papers:
# CISPO ({ref}`MiniMax 2025 <ref-cispo>`, with the cap 5 of {ref}`ScaleRL <ref-scalerl>`),
# GMPO ({ref}`Zhao et al. 2025 <ref-gmpo>`), SAPO ({ref}`Gao et al. 2025 <ref-sapo>`), RLOO
# ({ref}`Ahmadian et al. 2024 <ref-rloo>`), REINFORCE++ ({ref}`Hu 2025 <ref-reinforce-pp>`),
# REINFORCE ({ref}`Williams 1992 <ref-reinforce>`), and TRL's importance-sampling modes
# ({ref}`TRL <ref-trl>`). Adding them changed no fingerprint of the earlier entries: the
# registry hashes a new axis only where an entry sets it, so Part I's pinned objective and
# this part's treatment lock still verify.
#
# ## Baselines: what a reward is compared with
#
# A policy gradient pushes each answer's log-probability up in proportion to its advantage.
# Subtracting a baseline $b$ that does not depend on the answer leaves the expected gradient
# unchanged and lowers its variance. For $G$ answers with rewards $r_1..r_G$:
#
# | entry | advantage $A_i$ |
# |---|---|
# | `reinforce` | $r_i$ (no baseline) |
# | `reinforce_baseline` | $r_i - \bar r$ (the group mean) |
# | `rloo` | $r_i - \frac{1}{G-1}\sum_{j\ne i} r_j = \frac{G}{G-1}(r_i - \bar r)$ |
# | `grpo` | $(r_i - \bar r)/(\mathrm{std}(r) + 10^{-4})$, std of the group |
# | `reinforce_pp` | $(r_i - \bar r)/(\mathrm{std}_\text{batch} + 10^{-8})$, std over every answer of the batch |
#
# RLOO's baseline excludes the answer itself, so it is independent of that answer and the
# estimate stays unbiased; the group mean includes it and shrinks every advantage by
# $(G-1)/G$. GRPO divides each group by its own spread, so a prompt the policy nearly always
# solves gets advantages as large as a hard one; REINFORCE++ divides by one number for the
# whole batch and keeps their relative sizes. Without a baseline, a group where every
# answer is right still pushes all of them up. Two groups of four, one with one success and
# one with two:

# %%
groups = [[1, 0, 0, 0], [1, 1, 0, 0]]
table = newer_objectives.baseline_table(groups)
Table(["entry", "group 1: r=1", "group 1: r=0", "group 2: r=1", "group 2: r=0"],
      [[name, a[0][0], a[0][1], a[1][0], a[1][2]] for name, a in table.items()], digits=4)

# %% [markdown]
# `reinforce_pp` needs the whole batch, so a training loop that scores one group at a time
# cannot compute it: `objectives.with_advantages` refuses it by name and
# `objectives.batch_with_advantages` scores a rollout set at once.
#
# ## Per-token weights on policy
#
# On policy every ratio is 1 and the surrogates differ only in their slope there, which is
# 1 for all of them. The weights below (the derivative of minus the loss with respect to
# each token's log-probability, for the group of chapter 1: rewards $[1,0,1,0]$, lengths
# $[3,5,2,7]$) therefore differ only through the baseline and the reduction: `cispo` sums
# tokens over the batch like `dapo_token`, `gmpo`, `sapo` and the corrected entries equal
# `grpo` exactly.

# %%
weights = demos.token_weights([1, 0, 1, 0], [3, 5, 2, 7], newer_objectives.NEWER, max_length=8)
Table(["entry", "o1 (r=1, 3 tok)", "o2 (r=0, 5 tok)", "o3 (r=1, 2 tok)", "o4 (r=0, 7 tok)"],
      [[name] + [w + 0.0 for w in row] for name, row in weights.items()], digits=6)

# %% [markdown]
# ## Try it
#
# The figure is the static version for this group; the widget redraws it for the rewards and
# lengths you type when a kernel runs the page.

# %%
display(show(family_widgets.plot_token_weights([1, 0, 1, 0], [3, 5, 2, 7],
                                               newer_objectives.NEWER)))

# %% tags=["remove-output"]
# NBVAL_IGNORE_OUTPUT
# (the widget's saved state embeds a rendered PNG; the figure above is the checked fallback)
family_widgets.make_token_weight_widget(names=newer_objectives.NEWER)

# %% [markdown]
# ## Surrogates: a token the policy has already moved
#
# After the first update on a rollout set, a token's ratio $\rho = p_\text{cur}/p_\text{old}$
# leaves 1. Each surrogate gives that token a different gradient weight
# $w = -\partial\,\text{loss}/\partial \log p$:
#
# | surrogate | per-token loss | $w$ |
# |---|---|---|
# | clipped ratio (`grpo`) | $-\min(\rho A, \mathrm{clip}(\rho, 0.8, 1.2) A)$ | $\rho A$, or 0 once the clip binds on $A$'s side |
# | `cispo` | $-\mathrm{sg}(\min(\rho, 5))\,A \log p$ | $\min(\rho, 5)\,A$, never 0 |
# | `gmpo` | $-A \exp(\tfrac{1}{\|o\|}\sum_t \mathrm{clip}(\log\rho_t, -0.4, 0.4))$ | $A\,s/\|o\|$, 0 where the log clip binds |
# | `sapo` | $-\tfrac{4}{\tau}\,\sigma(\tau(\rho - 1))\,A$ | $4\sigma(1-\sigma)\,\rho A$: 1 at $\rho=1$, fading |
# | `reinforce` | $-A \log p$ | $A$ whatever $\rho$ |
#
# ($\mathrm{sg}$ is stop-gradient, $s$ GMPO's geometric-mean ratio of the response, $\sigma$
# the logistic function, $\tau = 1$ for $A > 0$ and $1.05$ otherwise.) The hard clip
# removes a moved token's gradient entirely; CISPO's authors argue that this silently drops
# rare, high-information tokens and keep every token with a bounded weight instead. GMPO
# takes the geometric mean so that one extreme token ratio moves the response's weight less
# than in an arithmetic mean. SAPO replaces the cliff by a smooth gate. The table is one
# token, $A = \pm 1$, a one-token response:

# %%
ratios = [0.5, 0.8, 1.0, 1.25, 2.0, 6.0]
rows = []
for advantage in (1.0, -1.0):
    for name, row in newer_objectives.ratio_weights(ratios, advantage).items():
        rows.append([f"{name}, A={advantage:+g}"] + [w + 0.0 for w in row])
Table(["surrogate"] + [f"rho={r:g}" for r in ratios], rows, digits=4)

# %% [markdown]
# Read the row `grpo, A=-1` to the right: PPO's clip only binds *below* for a negative
# advantage, so a token whose probability rose six-fold inside a wrong answer keeps weight
# $-6$, unbounded; CISPO's cap stops it at $-5$, SAPO's gate almost silences it. Read
# `grpo, A=+1` instead: from $\rho = 1.2$ on, a token of a right answer gets nothing.

# %%
display(show(family_widgets.plot_ratio_weights([0.3 + 0.02 * k for k in range(186)])))

# %% [markdown]
# ## Importance corrections: a sampler that is not the trainer
#
# Chapter 6 measured the gap between the log-probabilities the sampler recorded and the
# ones the trainer recomputes for the same tokens. TRL's corrections weigh each token's
# policy term by $w = p_\text{train}/p_\text{sample}$ (per token, or per response as the
# exponential of the summed log-gap), then either truncate it at a cap (TIS, `*_truncate`)
# or set it to 0 outside the interval (MIS, `*_mask`); the ratio inside the surrogate then
# divides by the trainer's log-probabilities, not the sampler's. For one response whose
# per-token log-gaps are $[0.1, -0.3, 1.5, 0.2]$ and TRL's cap 3:

# %%
gaps = [0.1, -0.3, 1.5, 0.2]
table = newer_objectives.behaviour_weight_table(gaps)
Table(["mode"] + [f"token {i + 1}" for i in range(len(gaps))],
      [[mode] + row for mode, row in table.items()], digits=4)

# %% [markdown]
# Token-level truncation caps the one token whose gap is large; the sequence modes see the
# response's summed gap, 1.5, a ratio of 4.48, so truncation sets every token to 3 and the
# mask (TRL's default) drops the whole response. `grpo_tis` and `grpo_mis` are the `grpo` arm
# with these two corrections. Between the book's float32 paths chapter 6 measured gaps near
# $10^{-6}$ per token, so there their weights are 1 to that precision and they train like
# `grpo`; with bfloat16 sampling the uncertain tokens moved by $10^{-1}$, and there the
# weights start to act.
#
# ## Which of these TRL 1.16 can run
#
# The comparison module maps each entry to `GRPOConfig` fields and refuses, by name, every
# part no field reproduces (rather than running an ordinary clipped loss in its place). The
# test suite feeds identical float64 tensors, ragged and split into three micro-batches, to
# our loss and to TRL's own `_compute_loss` for every entry that maps, and finds equal losses
# and gradients.

# %%
Table(*newer_objectives.trl_rows())

# %% [markdown]
# One convention to know when comparing with TRL: its `bnpo` normalises each micro-batch by
# that micro-batch's tokens and averages the micro-batches, while this book's loop treats the
# whole optimizer step as one micro-batch. The two agree with a single micro-batch;
# `objectives.response_weights(..., micro_batches=k)` gives TRL's convention.
#
# ## Each objective, trained
#
# Tables of weights say what an objective *would* do to a token. To see what it does to a
# policy, each entry above was trained where chapter I.6 watched GRPO learn: the same eight
# training prompts (warm-start success between 10 and 50 %), G = 8, learning rate
# $10^{-4}$, 60 iterations of two updates, the exact prefix KL with $\beta = 0.02$, and the
# same seeds. One thing changes per run: the entry's own part (its baseline, surrogate,
# aggregation or correction) replaces Part I's in `objectives.on_part1`, and everything
# else stays Part I's GRPO, which is the black curve and the first row. After training,
# every policy answers each prompt 32 times with the draw seeds that measured it before,
# so each run's success is paired with GRPO's prompt by prompt. The interval on a
# difference resamples the eight prompts (a prompt is the unit that varies), so it is wide:
# eight prompts can show a large effect, not a small one.

# %%
from verifiable_grpo.book import objective_plots
from verifiable_grpo.part1 import fixed_prompt_objectives, fixed_prompts

recorded_runs = fixed_prompt_objectives.recorded()["runs"]
grpo_run = fixed_prompts.recorded()["ours"]
objective_runs = {name: recorded_runs[name] for name in fixed_prompt_objectives.OBJECTIVES_RUN}
comparison = fixed_prompt_objectives.comparison(objective_runs, grpo_run)
Table(*objective_plots.comparison_table(comparison), digits=3)

# %%
display(show(objective_plots.plot_objective_runs(grpo_run, objective_runs, comparison)))

# %%
by_name = {row["objective"]: row for row in comparison}
same_as_grpo = [name for name in ("grpo_tis", "grpo_mis")
                if [p["after"] for p in objective_runs[name]["prompts"]]
                == [p["after"] for p in grpo_run["prompts"]]]
print("every run lifted every one of its 8 prompts:",
      all(row["prompts_improved"] == 8 for row in comparison))
print("same success as GRPO on every prompt:", same_as_grpo)
print("intervals that exclude 0:",
      [name for name, row in by_name.items()
       if row["difference_interval"][0] > 0 or row["difference_interval"][1] < 0])
print("lowest final entropy:", min(by_name, key=lambda n: by_name[n]["final_entropy"]),
      "| highest final exact KL:", max(by_name, key=lambda n: by_name[n]["final_exact_kl"]))

# %% [markdown]
# What the runs show, and what they cannot.
#
# - **Every objective learns here.** Each run lifted each of its eight prompts, and most
#   ended within a few points of GRPO. On prompts of middling difficulty with G = 8, nearly
#   every group mixes rewards, so any sensible baseline and surrogate finds the signal.
# - **The corrections are inert on a float32 sampler.** `grpo_tis` and `grpo_mis` reached
#   GRPO's success on every prompt: their weights were 1 to within $10^{-5}$, as chapter
#   II.6 predicted, so they changed only the last bits of the weights. Chapter II.6 repeats
#   them with a sampler that differs on purpose.
# - **Three intervals exclude zero** (the REINFORCE rows at another step size, as the next
#   section measures): plain REINFORCE above GRPO, GMPO and REINFORCE with
#   the group-mean baseline below it. Plain REINFORCE with rewards of 0 or 1 never pushes a
#   wrong answer down; it pushes right answers up and nothing else, and it ended with the
#   lowest entropy and the highest KL of all: it sharpened fastest onto the answers it
#   trains on. On eight training prompts that scores well. It is also the collapse of
#   diversity that costs on new problems, which these runs do not measure.
# - **Read the differences with one seed in mind.** The interval resamples the eight
#   prompts; it does not cover the run's own randomness, and each objective ran once. In
#   chapter II.6 a change that should not matter (sampling in bfloat16) moved GRPO's
#   success by a couple of points, so differences of that size are noise, and even the
#   three above would need several seeds per objective before anyone builds on them.
#
# ## One learning rate, several step sizes
#
# Every run above used the same learning rate and the same KL term, $\beta = 0.02$ times
# the exact prefix KL. That is fair to the optimiser and not to the objectives. The loss of
# a token is its advantage times something of the ratio, plus $\beta$ times the KL. An
# objective whose advantages are half GRPO's gives the KL term twice GRPO's relative weight,
# and AdamW, which divides each step by a running estimate of the gradient's size, does not
# undo that: it rescales the *sum* of the two terms, not their ratio. So the size of each
# objective's advantages acts as a step size against the KL term. The cell below measures
# it with each entry's own advantage rule, on groups of eight 0/1 rewards drawn at the
# eight prompts' warm-start success rates (exactly, by enumerating a group's successes; by
# a seeded simulation for REINFORCE++, whose rule sees the whole batch).

# %%
from verifiable_grpo.part1 import advantage_scale

scale_rows = advantage_scale.scales(fixed_prompt_objectives.OBJECTIVES_RUN, grpo_run)
# the result beside the name, so it stays on screen on a phone
Table(["objective", "minus GRPO", "scale relative to GRPO", "mean |A|",
       "mean |A| (mixed groups)"],
      [[r["objective"], f"{by_name[r['objective']]['difference']:+.3f}", f"{r['relative']:.2f}",
        f"{r['mean_abs']:.3f}", f"{r['mean_abs_mixed']:.3f}"]
       for r in scale_rows])

# %% [markdown]
# **What the comparison can say.** Five objectives reuse GRPO's advantages, so their
# comparison with GRPO is at one step size. The REINFORCE family does not: plain
# REINFORCE's advantages are 0.31 of GRPO's, the group-mean baseline's 0.42, RLOO's 0.48,
# and REINFORCE++'s 1.12. With a KL term about 2.4 times heavier relative to its advantages,
# the baseline's −0.090 against GRPO is as well explained by the step size as by the
# baseline or by noise. Plain REINFORCE ended +0.062 above GRPO *despite* a KL term about
# three times heavier, which makes "it sharpened fastest" a statement about its
# push-only-right-answers gradient rather than about a larger step. Neither difference is
# a property of the objective until the step is equalised.
#
# **The rerun that equalises it, declared before it runs.** For the four objectives whose
# scale is not GRPO's by construction (`advantage_scale.SCALE_MATCHED`), the same runs with
# $\beta$ multiplied by the objective's relative scale, so that advantage and KL stand in
# GRPO's ratio. Under AdamW that is the same update as rescaling the advantages to GRPO's
# size, except for the gradient-norm clip, which sees the unscaled gradient. The command is
# `python -m verifiable_grpo learn objectives --objectives --scale-matched --export`
# (about ten minutes on a 2-core CPU); its record will be
# `data/recorded/fixed-prompts/scale-matched.json`. It ran from a clean checkout of the
# commit that declared it; beside the runs at one $\beta$:

# %%
from verifiable_grpo.core.config import read_json, repo_root

matched = read_json(repo_root() / advantage_scale.RECORDED)
rows = []
for name, run in matched["runs"].items():
    one_beta = fixed_prompts.summary(recorded_runs[name])["trained_after"]
    relative = run["setting"]["kl_coefficient"] / fixed_prompt_objectives.SETTING.kl_coefficient
    rows.append([name, f"{relative:.2f}", f"{run['setting']['kl_coefficient']:.4f}",
                 f"{one_beta:.3f}", f"{fixed_prompts.summary(run)['trained_after']:.3f}"])
Table(["objective", "scale vs GRPO", "beta (scale-matched)", "success after, beta 0.02",
       "success after, scale-matched"], rows)

# %% [markdown]
# With the step equalised, the REINFORCE family's end points move by a few draws in either
# direction, about as much as two runs of one objective differ: the ordering in the table
# above is not an artefact of the step size, and plain REINFORCE's lead on these eight
# prompts survives it. One run per objective still cannot separate objectives whose end
# points lie this close.
#
# ## Exercise: CISPO's per-token loss
#
# Write `my_cispo(current, old, advantages, cap)` for float64 log-probabilities `[B, T]`
# (every token active) and advantages `[B]`. Return the per-token loss whose value is
# $-\min(\rho, \text{cap})\,A \log p$ and whose gradient with respect to `current` is
# $-\min(\rho, \text{cap})\,A$ on every token. The checker compares both and names the usual
# slips.

# %%
def my_cispo(current, old, advantages, cap):
    raise NotImplementedError("replace this line with your code")

# %%
from verifiable_grpo.exercises.cispo_loss import check_cispo_loss

result = check_cispo_loss(my_cispo)

# %% [markdown]
# ```{admonition} Worked solution
# :class: dropdown
# The weight is computed from the ratio and then
# detached, so that only $\log p$ carries the gradient.
# ```

# %% tags=["hide-input"]
import torch


def solution_cispo(current, old, advantages, cap):
    weight = torch.exp(current - old).clamp(max=cap).detach()
    return -weight * advantages[:, None] * current

result = check_cispo_loss(solution_cispo)

# %% [markdown]
# ## What to take away
#
# - A baseline changes the variance of the gradient, not its expectation; RLOO's excludes the
#   answer itself, GRPO and REINFORCE++ also rescale, and with no baseline a solved prompt
#   still pushes.
# - On policy every surrogate here has slope 1: the newer objectives differ from GRPO only
#   after the policy moves, in what they do to a token whose ratio left 1.
# - Importance corrections weigh tokens by the trainer/sampler gap; on this book's CPU
#   sampler the gap is tiny, so they matter once sampling moves to another engine.
# - Each entry is data: one more registry row, its paper, its fingerprint, its TRL mapping
#   or a refusal that says why, and one config key (`grpo.objective`) to train it.
# - Trained on prompts where GRPO learns, every entry learned too; the differences between
#   them are a few points, of the size one training seed can move.
