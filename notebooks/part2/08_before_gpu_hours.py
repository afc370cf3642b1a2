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
# # Before you spend GPU hours on the card's study
#
# The study card ({ref}`study card <ref-study-card>`) ran forty GRPO runs of Qwen3-8B with
# LoRA adapters through TRL's `GRPOTrainer`: five arms, eight seeds each, 30 steps of
# 4 prompts x 4 completions, a held-out score on 500 GSM8K test problems. Its five arms
# ended within one accuracy point of one another. A reader who wants to replicate that
# study, or to run a better one, pays in GPU hours; this chapter is what to know first.
#
# **What you will learn.**
# - How to turn a GRPO budget into tokens, FLOPs, bytes per GPU and hours, and which GPU
#   classes can hold the card's run at all.
# - Why LoRA adapters trained at 1e-6, a rate meant for full fine-tuning, barely move,
#   and what a 10-50x smaller effective step does to the power of an eight-seed study.
# - How the corrected study is pre-registered as a second lock, hashed but not run.
# - Which defaults of TRL changed between the card's 1.8.0 and the 1.16 this book uses, and
#   which of them could change the card's numbers.

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

from verifiable_grpo.book.notebook import Table, show, significant
from verifiable_grpo.part2 import card_cost, lora_rate_lock, step_demo, step_power
from verifiable_grpo.part2.trl import versions as trl_versions
from verifiable_grpo.part2 import lock as lock_lib

# %% [markdown]
# ## What one run has to compute
#
# A GRPO step first *generates*: 4 prompts, 4 completions each, decoded token by token up
# to 1,024 tokens. Then it *trains*: one forward and one backward pass over every prompt and
# completion it scored. At the end of the run the policy answers the 500 held-out problems,
# which is generation again. With β = 0 and one update per generation batch, TRL loads no
# reference model and needs no second scoring pass, so these three are the whole bill.
#
# The card states its budgets but not everything a bill needs: how long a prompt is, how
# long the completions really were, how many sequences went through the model at once. The
# cost model names each such guess in one place, `card_cost.Assumptions`, so that you can
# change it and see what moves:

# %%
assume = card_cost.Assumptions()
plan = card_cost.Plan()
Table(["assumption", "value"], [[k, v] for k, v in vars(assume).items()])

# %% [markdown]
# The completion length is set to the cap on purpose. Qwen3 answers in thinking mode by
# default and can easily use the whole budget; and even when most completions stop early, a
# padded batch keeps decoding until its longest member ends, so the cap is what a batch
# costs. Token counts per run and per study (40 runs):

# %%
count = card_cost.tokens(plan, assume)
Table(["quantity", "per run", "per study"],
      [[k.replace("_", " "), count["run"][k], count["study"][k]] for k in count["run"]])

# %% [markdown]
# ### FLOPs
#
# Training follows Part III's accounting ({doc}`../part3/09_memory_and_compute`): a frozen
# weight costs 2 FLOPs per token forward and 2 more backward (the gradient flows through it
# to the adapters, but the weight itself gets none), so LoRA pays about $4N$ per token where
# full fine-tuning pays $6N$. Attention adds $6 L T d$. TRL checkpoints activations by default,
# which recomputes each forward once more ($2N$). Generating a token is one forward pass.

# %%
flops = card_cost.flops(plan, assume)
full = card_cost.flops(card_cost.Plan(method="full"), assume)
Table(["part of one run", "LoRA (PFLOP)", "full fine-tuning (PFLOP)"],
      [[k, flops[k] / 1e15, full[k] / 1e15] for k in flops], digits=2)

# %% [markdown]
# Forty petaFLOPs is a little over two minutes of an A100's peak. The run takes far longer,
# because generation is not limited by arithmetic: every decoded position reads all 16 GB
# of bf16 weights from memory, and a batch of 16 completions decodes 1,024 positions per
# step. On these GPUs generation and the held-out evaluation are memory-bound; training is
# the only part that runs near the tensor units' speed.
#
# ### Memory, per GPU class
#
# What must fit on one GPU at the worst moment: the bf16 weights, the adapters with their
# gradients and AdamW state (16 bytes per trained parameter), and then either the KV cache
# of the generation batch or the checkpointed activations and logits of a training
# micro-batch, which are never alive at the same time.

# %%
Table(["component", "GB"], [[name, size / 1e9] for name, size in card_cost.memory_rows(plan, assume)],
      digits=2, title="Qwen3-8B, LoRA r16 all-linear, the card's budgets")

# %% [markdown]
# Qwen3-8B has 8,190,735,360 parameters; the card's r16 adapters on all seven projections of
# its 36 layers add 43,646,976, half a percent of the model. Full fine-tuning would need
# 16 bytes for each of the 8.19 billion, 131 GB before activations: no single GPU below
# holds it, and it would need ZeRO-3 or FSDP over two or more 80 GB cards.
#
# The memory column is the total the driver reports, in decimal GB (a card sold as "40GB"
# has 40 GiB, 42.9 GB; the L4 and the T4 keep part of theirs for ECC and firmware); hours
# come from the data sheets' peak arithmetic and
# bandwidth, times the stated efficiencies, for one run on one GPU:

# %%
rows = card_cost.gpu_table(plan, assume)
Table(["GPU", "memory (GB, as reported)", "peak need (GB)", "fits", "bf16", "hours per run",
       "hours per study"],
      [[r["gpu"], r["memory_gb"], r["peak_gb"], r["fits"], r["bf16"], r["hours_per_run"],
        r["hours_per_study"]] for r in rows], digits=[0, 1, 1, 0, 0, 2, 0])

# %% [markdown]
# A T4 cannot hold even the weights (16.4 GB in 16.1 GB) and has no bf16 units. An L4 holds
# the run with about a gigabyte to spare, but its 300 GB/s of bandwidth makes generation
# five times slower than on an A100. On the card's A100-40GB the model says about half an
# hour per run and a day for the study, generation and the held-out evaluation taking most
# of it. These are estimates from stated assumptions, not measurements: no GPU run of this
# project produced them.
#
# **Try it.** Suppose completions averaged 400 tokens and your batches were packed so that
# none waited for the longest: set `completion_tokens=400` and see which part of the bill
# falls most.

# %%
short = card_cost.Assumptions(completion_tokens=400)
Table(["GPU", "hours per run (400 tokens)", "hours per study"],
      [[r["gpu"], r["hours_per_run"], r["hours_per_study"]]
       for r in card_cost.gpu_table(plan, short) if r["fits"]], digits=2)

# %% [markdown]
# ### The card beside the model
#
# Where the card states a number, the model starts from it; where it does not (`None`),
# the model's value is ours alone.

# %%
Table(["quantity", "the card", "this cost model"], card_cost.card_beside_ours(plan, assume))

# %% [markdown]
# The card states no wall time, so the hours above cannot be checked against it; nor does it
# store the untrained model's held-out accuracy, which matters for the next section.
#
# ## The learning-rate confound
#
# A LoRA adapter replaces a weight $W$ by $W + \frac{\alpha}{r} B A$, with $A$ random and
# $B = 0$ at the start ({ref}`LoRA <ref-lora>`), so the model begins exactly where the base
# is. AdamW normalises each gradient by its running scale, so one step changes every entry
# of $B$ by roughly the learning rate $\eta$, whatever the gradient's size. After 30 steps
# at $\eta = 10^{-6}$ the entries of $B$ are at most about $3\times10^{-5}$, and the change of
# the weight is that small matrix multiplied through $A$. Full fine-tuning at the same rate
# moves every one of the 8.19 billion weights directly; the adapter can change each weight
# matrix only along 16 directions, through a product that starts at zero. That is why LoRA
# wants a larger rate:
# TRL's guide to LoRA for RL ({ref}`LoRA Without Regret <ref-lora-without-regret>`) trains
# GRPO with 1e-5 for LoRA beside 1e-6 for full fine-tuning, and its own Python example uses
# 5e-5. The card's 1e-6 is the full-fine-tuning rate, ten to fifty times below that range.
#
# The card's results look like a policy that moved very little: five arms between 0.631 and
# 0.638, and seed-to-seed spreads of a few tenths of a point. The spread each arm's interval
# implies (a 95 % interval of a mean of 8 is about $2 \times 1.96\,\sigma/\sqrt 8$ wide):

# %%
Table(["arm", "the card's 95% interval", "implied seed spread"],
      [[arm, f"[{low:.4f}, {high:.4f}]", step_power.spread_from_interval(low, high)]
       for arm, (low, high) in step_power.CARD_INTERVALS.items()], digits=4)

# %% [markdown]
# Without the base model's accuracy on the same 500 problems we cannot say how far the
# policy moved, so this is a likely confound, not a proven one: the arms may be equal, or
# the step may have been too small for any arm to act.
#
# ### On the tiny base: how far 30 steps move an adapter
#
# The same adapter (r16, α 32, every block projection, $B = 0$) on the book's tiny base,
# trained for 30 Adam steps on one fixed policy-gradient batch (8 training problems with
# their correct answers, advantages $+1$ and $-1$ alternating), at a LoRA rate for this base
# (3e-4, ten times the 3e-5 at which Part II trains it whole) and at 10x and 50x less. The
# table shows how much the answers' token log-probabilities changed:

# %%
movement = step_demo.lora_movement(rates=(3e-4, 3e-5, 6e-6), steps=30)
top = movement[0]["mean_abs_change"]
Table(["learning rate", "step factor", "mean |change of log-prob|", "relative to 3e-4"],
      [[f"{r['rate']:g}", f"1/{round(3e-4 / r['rate'])}", significant(r["mean_abs_change"], 1),
        significant(r["mean_abs_change"] / top, 1)] for r in movement])

# %% [markdown]
# A ten times smaller rate moves the policy far less than ten times less; fifty times
# smaller leaves it almost where it started. The movement shrinks at least in proportion to
# the rate: the first-order change of the weights is proportional to it, the part that is a
# product of the updates of $B$ and $A$ shrinks with its square, and at the largest rate the
# 30 steps compound. A smaller step is not a slower version of the same study: it is a
# study whose treatments barely get to act.
#
# ## What a smaller step does to a study's power
#
# Take one arm against `grpo`, seed by seed. Model its paired difference as
# $d = s\,\delta + \sqrt{(s\,\sigma_{\text{train}})^2 + \sigma_{\text{floor}}^2}\; z$, where $s$ is the
# step relative to an appropriate one, $\delta$ the arm's true effect at that step, and
# $z$ standard normal. The part of the spread that training causes shrinks with the step like
# the effect; the floor does not (evaluation and the numerics of generation are there even
# if the policy never moves). The tiny demonstration says the shrinkage is at least
# proportional, so this linear model is, if anything, kind to the small step. The inputs are
# recorded numbers: $\sigma_{\text{train}}$ is the median spread of the paired differences in
# Part II's recorded study, where the policy did move; the floor is the card's own spread
# at 1e-6, times $\sqrt 2$ for a difference of two runs.

# %%
spread = step_power.recorded_training_spread()
floor = step_power.card_floor()
print(f"sigma_train = {spread['median']:.4f} (median of {len(spread['per_comparison'])} recorded comparisons)")
print(f"sigma_floor = {floor:.4f} (from the card's intervals)")

# %% [markdown]
# The study's test is the lock's exact two-sided sign-flip test over eight seeds at 0.05.
# The power is the share of 4,000 simulated studies that reject, for effects of 2, 4 and 6
# accuracy points at the appropriate step:

# %%
factors = [1.0, 1 / 3, 1 / 10, 1 / 30, 1 / 50]
sigma = step_power.SeedSpread(train=spread["median"], floor=floor)
power = step_power.power_table([0.02, 0.04, 0.06], factors, sigma)
Table(["effect at the full step", "step factor", "effect left", "spread", "power"],
      [[r["effect"], f"1/{round(1 / r['step_factor'])}", r["shrunken_effect"], r["spread"], r["power"]]
       for r in power], digits=[2, 0, 4, 4, 2])

# %%
show(step_power.plot_power(power))

# %% [markdown]
# At the appropriate step, eight seeds detect a 6-point difference almost always and a
# 4-point one about three times in four. At a tenth of the step all three effects have
# shrunk below the floor and the power drops to 0.08, 0.16 and 0.29; at a thirtieth
# or a fiftieth it is the test's level, so the study would report "inconclusive" whatever
# the arms do. The lock's Benjamini-Hochberg correction over four comparisons lowers every
# number further. More seeds do not rescue it cheaply: the seeds a test needs grow with the
# square of spread over effect, so the same power costs this many times the seeds of the
# full step:

# %%
base = power[0]["spread"] / power[0]["shrunken_effect"]
Table(["step factor", "seeds needed, relative to the full step"],
      [[f"1/{round(1 / r['step_factor'])}", (r["spread"] / r["shrunken_effect"] / base) ** 2]
       for r in power[:len(factors)]], digits=[0, 1])

# %% [markdown]
# Eight seeds at a fiftieth of the step would need to become well over a thousand.
#
# ## A second lock: the study a reader would want
#
# The fix is a different study, so it needs a different pre-registration, written before
# any run. `configs/part2/lock-lora-rate.json` is the committed lock with the policy frozen
# under the card's adapter (r16, α 32, dropout 0) and the learning rate raised by the factor
# TRL's guide uses between LoRA and full fine-tuning: 3e-4 on the tiny base. At the card's
# scale the same rule gives 1e-5. Everything else (arms, seeds, regimes, budgets, the
# analysis and its seed) is unchanged. The file and its pin are committed; the code
# rebuilds the lock from the pinned choices and compares it field by field:

# %%
new, new_sha = lock_lib.read_lock(lora_rate_lock.PATH)
old, old_sha = lock_lib.read_lock()
lock_lib.check_lock(new, path=lora_rate_lock.PATH)   # raises if the file was edited
changed = sorted(k for k in new["budget"] if new["budget"][k] != old["budget"].get(k))
Table(["budget field", "configs/part2/lock.json", "configs/part2/lock-lora-rate.json"],
      [[k, str(old["budget"].get(k, "absent")), str(new["budget"][k])] for k in changed])

# %%
print("committed lock   ", old_sha[:16], "(the recorded study's)")
print("LoRA-rate lock   ", new_sha[:16], "(pinned, not run)")

# %% [markdown]
# It has not been run, so it has no results, and this book shows none. A reader would
# check and start it with
#
# ```text
# python -m verifiable_grpo family lock --check --lock configs/part2/lock-lora-rate.json
# python -m verifiable_grpo family study --lock configs/part2/lock-lora-rate.json --out runs/lora-rate
# ```
#
# in a new output folder: a folder that holds the recorded study is bound to the committed
# lock's digest and refuses runs under this one.
#
# ## What changed between TRL 1.8 and 1.16
#
# The card ran TRL 1.8.0; this book's parity tests use 1.16 ({ref}`TRL <ref-trl>`). These
# are the changes in between that can change a number, each checked against TRL's source and
# pull requests (1.8.0 was cut on 9 July 2026; every change below was merged after it); the
# 1.16 defaults are read from the installed package.

# %%
Table(["knob", "TRL 1.8.0", "TRL 1.16", "what it changes", "the card's run", "source"],
      trl_versions.table())

# %%
print("installed GRPOConfig defaults:", trl_versions.installed_defaults())

# %% [markdown]
# None of them changes the card's own numbers if its script set what Part II's mapping sets
# (β = 0, `loss_type="grpo"`, transformers generation). A replication on 1.16 should still
# pin every one of them in its configuration rather than inherit defaults: a run with
# β > 0 would silently get the bias-corrected KL, and a config without `loss_type` would
# aggregate tokens the `dapo` way.
#
# ### Which reading did the card run?
#
# The card describes each arm by the one field that sets it apart (its Dr. GRPO arm is
# "`scale_rewards=none`") and never names `loss_type` or `epsilon`. A script written that
# way leaves everything else at TRL 1.8's defaults, so the most likely reading is:
#
# - **aggregation: `dapo`, not `grpo`.** TRL 1.8's default sums every token's loss over the
#   batch and divides by the batch's token count, so each token weighs the same; our lock's
#   `grpo` takes a token mean per response first, so a short response's tokens weigh more
#   than a long one's. Every arm of the card shared the same aggregation, so its comparisons
#   stay like with like; what changes is how strongly long (often truncated) completions
#   pull on the update.
# - **gspo's clip: 0.2, TRL's default, not the paper's $3\times10^{-4}$ / $4\times10^{-4}$.**
#   On the card's one update per generation batch every ratio is exactly 1 in TRL, so no
#   clip range can act: the card's gspo is the grpo gradient whatever its $\epsilon$. The
#   range matters only off policy, in our `two_updates` regime.
#
# Neither is a certainty, so the tiny study faces both before running them: a second
# pre-registration with the same seeds puts `dapo_token` (TRL's `dapo` aggregation) beside
# `grpo`, and `gspo_paper` (the paper's range) beside `gspo`. It was declared and hashed in a
# commit of its own, then run once, from a clean checkout of a later commit, with the
# command below:

# %%
from verifiable_grpo.part2 import card_defaults_lock

defaults_lock, defaults_sha = lock_lib.read_lock(card_defaults_lock.PATH)
lock_lib.check_lock(defaults_lock, path=card_defaults_lock.PATH)  # raises if the file was edited
print("arms:", ", ".join(defaults_lock["arms"]), "| seeds:", len(defaults_lock["seeds"]),
      "| regimes:", ", ".join(defaults_lock["regimes"]), "| SHA-256", defaults_sha[:16])
print(card_defaults_lock.COMMAND)
print(f"expected: about {card_defaults_lock.expected_seconds() / 60:.0f} minutes on two CPU threads")

# %% [markdown]
# ### What the sensitivity found
#
# Sixty-four runs (four arms, eight seeds, two regimes) and the lock's own analysis: each arm
# against `grpo` on the same seed, a paired bootstrap interval, a sign-flip p-value and
# Benjamini-Hochberg within a regime, "better" or "worse" only when both agree.

# %%
from verifiable_grpo.part2 import card_defaults, results

defaults = card_defaults.load()
Table(["regime", "arm - grpo", "verdict", "mean greedy", "difference", "95% CI (paired)",
       "p (sign flip)", "BH"], card_defaults.comparison_rows(defaults))

# %% [markdown]
# Read it in three steps.
#
# - **One update per batch (`on_policy`): the clip cannot act.** `gspo` and `gspo_paper`
#   end on exactly `grpo`'s held-out accuracy on every seed: with a single update every ratio
#   is 1 up to rescoring noise, inside even the paper's narrow range, as the declaration
#   predicted. The card ran this regime, so its gspo arm was the grpo gradient whatever its ε.
# - **The aggregation hardly moves the tiny model.** `dapo_token` sits within about half a
#   point of `grpo` in both regimes and no test rejects. Our completions are short and
#   similar in length, so weighting every token equally and weighting every response equally
#   give nearly the same update; on the card's 1,024-token completions, where lengths differ
#   far more, the gap could be larger, and this study cannot say by how much.
# - **Off policy, two readings lean, one each way, and the test confirms neither.** In
#   `two_updates`, `dapo_token` is behind `grpo` by −0.0056 with an interval below zero,
#   [−0.0113, −0.0006], and a sign-flip p of 0.1562; `gspo_paper` is ahead by +0.0175 with
#   an interval above zero, [+0.0025, +0.0369], and a p of 0.0859. Over eight seeds neither
#   test rejects, even before the correction, so the verdict the lock fixed is
#   "inconclusive" for both. Beside the committed `gspo` (read from the per-seed table, not
#   a pre-registered test):

# %%
for regime in defaults["analysis"]["regimes"]:
    gap = card_defaults.paper_minus_gspo(defaults, regime)
    print(f"{regime}: gspo_paper - gspo per seed {[round(g, 3) for g in gap]}, "
          f"mean {sum(gap) / len(gap):+.4f}")

# %% [markdown]
# The runs of `grpo` and `gspo` repeat the committed study's with the same seeds and code,
# a free check of the runner's determinism on another machine and commit:

# %%
agreement = card_defaults.rerun_agreement(defaults, results.load())
print(f"of {agreement['runs']} repeated runs: training reward equal at every step in "
      f"{agreement['reward_traces_equal']}, printed summary equal in "
      f"{agreement['summaries_equal']}, final weights bit-equal in {agreement['weights_equal']}")

# %% [markdown]
# Every repeated run drew the same rewards at every step, yet none ended on bit-identical
# weights: the recorded study ran on another machine, whose kernels round the last bits
# differently. Those bits changed one held-out draw in one run, which is why the book
# compares such runs through their recorded outcomes and never through weight digests
# across machines.

# %% [markdown]
# ### Measured on a GPU
#
# Everything above is a model. `python scripts/gpu_check.py` is the one command that turns
# part of it into measurements on a lent GPU: the TRL smoke arm, two steps of the card's
# configuration on a random stand-in of Qwen3-8B's shape (two of its 36 layers, every
# completion at the 1,024-token cap) and Part I's qwen-shaped stand-in, each with its peak
# memory and seconds per step. Its records in `data/recorded/gpu-check/` are listed here.

# %%
from IPython.display import display

checks = card_cost.gpu_checks()
if checks:
    display(Table(["GPU", "what ran", "seconds per step (median)", "peak GB"],
                  card_cost.gpu_check_rows(checks), digits=[0, 0, 2, 1]))
else:
    print("no GPU has run scripts/gpu_check.py yet: every number in this chapter is the model's")

# %% [markdown]
# ## Exercise: the KV cache of a generation batch
#
# Write `my_kv_cache_bytes(layers, heads, kv_heads, head_dim, sequences, tokens)`: the bytes a
# bf16 KV cache holds after `tokens` positions of `sequences` sequences. Qwen3-8B has 36
# layers, 32 query heads and 8 KV heads of 128. The checker names the usual mistakes.

# %%
def my_kv_cache_bytes(layers, heads, kv_heads, head_dim, sequences, tokens):
    raise NotImplementedError("replace this line with your code")

# %%
from verifiable_grpo.exercises.kv_cache import check_kv_cache

result = check_kv_cache(my_kv_cache_bytes)

# %% [markdown]
# ```{admonition} Worked solution
# :class: dropdown
# Each layer stores one key and one value vector per
# KV head and position, 2 bytes per value; the query heads share them, so they do not enter.
# For the card's batch (16 sequences of 160 + 1,024 tokens) that is 2.8 GB.
# ```

# %% tags=["hide-input"]
def solution_kv_cache_bytes(layers, heads, kv_heads, head_dim, sequences, tokens):
    return 2 * layers * kv_heads * head_dim * 2 * sequences * tokens

result = check_kv_cache(solution_kv_cache_bytes)
print(f"the card's batch: {solution_kv_cache_bytes(36, 32, 8, 128, 16, 1184) / 1e9:.2f} GB")

# %% [markdown]
# ## What to take away
#
# - One run of the card's study is about 40 PFLOP but half an hour on an A100-40GB, because
#   decoding 8B parameters is bound by memory bandwidth, not arithmetic; the study is about
#   a day. A T4 cannot hold it; an L4 barely does.
# - The card trained LoRA adapters at a full-fine-tuning rate. A 10-50x smaller effective
#   step shrinks every arm's effect below a floor that does not shrink, and eight seeds then
#   have almost no power: "no arm differs" is what such a study reports whatever is true.
# - A corrected study is a new pre-registration (`lock-lora-rate.json`), hashed before any
#   run; and a replication on a newer TRL pins the knobs whose defaults moved.
# - The card's unstated defaults, faced on the tiny study: TRL 1.8's `dapo` aggregation and
#   GSPO's paper clip change no pre-registered verdict; on the card's one update per batch the
#   clip range cannot act at all.
