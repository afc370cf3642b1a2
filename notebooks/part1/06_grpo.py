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
# # GRPO with an exact KL on visited prefixes
#
# GRPO starts from the warm start. Each iteration draws 4 training prompts (a seeded
# permutation with a cursor, without replacement), samples G = 4 responses per prompt at
# temperature 1, scores them with the verifier, turns the rewards into group advantages,
# and makes **two** AdamW updates on that rollout set. The loss is the clipped surrogate
# plus 0.02 times the exact KL to the frozen reference, both reduced token → response →
# prompt. 100 iterations make 1,600 responses and 200 updates.
#
# ![The GRPO loop as a cycle. Top row: P prompts drawn from the training split; G responses
# sampled per prompt at temperature 1, their old log-probs captured; the verifier scores each
# response 1 or 0. Bottom row, back from right to left: group advantages A = (r - group mean)
# / (group std + delta), then two clipped updates, -min(rho A, clip(rho) A) + beta times the
# exact KL, which read the same old log-probs and the logits of the frozen reference (the
# warm start, no gradient). The updated policy samples the next iteration's new
# prompts.](../../book/images/grpo_loop.png)
#
# *One GRPO iteration: from the prompts to the two clipped updates, and back to new
# prompts.*
#
# Three roles are never confused: the **reference** is a strictly reloaded, frozen copy of
# the warm start (no gradients, checked unchanged before and after the run); the **old** policy is the
# one that sampled the rollout set, represented only by the log-probabilities captured at
# sampling time; the **current** policy is the one being updated.
#
# **Invariant.** Before the first update on a rollout set, rescoring the full sequences
# must recover the captured log-probabilities within $2\times10^{-4}$; no rollout is
# consumed twice; the reference never changes.

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

import copy

from verifiable_grpo.training import grpo, rollout
from verifiable_grpo.book import plots
from verifiable_grpo.core.config import load_config, read_json
from verifiable_grpo.book.notebook import (Table, choose_profile, live_run_from_recorded_warmstart,
                                      live_warmstart_policy, load_recorded, round_numbers, show,
                                      show_progress, significant)

config = load_config(choose_profile())
print("live profile:", config["profile"], "| iterations:", config["grpo"]["iterations"],
      "| prompts per iteration:", config["grpo"]["prompts_per_iteration"],
      "| G:", config["grpo"]["group_size"])

# %% [markdown]
# ## First, GRPO learning
#
# Before the details, the thing a reader comes for: a reward that rises. Take eight
# problems from the training split that the warm start solves only sometimes (between 10 %
# and 50 % of 32 sampled answers). A group of eight answers to such a problem usually
# mixes successes and failures, so every group carries a gradient. Train on those eight
# prompts only, every prompt in every iteration: G = 8 responses each, a constant learning
# rate of $10^{-4}$, two clipped updates per rollout set and the exact KL with
# $\beta = 0.02$, exactly the loop this chapter takes apart below.
#
# **Live, in about a minute on a laptop CPU:** four such prompts, 16 draws each to choose
# them, 12 iterations. Sampling differs in the last bits between CPUs, so the exact counts
# are shown but not compared; the line after the table is what must hold anywhere.

# %% tags=["nbval-ignore-output"]
import tempfile

from verifiable_grpo.part1 import fixed_prompts

with tempfile.TemporaryDirectory(prefix="fixed-live-") as folder:
    live_fixed = fixed_prompts.run(load_config("tiny"), folder, fixed_prompts.LIVE_SETTING,
                                   progress=False)
live_summary = fixed_prompts.summary(live_fixed)
Table(["", "warm start", "after 12 iterations"],
      [["success on the 4 trained prompts (16 draws each)", live_summary["trained_before"],
        live_summary["trained_after"]],
       ["mean training reward, first / last fifth of the run",
        live_summary["reward_first_fifth"], live_summary["reward_last_fifth"]]], digits=3)

# %%
print("success on the trained prompts rose:",
      live_summary["trained_after"] > live_summary["trained_before"])

# %% [markdown]
# **Recorded, the full setting:** eight prompts, 32 draws each before and after (the same
# draw seeds, so every prompt is compared with itself), 60 iterations. Beside it, TRL's
# `GRPOTrainer` on the same prompts, warm start, group size, rates and KL weight. TRL
# estimates the KL with k3 on the sampled token and divides advantages by the sample
# standard deviation; its samples are its own.

# %%
from verifiable_grpo.book import learning_plots

learned = fixed_prompts.recorded()
display(show(learning_plots.plot_fixed_prompt_run(learned["ours"], learned.get("trl"))))
rows = []
for name, run in learned.items():
    s = fixed_prompts.summary(run)
    rows.append([name, s["trained_before"], s["trained_after"],
                 f"{s['prompts_improved']} of {s['prompts']}"])
Table(["trainer", "success on the trained prompts, warm start", "after 60 iterations",
       "prompts improved"], rows, digits=3)

# %% [markdown]
# Both trainers turn a policy that solves these prompts a fifth of the time into one that
# solves them most of the time, and every prompt improves under both. The algorithm works.
# These are one run of each trainer, with different samples and KL estimators, so the gap
# between their end points is not read as a difference between the trainers.
#
# **The honest turn.** Now ask the same policy about 200 validation problems it never
# trained on (4 draws each):

# %%
ours = fixed_prompts.summary(learned["ours"])
drop = fixed_prompts.validation_change(learned["ours"])
Table(["per-draw success on 200 validation problems", "warm start", "after training",
       "paired difference [95% interval]", "McNemar p (draw 0)"],
      [["GRPO on the eight prompts", ours["validation_before"], ours["validation_after"],
        f"{drop['difference']:+.3f} [{drop['low']:+.3f}, {drop['high']:+.3f}]",
        f"{drop['mcnemar_p']:.3f}"]],
      digits=3)

# %% [markdown]
# Success on new problems does not rise; it falls, and the fall is real: the interval (a
# bootstrap over the 200 problems, each problem's before and after paired) lies below zero,
# and on each problem's first draw the exact McNemar test agrees. With nine tokens of JSON and no room to
# show any working, what GRPO changes for one problem is a memorised answer, and pushing
# eight answers up pushes the rest of the distribution around. Chapter 10 trains on the
# whole training split instead: at the practical's shape nothing carries over, and
# with 512 responses per iteration greedy accuracy on new problems rises clearly while
# per-draw success rises at most slightly. What would carry over is a skill that recurs across problems,
# such as one addition at a time, which a model can only reuse if it may write its steps or
# already computes.
#
# > **Reading the logs.**
# > - *The loss is near zero on the first update of a rollout set.* The ratio is 1 there
# >   and the advantages of a group sum to zero, so the surrogate is minus a mean of
# >   advantages that nearly cancel. The gradient is not zero: it is the policy gradient.
# > - *Reward flat while the KL rises:* the policy moves but not toward reward. With a
# >   verifiable reward that usually means the groups carry no signal (all right or all
# >   wrong) or the steps are too large.
# > - *Entropy falling fast:* the policy is collapsing onto few answers. Groups then agree
# >   more often (zero variance), the gradient dries up, and exploration stops.
# > - *Response length drifting:* the length normalisation, or a reward that can be gamed,
# >   is being exploited; read the responses themselves.

# %% [markdown]
# ## The objective, written out
#
# Three policies take part in one iteration, and each has a single job:
#
# ![Three boxes. The reference, the frozen warm start, is used only in the KL term. The old
# policy, the one that sampled the rollout set and whose log-probabilities are captured
# once, is used in the ratio and its clip. The current policy is the one being trained and
# the only one gradients reach. Below, one iteration: sampling (old equals current), update
# 1 (ratio 1 up to rounding, no clip can act), update 2 (the ratio has moved, the clip may
# act), and the next iteration, where the updated policy becomes the old one; the reference
# stays the same throughout.](../../book/images/three_roles.png)
#
# *The three policies of one iteration: what each is, what it is used for, and when it
# changes.*
#
# For one iteration, let $P$ prompts $x_1..x_P$ each have $G$ responses $y_{i,1}..y_{i,G}$
# with advantages $A_{i,g}$ (chapter 2), and let response $y_{i,g}$ have $|y_{i,g}|$ tokens.
# At token $t$ the ratio compares the current policy with the old log-probabilities captured
# at sampling time (chapter 3),
#
# $$\rho_{i,g,t} = \exp\big(\log\pi_\theta(y_{i,g,t} \mid x_i, y_{i,g,<t}) -
#   \log\pi_\text{old}(y_{i,g,t} \mid x_i, y_{i,g,<t})\big),$$
#
# and $\mathrm{KL}_{i,g,t}$ is the exact KL between the current policy and the frozen
# reference at that prefix (chapter 4). The loss the optimiser minimises is
#
# $$\begin{aligned}
# \mathcal{L}(\theta) &= \frac{1}{P}\sum_{i=1}^{P}\ \frac{1}{G}\sum_{g=1}^{G}\
#   \frac{1}{|y_{i,g}|}\sum_{t=1}^{|y_{i,g}|} \ell_{i,g,t}, \\
# \ell_{i,g,t} &= -\min\big(\rho_{i,g,t}A_{i,g},\
#   \mathrm{clip}(\rho_{i,g,t}, 1-\epsilon, 1+\epsilon)\,A_{i,g}\big) +
#   \beta\,\mathrm{KL}_{i,g,t},
# \end{aligned}$$
#
# with $\epsilon = 0.2$ and $\beta = 0.02$: a token mean inside each response, then a mean
# over the responses of a prompt, then over prompts. Both terms of the per-token loss
# $\ell_{i,g,t}$ are reduced the same way.
#
# **What this normalisation does not fix.** {ref}`The practical's
# specification <ref-practical>`, the assignment Part I follows, names two
# caveats. *Length:* dividing by $|y_{i,g}|$ gives every response the same total
# weight, so each token of a short response weighs more than a token of a long one; for a
# negative advantage this penalises a long wrong answer less per token, which can favour
# longer wrong answers ({ref}`Dr. GRPO <ref-drgrpo>` removes the per-response length division for this reason).
# *Difficulty:* the standard deviation in the advantage (chapter 2) scales up groups of
# prompts the policy almost always solves or almost always fails. And the penalty differs from
# the GRPO paper's ({ref}`DeepSeekMath, Shao et al. 2024 <ref-deepseekmath>`): the paper estimates the KL from the sampled token with k3 (chapter 4),
# whose gradient is that of the forward KL; this practical uses the exact reverse KL at the
# visited prefixes. Part II measures the variants.
#
# ## The objective, as data
#
# What makes this "GRPO" and not a cousin is a handful of choices: how rewards become
# advantages, whether the ratio is taken per token or per sequence, the clip interval, how
# token terms are averaged, the KL term and how prompts are sampled. The code keeps each
# variant as one frozen entry of a registry, and the training loop reads its choices from
# the entry. Part I runs `part1`; the other rows are the variants Part II compares
# (chapter II.7 adds newer ones). The `sha256` column is a short fingerprint of the
# entry's choices: a study fixed in advance writes it down, so a variant cannot change
# afterwards without the change showing. Two narrow tables, so both fit a phone's width.

# %%
from verifiable_grpo.training.objectives import SECTIONS, get_objective, objective_from_config, registry_table

print("this profile's objective:", objective_from_config(config).name)
entries = [get_objective(name) for section in ("part1", "study", "trl_reductions")
           for name in SECTIONS[section]]
display(Table(*registry_table(entries, ("name", "sha256", "advantages", "ratio", "clip")),
              title="the registry (1 of 2): fingerprint, advantages, ratio, clip"))
Table(*registry_table(entries, ("name", "aggregation", "KL", "sampler")),
      title="the registry (2 of 2): aggregation, KL, sampler")

# %% [markdown]
# ## A live run
#
# On the smoke profile the live run is short, and it starts from the recorded warm-start
# policy (the smoke warm start is too short to learn the JSON format, so it would only show
# zero rewards). Every line of GRPO's code runs: sampling, verification, the two updates,
# the evidence files and the saved state.
#
# Rewards and clip fractions are counts; the exact KL is a live float whose third digit
# already differs between CPUs, so it is shown to one significant digit, and the rescoring
# difference (rounding noise of a few $10^{-6}$) as the check it feeds.

# %%
out = live_run_from_recorded_warmstart(config)
live = grpo.run_grpo_branch(config, out, "grpo", "continuous", progress=show_progress())
tolerance = config["grpo"]["verify_tolerance"]
Table(["iteration", "mean reward", "zero-var groups", "exact KL", "clip (update 1)",
       "clip (update 2)", f"max |rescore - captured| <= {tolerance:.0e}".replace("e-0", "e-")],
      [[h["iteration"], h["mean_reward"], h["zero_variance_fraction"],
        significant(h["mean_exact_kl"], 1),
        h["updates"][0]["clip_low_fraction"] + h["updates"][0]["clip_high_fraction"],
        h["updates"][1]["clip_low_fraction"] + h["updates"][1]["clip_high_fraction"],
        h["verify_max_abs_difference"] <= tolerance] for h in live["history"]], digits=3)

# %% [markdown]
# The first update of every rollout set runs on-policy (every ratio is 1 up to rounding), so
# its clip fraction is zero; only the second can clip. One group from the evidence written for the first
# iteration:

# %%
evidence = read_json(out / "rollouts" / "grpo-continuous" / "iteration-0000.json")
group = evidence["groups"][0]
Table(["rollout id", "text", "reward", "advantage"],
      [[r["rollout_id"], repr(r["text"]), r["verifier"]["reward"], a]
       for r, a in zip(group["responses"], group["advantages"])], digits=4)

# %%
print("responses consumed:", live["consumed_rollouts"],
      "| reference unchanged:", live["reference_digest_before"] == live["reference_digest_after"])

# %% [markdown]
# ## The recorded tiny run
#
# 100 iterations with the practical's counts, learning rate 1e-5 (its 1e-6 leaves a
# model of this size frozen: see [the tiny base's page](../../book/tiny-base.md)). Single iterations hold only 16
# responses, so the reward is noisy; the line is a moving mean.

# %%
record = load_recorded("learning/grpo-continuous.json")
display(show(plots.plot_grpo_telemetry(record)))

# %%
history = record["history"]
def window(values):
    return sum(values) / len(values)
Table(["iterations", "mean reward", "zero-variance groups", "exact KL (end of window)"],
      [[f"{a + 1}-{b}", window([h["mean_reward"] for h in history[a:b]]),
        window([h["zero_variance_fraction"] for h in history[a:b]]), history[b - 1]["mean_exact_kl"]]
       for a, b in ((0, 10), (10, 50), (50, 90), (90, 100))], digits=4)

# %% [markdown]
# How far did the ratios move? On the first update of each rollout set they stay at 1 up
# to the rounding of the KV-cache sampler; on the second they spread. The table counts,
# over all iterations, the tokens whose ratio left the clip interval.

# %%
Table(["update of the set", "smallest ratio", "largest ratio", "tokens outside [0.8, 1.2]"],
      [[u + 1, min(h["updates"][u]["ratio_min"] for h in history),
        max(h["updates"][u]["ratio_max"] for h in history),
        sum(h["updates"][u]["outside_fraction"] for h in history)] for u in (0, 1)], digits=5)

# %% [markdown]
# ## Does a larger step make the clip act?
#
# Neither run above clipped a single token: over 100 iterations the recorded run's ratios
# stayed between about 0.88 and 1.10, inside $[0.8, 1.2]$. The live run and the recorded
# run start from the same warm-start weights but take different steps. The learning rate
# warms up linearly over the first tenth of the updates: the smoke profile has only a
# handful of updates, so its second update (the first that can clip) already runs at the
# peak rate, while the recorded run's second update runs at a fraction of it.

# %%
from verifiable_grpo.core.schedule import learning_rate

def schedule(cfg, steps=3):
    g = cfg.grpo
    total = g.iterations * g.updates_per_rollout
    return [learning_rate(s, total, g.learning_rate, g.warmup_fraction, g.final_lr_fraction)
            for s in range(min(steps, total))]

tiny_config = load_config("tiny")
Table(["profile", "updates", "learning rate of update 1", "update 2", "update 3"],
      [[c["profile"], c["grpo"]["iterations"] * c["grpo"]["updates_per_rollout"],
        *(f"{v:.2e}" for v in schedule(c))] for c in (config, tiny_config)])

# %% [markdown]
# So the live run takes a ten times larger second step. To see what that step size alone
# does, the live run's first iteration is repeated with its peak rate lowered so that its
# second update takes the recorded run's second-update rate. Its rollout set is sampled
# before any update, from the same seeds, so both runs see the very same tokens and only the
# step size differs.

# %%
# A profile is read-only: a changed setting is a new profile, checked like a loaded one.
shortest = config.replaced(grpo={"iterations": 2, "interrupt_at": 1})  # its first set is compared
slow = shortest.replaced(grpo={"learning_rate": config.grpo.learning_rate
                               * schedule(tiny_config)[1] / schedule(shortest)[1]})
slow_out = live_run_from_recorded_warmstart(slow)
slow_run = grpo.run_grpo_branch(slow, slow_out, "grpo", "continuous", progress=show_progress())
def clip_counts(run):
    first = run["history"][0]["updates"][1]
    return first["clip_low_fraction"] + first["clip_high_fraction"], first["outside_fraction"]
Table(["live run", "rate of update 2", "tokens clipped (update 2, iteration 1)",
       "tokens outside [0.8, 1.2]"],
      [[name, f"{schedule(c)[1]:.2e}", *clip_counts(run)]
       for name, c, run in (("as above", config, live), ("recorded run's second-update rate", slow, slow_run))],
      digits=3)

# %% [markdown]
# Both rows read 0: at either rate, one second update moves no ratio outside the interval.
# In this practical the clip is a safeguard that never has to act. It does act with a much
# larger rate and more updates per rollout set: chapter 10's sweep measures up to 9.5 % of a
# batch's tokens clipped at rate $10^{-4}$ with four updates, and chapter 3's widget shows
# which tokens it then stops.
#
# Where the time goes, for the 100 iterations of the continuous run (CPU):

# %%
timings, costs = record["timings"], record["costs"]
Table(["generation s", "pre-update check s", "optimisation + reference s", "whole loop s",
       "responses", "response tokens", "state MB"],
      [[timings["generation_seconds"], timings["verification_seconds"],
        timings["optimisation_seconds"], timings["loop_seconds"], costs["responses_generated"],
        costs["response_tokens_generated"], costs["state_bytes"] / 1e6]], digits=1)

# %%
print("rollouts consumed:", record["consumed_rollouts"], "| updates:", record["updates"])
print("reference digest unchanged:", record["reference_digest_before"] == record["reference_digest_after"])
print("largest rescoring difference over the run:",
      f"{max(h['verify_max_abs_difference'] for h in history):.1e}", "(tolerance 2e-4)")

# %% [markdown]
# ## Error to diagnose: old log-probabilities that do not belong to the sample
#
# If the stored "old" log-probabilities were not computed at the prefixes that were
# actually sampled (a different policy, dropout noise, a misaligned position, a value
# replaced after an update), every ratio would be wrong. The pre-update check rescores the
# full sequences and stops with the measured difference. Here one captured value is moved
# by 3e-4:

# %%
policy = live_warmstart_policy(config, out)   # the policy these rows were sampled from
rows = copy.deepcopy(group["responses"])
check = rollout.verify_captured_logprobs(policy, rows, 2e-4)
print("as captured: max |difference| <= 2e-4:", check["max_abs_difference"] <= 2e-4)
rows[0]["behaviour_logprobs"][0] += 3e-4
try:
    rollout.verify_captured_logprobs(policy, rows, 2e-4)
except ValueError as error:
    print("ValueError:", round_numbers(str(error), decimals=4))  # 3e-4 plus this CPU's rounding

# %% [markdown]
# ## Exercise: the scalar loss of one rollout set
#
# Write `my_grpo_loss(current, old, advantages, mask, kl, group_size, epsilon, beta)` from the
# formula at the top of this chapter: `current`, `old` and `kl` are float64 `[P*G, T]`
# (responses laid out prompt by prompt), `mask` is boolean `[P*G, T]`, `advantages` `[P*G]`.
# Return the scalar to minimise. The checker uses responses of different lengths, moved
# ratios (some clipped), and names the usual mistakes: one token mean over the whole batch,
# a missing minus sign, the KL with the wrong sign, a missing clip.

# %%
import torch

def my_grpo_loss(current, old, advantages, mask, kl, group_size, epsilon=0.2, beta=0.02):
    raise NotImplementedError("replace this line with your code")

# %%
from verifiable_grpo.exercises import check_grpo_loss

result = check_grpo_loss(my_grpo_loss)

# %% [markdown]
# ```{admonition} Worked solution
# :class: dropdown
# One line per level of the formula.
# ```

# %% tags=["hide-input"]
def solution_grpo_loss(current, old, advantages, mask, kl, group_size, epsilon=0.2, beta=0.02):
    ratio = torch.exp(current - old)
    a = advantages.unsqueeze(1)
    per_token = -torch.minimum(ratio * a, torch.clamp(ratio, 1 - epsilon, 1 + epsilon) * a) + beta * kl
    per_response = torch.where(mask, per_token, 0.0).sum(1) / mask.sum(1)   # token mean
    per_prompt = per_response.reshape(-1, group_size).mean(1)               # over the group
    return per_prompt.mean()                                                # over prompts

result = check_grpo_loss(solution_grpo_loss)

# %% [markdown]
# ## Exercise: write the GRPO loop
#
# Every piece is now in place: the verifier (chapter 1), group advantages (chapter 2), the
# clipped ratio (chapter 3), the exact KL (chapter 4) and the loss above. This exercise puts
# them together into the loop itself, one iteration at a time
# (the loop diagram at the top of this chapter shows it whole).
#
# Write `my_grpo_iteration(policy, reference, optimizer, task, group_size, epsilon, beta,
# updates)`: sample `group_size` responses to each prompt, verify them, turn the rewards into
# group advantages, then make `updates` (two) updates on that same rollout set, each
# minimising the loss of the previous exercise. Return a dict with the `rewards` and the
# `advantages` (both `[P, G]`) and the `losses` (one float per update). The `task` gives you
# what is specific to a model and a task:
#
# - `task.prompts`: the prompts of this iteration;
# - `task.sample(policy, prompt)`: one response (a list of token ids) and its old
#   log-probabilities, captured from the very logits each token was drawn from;
# - `task.reward(prompt, response)`: the verifier, 1.0 or 0.0;
# - `task.logits(model, prompt, response)`: the logits `[R, V]` at the R prefixes that
#   predicted the response's tokens.
#
# The checker runs your function for three iterations on a micro model (a random one-layer
# Qwen2 over seven tokens, in float64) and a toy task a program can verify (write the sum of
# the prompt's digits modulo 6 before the end token), and runs the package's loop
# (`verifiable_grpo.exercises.grpo_loop.grpo_iteration`) from the same seeds. After every
# iteration it compares the rewards, the advantages, the loss of each update and every weight
# of the policy, within $10^{-5}$. When they differ it names the mistake your loop reproduces:
# the sample std, advantages without centring, the clip on the wrong side, the KL with the
# wrong sign, old log-probs recomputed at each update, one update instead of two, one token
# mean over the whole batch, gradients never zeroed.

# %%
import torch
from verifiable_grpo.training.losses import exact_prefix_kl    # chapter 4's exact KL, ready to use

def my_grpo_iteration(policy, reference, optimizer, task, group_size=4, epsilon=0.2, beta=0.02,
                      updates=2):
    raise NotImplementedError("fill in the TODOs, then delete this line")
    # 1. Sample: G responses per prompt, prompt by prompt, each with task.sample(policy, prompt).
    #    A sample is (response ids, old log-probs); the old log-probs stay as they were captured.
    samples = ...      # TODO: one list of G samples per prompt

    # 2. Verify every response.
    rewards = ...      # TODO: float64 tensor [P, G] of task.reward(prompt, response)

    # 3. Group advantages (chapter 2): population std, delta 1e-8, one group per row.
    advantages = ...   # TODO: [P, G]

    # 4. `updates` clipped updates on this same rollout set.
    losses = []
    for update in range(updates):
        ...            # TODO: start from zero gradients
        prompt_losses = []
        for prompt, group, group_advantages in zip(task.prompts, samples, advantages):
            response_losses = []
            for (response, old), advantage in zip(group, group_advantages):
                logits = task.logits(policy, prompt, response)              # [R, V], with gradient
                with torch.no_grad():
                    reference_logits = task.logits(reference, prompt, response)
                current = torch.log_softmax(logits, -1)[range(len(response)), response]
                # TODO: the ratio, the clipped surrogate of each token, beta * the exact KL of
                #       each token, and this response's loss: the mean over its tokens
                response_losses.append(...)
            prompt_losses.append(...)   # TODO: the mean over the group
        loss = ...                      # TODO: the mean over prompts
        ...                             # TODO: backpropagate, then step the optimiser
        losses.append(float(loss.detach()))
    return {"rewards": rewards, "advantages": advantages, "losses": losses}

# %%
from verifiable_grpo.exercises import check_grpo_loop

loop_result = check_grpo_loop(my_grpo_iteration)

# %% [markdown]
# ```{admonition} Worked solution
# :class: dropdown
# The stub with its TODOs filled in.
# ```

# %% tags=["hide-input"]
def solution_grpo_iteration(policy, reference, optimizer, task, group_size=4, epsilon=0.2,
                            beta=0.02, updates=2):
    samples = [[task.sample(policy, prompt) for _ in range(group_size)] for prompt in task.prompts]
    rewards = torch.tensor([[task.reward(prompt, response) for response, _ in group]
                            for prompt, group in zip(task.prompts, samples)], dtype=torch.float64)
    centred = rewards - rewards.mean(dim=1, keepdim=True)
    advantages = centred / (rewards.std(dim=1, correction=0, keepdim=True) + 1e-8)
    losses = []
    for update in range(updates):
        optimizer.zero_grad()
        prompt_losses = []
        for prompt, group, group_advantages in zip(task.prompts, samples, advantages):
            response_losses = []
            for (response, old), advantage in zip(group, group_advantages):
                logits = task.logits(policy, prompt, response)
                with torch.no_grad():
                    reference_logits = task.logits(reference, prompt, response)
                current = torch.log_softmax(logits, -1)[range(len(response)), response]
                ratio = torch.exp(current - old)          # old: captured at sampling, never updated
                clipped = torch.clamp(ratio, 1 - epsilon, 1 + epsilon)
                surrogate = torch.minimum(ratio * advantage, clipped * advantage)
                per_token = -surrogate + beta * exact_prefix_kl(logits, reference_logits)
                response_losses.append(per_token.mean())
            prompt_losses.append(torch.stack(response_losses).mean())
        loss = torch.stack(prompt_losses).mean()
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))
    return {"rewards": rewards, "advantages": advantages, "losses": losses}

loop_result = check_grpo_loop(solution_grpo_iteration)

# %% [markdown]
# The same loop, run longer. The toy task has only four fixed prompts, so all the policy can
# do is learn them; what the loop shows is the mechanism: the rewards the verifier hands out
# climb as the two clipped updates of each iteration move probability towards the responses
# that beat their group. Rewards are counts out of 16 responses (4 prompts × G = 4).

# %%
from verifiable_grpo.exercises.grpo_loop import run_loop

longer = run_loop(solution_grpo_iteration, iterations=16)
Table(["iterations", "correct responses, per iteration", "mean reward"],
      [[f"{a + 1}-{a + 4}", " ".join(f"{int(r.sum())}/16" for r in longer.rewards[a:a + 4]),
        sum(float(r.mean()) for r in longer.rewards[a:a + 4]) / 4] for a in range(0, 16, 4)],
      digits=3)

# %% [markdown]
# Nothing in your function belongs to the toy. `StockTask` offers the same four methods on
# StockArithmetic: the chat prompt of each problem, the sampler of the training loop, and
# chapter 1's strict verifier on the decoded text. One iteration of your loop on four
# training problems, from the recorded warm start (a copy: the policy above stays as it is):

# %%
from verifiable_grpo.book.notebook import recorded_policy
from verifiable_grpo.exercises.stock_task import StockTask
from verifiable_grpo.task import data

policy, tokenizer, _ = recorded_policy("warmstart", config=tiny_config)
stock = StockTask(tokenizer, data.read_examples(out / "learning-data", "train")[:4], tiny_config, seed=0)
stock_policy, stock_reference = copy.deepcopy(policy), copy.deepcopy(policy).requires_grad_(False)
stock_run = solution_grpo_iteration(stock_policy, stock_reference,
                                    torch.optim.AdamW(stock_policy.parameters(), lr=1e-5), stock)
print("rewards [P, G]:", tuple(stock_run["rewards"].shape),
      "| correct responses:", int(stock_run["rewards"].sum()), "of 16",
      "| updates made:", len(stock_run["losses"]))
