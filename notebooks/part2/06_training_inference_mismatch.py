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
# # The training-inference mismatch, measured
#
# GRPO's ratio $\rho = \pi_\theta / \pi_{\text{old}}$ is exactly 1 on the first update of a
# rollout set, in theory: the tokens were just drawn from the same weights. In practice the
# sampler and the trainer compute $\log \pi$ along different numerical paths, and the
# "on-policy" ratio is $\exp(\log p_{\text{train}} - \log p_{\text{sample}})$, not 1.
#
# **What you will learn.** Which numerical differences between a sampler and a trainer
# matter, measured on the book's own warm start: KV-cache decoding against one
# full-sequence forward, one row against a left-padded batch, float32 against bfloat16,
# eager against SDPA attention. For each: the per-token log-ratio, what the PPO clip makes of
# it, and how far it moves the gradient. Then the two corrections engines ship, truncated and
# masked importance sampling, and which mismatch the book's own $2\times10^{-4}$ check bounds.
# Last, the mismatch and both corrections on three recorded training runs.

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

import copy

import matplotlib.pyplot as plt
import torch

from verifiable_grpo.book.notebook import Table, recorded_policy
from verifiable_grpo.core.config import load_config
from verifiable_grpo.task import data, prompts
from verifiable_grpo.task.statements import render_statement
from verifiable_grpo.training import mismatch, rollout

config = load_config("tiny")
policy, tokenizer, _ = recorded_policy("warmstart", config=config)
policy.eval()
pad_id = prompts.eos_id(tokenizer, config)

# %% [markdown]
# ## Why the ratio is not 1
#
# Floating-point addition is not associative. Two computations of the same logit that add
# the same numbers in another order, or in another precision, round differently. A sampler
# that decodes with a KV cache multiplies one new query by cached keys; a trainer that
# rescores the whole sequence multiplies a full query matrix. A batch with padding changes
# the matrix shapes and hence the kernels' blocking. bfloat16 keeps 8 bits of mantissa
# instead of float32's 24. Production setups stack all of these: a vLLM sampler in bf16 with
# its own kernels, a trainer in another precision with another attention. Each engine now
# corrects for it; TRL's `GRPOTrainer` ({ref}`TRL <ref-trl>`) applies its
# correction by default whenever it samples with vLLM.
#
# We draw 16 responses (4 training problems, 4 answers each) from the recorded warm start
# with the book's sampler (KV cache, float32, eager attention), keep the log-probs it
# captured, and rescore the same tokens along the other paths.

# %% tags=["nbval-ignore-output"]
problems = data.generate_problem_set(config["data"]["seed"])
sampler = rollout.Sampler(policy, tokenizer, config, torch.Generator().manual_seed(7))
rows = []
for index, (problem, _) in enumerate(problems["train"][:4]):
    prompt = prompts.prompt_ids(tokenizer, render_statement(problem, 0), config)
    rows += [rollout.generate(sampler, prompt) for _ in range(4)]

sdpa_policy = copy.deepcopy(policy)
sdpa_policy.set_attn_implementation("sdpa")
paths = {name: mismatch.score_path(policy, rows, name, pad_id)
         for name in ("kv_cache", "one_by_one", "padded_batch", "bf16")}
paths["sdpa"] = mismatch.score_path(sdpa_policy, rows, "one_by_one", pad_id)
print(f"{len(rows)} responses, {sum(len(r['response_ids']) for r in rows)} response tokens")

# %% [markdown]
# ## Four mismatches
#
# Each pair below is (trainer path, sampler path); the reference trainer is the float32
# eager forward over one whole sequence. The columns: the largest and the 99th-percentile
# $|\log p_{\text{train}} - \log p_{\text{sample}}|$ over tokens, the largest $|\rho - 1|$,
# the largest summed log-ratio of a sequence (what a sequence-level ratio sees), and the
# fraction of tokens whose ratio falls outside the clip interval $[0.8, 1.2]$. The exact
# values depend on your CPU's kernels; their orders of magnitude do not.

# %% tags=["nbval-ignore-output"]
pairs = {"(a) KV cache vs full rescoring": ("one_by_one", "kv_cache"),
         "(b) padded batch vs one row": ("padded_batch", "one_by_one"),
         "(c) bf16 autocast vs float32": ("bf16", "one_by_one"),
         "(d) SDPA vs eager attention": ("sdpa", "one_by_one")}
summaries = {label: mismatch.log_ratio_summary(paths[train], paths[sample])
             for label, (train, sample) in pairs.items()}
Table(["mismatch", "max |log-ratio|", "q99 |log-ratio|", "max |rho - 1|", "max |seq log-ratio|",
       "outside [0.8, 1.2]"],
      [[label, f"{s['max_abs']:.1e}", f"{s['q99_abs']:.1e}", f"{s['max_ratio_deviation']:.1e}",
        f"{s['max_sequence_abs']:.1e}", s["clip_outside_fraction"]]
       for label, s in summaries.items()], digits=3)

# %%
# The robust reading of the table above, the same on any CPU:
float32_paths = [summaries[label]["max_abs"] for label in list(pairs)[:2] + list(pairs)[3:]]
print("float32 paths (a), (b), (d) within the book's 2e-4 check:",
      all(value <= 2e-4 for value in float32_paths))
print("bf16 autocast (c) above 1e-2:", summaries["(c) bf16 autocast vs float32"]["max_abs"] > 1e-2)

# %% tags=["nbval-ignore-output"]
figure, axis = plt.subplots(figsize=(7, 3.2))
for label, (train, sample) in pairs.items():
    gap = torch.cat([a - b for a, b in zip(paths[train], paths[sample])]).abs()
    axis.hist(torch.log10(gap.clamp(min=1e-9)).numpy(), bins=40, range=(-9, 0),
              histtype="step", label=label)
axis.set_xlabel("log10 |log p_train - log p_sample| (exact agreement drawn at -9)")
axis.set_ylabel("tokens")
axis.legend(fontsize=7)
figure.tight_layout()
plt.show()

# %% [markdown]
# The three float32 paths disagree in the last bits, near $10^{-6}$: a ratio of
# $1 \pm 10^{-5}$, far inside the clip. bfloat16 autocast is a different story: most tokens
# the warm start is sure of still agree, but the uncertain ones move by $10^{-1}$, a ratio
# off by about 10% on a single token.
#
# ## What the book's check bounds
#
# Before the first update the book rescores every captured response in one float32 eager
# full-sequence forward and refuses to train if any token differs by more than
# $2\times10^{-4}$ (`rollout.verify_captured_logprobs`). That check compares the sampler
# with the trainer *in the same float32 eager path*: it bounds (a), and the batched variant
# (b). It says nothing about a sampler in bfloat16, with another attention kernel, or in
# another engine such as vLLM: there the sampler's log-probs never meet the check, and the
# mismatch (c) is nearly three orders of magnitude above its tolerance.
#
# ## What it does to the gradient
#
# The gradient of the clipped surrogate (`losses.clipped_group_surrogate`) at $\theta =
# \theta_{\text{old}}$ depends on the "old" log-probs through $\rho$. We compute it twice:
# with the trainer's own float32 log-probs as old (the ratio exactly 1) and with each
# sampler path's log-probs as old, then compare the two gradients. The advantages are a
# fixed $\pm 1$ pattern, so the comparison does not depend on which answers were right.

# %% tags=["nbval-ignore-output"]
advantages = torch.tensor([1.0, -1.0] * (len(rows) // 2))
reference = mismatch.surrogate_gradient(policy, rows, paths["one_by_one"], advantages, pad_id)
gaps = {label: mismatch.gradient_gap(reference, mismatch.surrogate_gradient(
            policy, rows, paths[sample if train == "one_by_one" else train], advantages, pad_id))
        for label, (train, sample) in pairs.items()}
Table(["old log-probs from", "cosine to reference", "relative difference"],
      [[label.split(" vs ")[0], g["cosine"], f"{g['relative_difference']:.1e}"]
       for label, g in gaps.items()], digits=4)

# %%
bf16_gap = gaps["(c) bf16 autocast vs float32"]["relative_difference"]
float32_gaps = [g["relative_difference"] for label, g in gaps.items() if "bf16" not in label]
print("bf16 old log-probs move the gradient by more than 1%:", bf16_gap > 1e-2)
print("float32 old log-probs move it by less than 1e-3:", max(float32_gaps) < 1e-3)

# %% [markdown]
# ## Two corrections
#
# Engines keep the trainer's own log-probs as old (so $\rho = 1$ on the first update) and
# multiply each token's loss by an importance weight built from
# $r = \exp(\log p_{\text{train}} - \log p_{\text{sample}})$, per token or per sequence
# (the exponential of the row's summed log-ratio):
#
# - **truncated importance sampling (TIS):** weight $\min(r, C)$ (or $r$ clamped to
#   $[C_{\min}, C]$);
# - **masked importance sampling (MIS):** weight $r$ if $r \le C$ (and $r \ge C_{\min}$ when
#   one is set), otherwise 0: the token or the whole sequence is dropped.
#
# TRL 1.16.0 names the four variants `token_truncate`, `token_mask`, `sequence_truncate` and
# `sequence_mask` (`GRPOConfig.vllm_importance_sampling_mode`, default `"sequence_mask"`),
# with $C$ = `vllm_importance_sampling_clip_max` = 3.0 and no lower bound by default
# (`trl/trainer/grpo_config.py` lines 322–345; the weights are built in
# `trl/trainer/grpo_trainer.py` lines 2660–2706 and multiply the per-token loss at line
# 3147). `mismatch.importance_weights` builds the same four weights as a pure function.
#
# On the bfloat16 mismatch (sampler in bf16, trainer in float32):

# %% tags=["nbval-ignore-output"]
train_values, mask = mismatch.padded(paths["one_by_one"])
sample_values, _ = mismatch.padded(paths["bf16"])
corrected = {}
for mode in mismatch.MODES:
    weights = mismatch.importance_weights(train_values, sample_values, mask, mode)
    gradient = mismatch.surrogate_gradient(policy, rows, paths["one_by_one"], advantages,
                                           pad_id, weights=weights)
    dropped = float((weights[mask] == 0).double().mean())
    corrected[mode] = {**mismatch.gradient_gap(reference, gradient), "dropped": dropped,
                       "max_weight": float(weights[mask].max())}
Table(["correction (C = 3)", "cosine to float32 gradient", "relative difference", "max weight",
       "tokens dropped"],
      [["none, bf16 log-probs as old", gaps["(c) bf16 autocast vs float32"]["cosine"],
        f"{bf16_gap:.1e}", "-", 0.0]]
      + [[mode, c["cosine"], f"{c['relative_difference']:.1e}", c["max_weight"], c["dropped"]]
         for mode, c in corrected.items()], digits=4)

# %%
print("no weight reaches the cap C = 3, so nothing is truncated or masked:",
      all(c["max_weight"] < 3.0 and c["dropped"] == 0.0 for c in corrected.values()))
print("each correction moves the gradient by more than 1%:",
      all(c["relative_difference"] > 1e-2 for c in corrected.values()))

# %% [markdown]
# Three lessons. First, the first row and the `token_truncate` row agree: at
# $\theta = \theta_{\text{old}}$ the gradient of $\rho A$ is $\rho A \nabla \log \pi$, so
# using the sampler's log-probs as old *is* token-level importance weighting without a cap.
# Second, at $C = 3$ neither correction cuts anything here: a bf16-vs-float32 mismatch on a
# confident small model keeps every ratio within about 15% of 1, so TIS and MIS reduce to
# plain reweighting and their truncate and mask variants coincide. The cap acts only where
# sampler and trainer disagree by a factor of 3, which needs larger mismatches (other
# engines' kernels, top-p truncation) or long sequences, whose sequence ratio multiplies
# every token's. Third, the weights are what move the gradient away from the float32 one,
# by several percent on 16 responses: a correction removes the sampler's bias in
# expectation and pays for it in variance.
#
# ## The mismatch on a training run
#
# One gradient is a snapshot; a run compounds it. Three runs repeat chapter I.6's
# fixed-prompt GRPO (eight prompts, G = 8, 60 iterations, the same seeds) with a sampler
# that decodes under bfloat16 autocast while the trainer stays float32: Part I's GRPO with
# the sampler's log-probs as old (no correction), the same with token-level truncation
# (`grpo_tis`, $C = 3$), and with the sequence mask (`grpo_mis`, TRL's default). The
# book's $2\times10^{-4}$ check would stop every update of such a run, so its tolerance is
# set aside for these three; after training, every policy is probed with the float32
# sampler that measured the prompts before. "Clipped in first updates" is the share of
# tokens PPO's clip cut in the first update of each rollout set, where the policy still
# *is* the sampler's, so every clipped token there is the mismatch's doing; the weights
# are the corrections' over all 120 updates.

# %%
from verifiable_grpo.book import objective_plots
from verifiable_grpo.part1 import fixed_prompt_objectives, fixed_prompts

recorded_runs = fixed_prompt_objectives.recorded()
grpo_run = fixed_prompts.recorded()["ours"]
mismatch_names = [fixed_prompt_objectives.run_name(n, True)
                  for n in fixed_prompt_objectives.MISMATCH_RUNS]
mismatch_comparison = fixed_prompt_objectives.comparison(
    {name: recorded_runs["runs"][name] for name in mismatch_names}, grpo_run)
Table(list(objective_plots.MISMATCH_COLUMNS),
      objective_plots.mismatch_rows(recorded_runs, mismatch_comparison), digits=3)

# %%
mismatch_records = [recorded_runs["runs"][name] for name in mismatch_names]
weights = [(h["behaviour_weight_min"], h["behaviour_weight_max"])
           for result in mismatch_records[1:] for h in result["history"]]
first_clip = max(sum(r["first_update_clip_fraction"]) / len(r["first_update_clip_fraction"])
                 for r in mismatch_records)
print("no correction weight came near the cap C = 3:", max(w for _, w in weights) < 2.0)
print("no token or response was masked:",
      all(h["behaviour_weight_zero_fraction"] == 0.0
          for result in mismatch_records[1:] for h in result["history"]))
print("clipped share of first-update tokens below 0.1%:", first_clip < 1e-3)
print("every run still lifted every prompt:",
      all(row["prompts_improved"] == 8 for row in mismatch_comparison))

# %% [markdown]
# Three things to read. First, the bfloat16 sampler does put the first update's ratio off 1,
# but on this model almost never outside PPO's $[0.8, 1.2]$: the clip cut a few tokens in
# ten thousand. Second, the corrections reweighted and did nothing else. Per token the
# weights stayed within about 30 % of 1, and per response (a sum of gaps) within a factor
# under 2, far from the cap of 3, so TIS truncated nothing and MIS masked nothing: exactly
# what the single gradient above predicted, now over 120 updates. Third, success after
# training moved by a few points, and the intervals say little. Each run has one training
# seed, and the interval covers the choice of prompts, not the run's own randomness, so a
# change as small as the sampler's number format already moves the result by this much.
# The reading at this scale: the mismatch alone did no measurable harm (without a
# correction, −0.016 [−0.059, +0.012] against the float32 run) and the corrections did not
# help. One of them ended measurably *below* it: `grpo_tis` at −0.039 [−0.070, −0.012], an
# interval that excludes zero. That gap cannot be the correction acting, since TIS truncated
# nothing (its token weights stayed between 0.697 and 1.228). With one training seed per
# run and an interval that covers the prompts' draws, not the run's own randomness, the
# honest reading is a difference of runs, not of methods; a second seed per arm would say
# which. Larger mismatches (another engine's kernels, top-p truncation, long
# answers whose sequence ratio multiplies thousands of token gaps) are where the cap starts
# to act.
#
# ## Exercise: TRL's default correction
#
# Write `my_sequence_mask(train, sample, mask, cap)` for float64 log-probs `[B, T]` and a
# bool mask: each row's ratio is the exponential of the sum over its active tokens of
# $\log p_{\text{train}} - \log p_{\text{sample}}$; a row whose ratio exceeds `cap` gets
# weight 0 everywhere; any other row gets its ratio on its active tokens; inactive tokens
# get 0. The checker uses ragged rows with junk in the padding.

# %%
def my_sequence_mask(train, sample, mask, cap):
    raise NotImplementedError("replace this line with your code")

# %%
from verifiable_grpo.exercises.importance_correction import check_sequence_mask

result = check_sequence_mask(my_sequence_mask)

# %% [markdown]
# ```{admonition} Worked solution
# :class: dropdown
# Multiply by the mask *before* summing, so the
# padding never enters a row's ratio, and zero the row rather than clamp it.
# ```

# %% tags=["hide-input"]
def solution_sequence_mask(train, sample, mask, cap):
    ratio = ((train - sample) * mask).sum(dim=-1, keepdim=True).exp()
    ratio = torch.where(ratio > cap, torch.zeros_like(ratio), ratio)
    return ratio.expand_as(train) * mask

result = check_sequence_mask(solution_sequence_mask)

# %% [markdown]
# ## What to take away
#
# - The on-policy ratio is 1 only when the sampler and the trainer share one numerical
#   path. Same precision, different kernels or shapes: a $10^{-6}$ log-ratio, harmless.
#   Different precision: $10^{-1}$ on uncertain tokens, a gradient several percent off.
# - The book's $2\times10^{-4}$ check bounds the first kind only; a bf16 or vLLM sampler
#   needs a measurement like this one, and a correction.
# - TIS caps the weight, MIS drops what exceeds the cap; TRL's default is the sequence
#   mask with $C = 3$.
# - Over a whole run with a bfloat16 sampler, the clip barely noticed the mismatch, TIS and
#   MIS only reweighted (no weight near 3), and the policy learned its prompts either way.
