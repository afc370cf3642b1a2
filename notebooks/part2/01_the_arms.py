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
# # Five arms, one registry
#
# Since {term}`GRPO` became the standard way to train reasoning models from a verifiable
# reward, several variants have been proposed, each fixing a problem its authors saw in
# the original. Part II compares five of them, as a published study did
# ({ref}`the family study card <ref-study-card>`): each variant is one {term}`arm <Arm>` of
# the comparison.
#
# **What you will learn.** What problem each variant (Dr. GRPO, DAPO, GSPO, AERO) was
# designed to fix; why every arm here trains without a KL term, although Part I centred on
# one; how AERO's exploration, rescue and posterior advantage turn a group that would teach
# nothing into one that does; and how each arm weighs the tokens of a group.
#
# In this package a variant is not a new training loop: it is one entry of the objectives
# registry, a frozen record of six choices (how rewards become advantages, at which level
# the importance ratio is taken, the clip interval, how per-token terms are summed into one
# loss, the KL term, and which sampler fills a batch). The table lists the five arms and
# three loss reductions TRL offers, each with the paper it comes from (all have no KL
# term; Part I's objective is one more entry of the same registry).

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

from verifiable_grpo.book.notebook import Table, show
from verifiable_grpo.part2 import demos
from verifiable_grpo.book import family_widgets
from verifiable_grpo.part2.lock import read_lock

from verifiable_grpo.training.objective_sources import source_of

head, rows = demos.arm_rows()
Table(head + ["paper"], [row + [source_of(row[0]).cite] for row in rows])

# %% [markdown]
# Each arm, and Part I's own objective, is a set of choices along the same six axes of the
# objectives registry (drawn from the registry itself):
#
# ![A grid with one row per objective (part1, grpo, drgrpo, dapo, gspo, aero) and one
# column per axis (advantages, ratio, clip, aggregation, KL, sampler). Cells where an
# objective departs from grpo are coloured: part1 uses the population std and the exact
# KL; drgrpo uses r minus the mean without a std; dapo a higher upper clip of 1.28 and
# dynamic sampling; gspo a sequence-level ratio; aero a posterior baseline for one-rollout
# groups and its own sampler.](../../book/images/family_axes.png)
#
# *The GRPO family as data: each arm is one entry of the objectives registry, with one
# value on each axis.*
#
# ## Why each variant exists
#
# Plain GRPO ({ref}`Shao et al. 2024 <ref-deepseekmath>`) scores each of $G$ answers to a
# prompt by $\hat A_i = (r_i - \bar r)/(\mathrm{std}(r) + \delta)$ (a small $\delta$ keeps a
# constant group finite; $\epsilon$ is the clip's), takes a
# {term}`PPO <PPO>`-style clipped ratio per token, and averages each answer's token terms
# before averaging over answers. Each variant below changes one of these choices for a
# stated reason.
#
# - **Dr. GRPO** ({ref}`Liu et al. 2025 <ref-drgrpo>`, "GRPO done right") argues that two
#   normalisations bias the update. Dividing by the group's standard deviation gives the
#   most weight to prompts whose rewards barely vary (almost always right or almost always
#   wrong), a bias by difficulty. Dividing each answer's loss by its own length makes a long
#   wrong answer's tokens cheaper to keep than a short one's, which lets wrong answers grow
#   longer. Dr. GRPO removes both divisions. The study's `drgrpo` arm removes only the first.
# - **DAPO** ({ref}`Yu et al. 2025 <ref-dapo>`) targets long reasoning runs. With a
#   symmetric clip of 0.2, a token the policy gives probability 0.01 can rise only to 0.012
#   in one update while a likely token is barely constrained, so the policy's
#   {term}`entropy` collapses and exploration stops; *clip-higher* raises the upper bound
#   to 0.28. As accuracy rises, more groups are all-correct and carry no gradient, so the
#   effective batch shrinks and gets noisier; *dynamic sampling* discards such groups and
#   draws new prompts until the batch is full. DAPO also weighs every token equally across
#   the batch and drops the KL term. The study's `dapo` arm takes clip-higher and dynamic
#   sampling.
# - **GSPO** ({ref}`Zheng et al. 2025 <ref-gspo>`) observes that the reward is given per
#   answer, yet GRPO corrects for the policy's change per token, with one sample per token:
#   a noisy weight that accumulates over long answers and destabilised large
#   (mixture-of-experts) models. It uses one ratio per answer, the geometric mean of the
#   token ratios, and clips that.
# - **AERO** ({ref}`Zhang et al. 2026 <ref-aero>`) attacks the waste of groups whose answers
#   all agree: their advantages are zero, so the compute spent generating them trains
#   nothing. It spends rollouts adaptively, prunes the kept ones, and gives a group that
#   keeps a single answer an advantage from a Bayesian estimate of the prompt's success
#   rate. It is worked through below.
#
# ## What each arm changes
#
# The treatment lock of the study (chapter 3) records, for every arm, the registry fields
# in which it differs from `grpo`, and the TRL 1.16 settings that would run it. Two of the
# names deserve care. The study's `drgrpo` only drops the division by the group's
# standard deviation; the Dr. GRPO paper also drops the division by each response's
# length, which is TRL's `loss_type="dr_grpo"` (the registry's `dr_grpo` row). The study's
# `dapo` keeps the per-response token mean and adds a higher upper clip (0.28) and
# dynamic sampling; TRL's `loss_type="dapo"` is only the token-level reduction (the
# registry's `dapo_token` row).

# %%
lock, lock_sha = read_lock()  # configs/part2/lock.json
Table(["arm", "changes vs grpo", "TRL GRPOConfig", "needs a subclass for"],
      [[arm, ", ".join(entry["treatment_changes"]) or "(baseline)",
        ", ".join(f"{k}={v!r}" for k, v in entry["trl"]["config"].items()
                  if k in ("loss_type", "scale_rewards", "importance_sampling_level", "epsilon_high")),
        (entry["trl"]["subclass"] or "-").split(":")[0]]
       for arm, entry in lock["arms"].items()])

# %% [markdown]
# ## What every arm leaves out: the KL term
#
# Part I's objective adds $\beta\,\mathrm{KL}(\pi_\theta \,\|\, \pi_{\text{ref}})$ with
# $\beta = 0.02$, computed exactly on every visited prefix. Every Part II arm sets
# $\beta = 0$: no KL term, and no reference model at all. Three reasons:
#
# - **It is the study's setting.** The study card ran every arm with $\beta = 0$, and a
#   comparison of objectives should change one thing at a time.
# - **It is the common default.** TRL's `GRPOConfig` ({ref}`TRL <ref-trl>`) defaults `beta`
#   to 0 (version 1.16, used here); its documentation notes that the reference model is then
#   not even loaded. DAPO and Dr. GRPO drop the term as well.
# - **A verifiable reward needs less protection.** The KL penalty came from training against
#   a *learned* reward model ({ref}`InstructGPT <ref-instructgpt>`), which a policy can
#   exploit by drifting to answers the model scores wrongly. A program that checks the
#   answer cannot be flattered that way, and reasoning training wants the policy to move
#   far from where it started.
#
# What it costs: nothing pulls the policy back. Whatever the reward does not measure
# (answers to other tasks, the variety of its outputs) can drift or collapse, and only an
# evaluation outside the reward will notice. Part II still *measures* the exact KL to the
# warm start at the end of every run (chapter 4 prints it) without training on it; Part
# III's Lab 5 trains with two values of $\beta$ and shows what the term holds back.
#
# ## AERO, worked through
#
# The `aero` arm's registry row reads "3 explore, rescue 4, k=1, 4 slots" and "Beta(1,1)
# posterior". In words, for each step of 4 prompts:
#
# 1. **Explore.** Draw 3 answers per prompt (not 4: the fourth slot is kept for rescues).
# 2. **Rescue.** Prompts with no correct answer take turns drawing one more answer each,
#    from a budget of 4 extra answers shared by the whole step; a prompt stops at its first
#    success.
# 3. **Curate.** All correct: keep one answer at random. At least half correct: keep all 3.
#    Fewer than half correct: keep the correct ones plus $k = 1$ wrong one per correct one.
#    All wrong but rescued: keep one wrong answer and the rescue. All wrong, not rescued:
#    keep one wrong answer.
# 4. **Score.** A group of two or more answers gets GRPO's advantages. A group of *one*
#    answer has no group to compare with, so AERO compares it with an estimate of the
#    prompt's success rate $p$: with a uniform prior Beta(1,1) and $s$ successes among the
#    $n$ answers drawn for the prompt, the posterior mean is $p = (s+1)/(n+2)$, and the
#    advantage is $(r - p)/(\sqrt{p(1-p)} + \delta)$.
#
# Plain GRPO gives prompts A and E below advantage 0 (every answer agrees) and learns
# nothing from them. Under AERO, A's single correct answer is reinforced a little
# ($p = 4/5$: an easy prompt, a small surprise) and E's wrong answer is pushed down
# ($p = 1/7$ after 5 failures). The cell runs the study's own curation and advantage code.

# %%
import torch

from verifiable_grpo.training.objectives import advantages, get_objective
from verifiable_grpo.training.samplers import aero_curate

cases = {  # prompt: (exploration rewards, rescue rewards)
    "A: 3 of 3 correct": ([1, 1, 1], []),
    "B: 2 of 3 correct": ([1, 1, 0], []),
    "C: 1 of 3 correct": ([1, 0, 0], []),
    "D: 0 of 3, rescued at the 2nd try": ([0, 0, 0], [0, 1]),
    "E: 0 of 3, rescue budget spent": ([0, 0, 0], [0, 0]),
}
generator = torch.Generator().manual_seed(0)
rows = []
for prompt, (explore, rescue) in cases.items():
    drawn = explore + rescue
    kept, strategy = aero_curate(explore, rescue, rejection_k=1, exploration_rollouts=3,
                                 generator=generator)
    rewards = torch.tensor([[float(drawn[i]) for i in kept]], dtype=torch.float64)
    scored = advantages(get_objective("aero"), rewards, successes=[sum(drawn)],
                        observations=[len(drawn)])
    rows.append([prompt, strategy, " ".join(str(drawn[i]) for i in kept),
                 ", ".join(f"{a:+.3f}" for a in scored.values[0].tolist())])
Table(["prompt", "curation", "kept rewards", "AERO advantages"], rows)

# %% [markdown]
# Groups B, C and D are scored as in GRPO (with the sample standard deviation), so C's and
# D's two answers get $\pm 0.707$. The rescue budget is what makes D useful: without it, D
# would be a group of three wrong answers and teach nothing. In the study, curation also
# means `aero`'s batch has fewer answers than `grpo`'s, and since a one-answer group still
# receives an advantage, its logged zero-variance fraction is not comparable with the
# other arms' (chapter 4).
#
# ## The weight of every token
#
# On policy the ratio is exactly 1, and the gradient of the loss with respect to the
# log-probability of token $t$ of response $i$ is a weight $w_{i,t}$: positive pushes the
# token up, negative down. With the per-response token mean ("grpo" aggregation) and $P$
# prompts of $G$ responses,
#
# $$w_{i,t} = \frac{\hat A_i}{P\,G\,|o_i|},$$
#
# so every response gets the same total weight $\hat A_i / (PG)$ however long it is, and a
# short response concentrates it on fewer tokens. A token sum divided by the batch's
# token count (`bnpo`, `dapo_token`) gives every token $\hat A_i / \sum_j |o_j|$ instead,
# and a long wrong answer collects more total push-down. The numbers below are autograd's,
# for one group with rewards $[1,0,1,0]$ and lengths $[3,5,2,7]$ tokens; `dr_grpo`
# divides by $G$ times a constant length, here 8.

# %%
weights = demos.token_weights([1, 0, 1, 0], [3, 5, 2, 7], max_length=8)
Table(["arm", "o1 (r=1, 3 tok)", "o2 (r=0, 5 tok)", "o3 (r=1, 2 tok)", "o4 (r=0, 7 tok)"],
      [[name] + w for name, w in weights.items()], digits=6)

# %% [markdown]
# `grpo`, `dapo`, `gspo` and `aero` share one row: on a mixed group of four, on policy,
# they are the same objective. Their differences live elsewhere: in the ratio once the
# policy has moved (chapter 2), in which groups are sampled and kept, and in the
# advantage of a group that keeps a single rollout (`aero`).
#
# ## Try it
#
# Set the rewards and lengths of a group. The figure below is the static version for the
# group above; the widget under it redraws when a kernel runs it (in the static book its
# controls do nothing).

# %%
display(show(family_widgets.plot_token_weights([1, 0, 1, 0], [3, 5, 2, 7])))

# %% tags=["remove-output"]
# NBVAL_IGNORE_OUTPUT
# (the widget's saved state embeds a rendered PNG; the figure above is the checked fallback)
family_widgets.make_token_weight_widget()

# %% [markdown]
# ## Exercise
#
# A group has rewards $[1, 0, 0, 0]$ and lengths $[4, 4, 4, 4]$. Predict the per-token
# weight of the correct response under `grpo` and under `drgrpo`, then check with
# `demos.token_weights([1, 0, 0, 0], [4, 4, 4, 4])`.
#
# ```{admonition} Solution
# :class: dropdown
# The mean is 0.25. `drgrpo` uses $\hat A = r - \bar r = 0.75$ for the correct response and
# $-0.25$ for the others; `grpo` divides by the sample standard deviation
# $\sqrt{(0.75^2 + 3 \cdot 0.25^2)/3} = 0.5$ plus $10^{-4}$, giving $\hat A \approx 1.4997$
# and $-0.4999$. Each token's weight is $\hat A / (G |o|) = \hat A / 16$: about $0.0937$
# (`grpo`) and $0.0469$ (`drgrpo`) for the correct response's tokens. Removing the std
# halves the push on this group; on a group with rewards $[1,0,1,0]$ (std 0.577) it
# multiplies it by 0.577. Which groups get more weight relative to others, not only the
# overall scale, is what the `drgrpo` arm changes.
# ```

# %%
weights = demos.token_weights([1, 0, 0, 0], [4, 4, 4, 4], names=("grpo", "drgrpo"))
Table(["arm", "correct", "wrong"], [[k, v[0], v[1]] for k, v in weights.items()], digits=6)
