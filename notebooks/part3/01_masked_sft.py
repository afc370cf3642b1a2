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
# # Full-weight SFT with an assistant-only loss
#
# Supervised fine-tuning ({term}`SFT`) shows the model conversations and trains it to continue them.
# Which tokens it is trained to *produce* is a choice. Here only the assistant's reply and the
# end-of-turn marker that closes it are targets. The system line, the user's turn and the
# assistant header are context the model reads but is never asked to write.
#
# **What you will learn.** How a chat conversation becomes token targets, why the loss is
# counted on the assistant's tokens only ({term}`masked loss <Masked (assistant-only) loss>`)
# and what goes wrong without the mask, how to check that a tokenizer does not blur the
# boundary between prompt and reply, and how to read a before / after evaluation of 50
# items.
#
# The chapter follows the first lab of a course module on LLM post-training
# ({ref}`the post-training module <ref-module>`):
# - five families of synthetic engineering instructions with exactly checkable replies;
# - a hand-written {term}`ChatML` rendering and a check on the BPE boundary;
# - a plain few-shot probe before any training;
# - a diagnosis of the two chat-marker rows of the embedding;
# - 15 full-weight AdamW updates, with loss, stopping and exact answers before and after.
#
# We run it on SmolLM2-135M-**Instruct** ({ref}`Allal et al. 2025 <ref-smollm2>`; a 4-bit
# GGUF file, de-quantised to FP32); the published lab uses the **base** checkpoint. Loading the model is too slow for the notebook tests, so the
# data and arithmetic are computed live and every learned number is read from the run in
# `data/recorded/part3/sft-metrics.json`.

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

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from verifiable_grpo.book.notebook import Table, show
from verifiable_grpo.part3.sft_lab import masked_sft, past_turn
from verifiable_grpo.part3.smollm2 import chat_data, records, trainer

recorded = records.load_recorded("sft")
published = masked_sft.MODULE_REPORTS  # the published lab's figures, for the last section

# %% [markdown]
# ## Five families, one rule each
#
# Each family draws its numbers from a seeded generator, and its reply follows from the
# prompt by a fixed rule:
# - conversion: multiply by 1,000;
# - addition: add the two numbers;
# - extraction: copy the bearing temperature;
# - limit: PASS when the reading is at most the limit, else FAIL;
# - sorting: put three components in alphabetical order.
#
# Prompts are unique within the training set, and the 50 held-out prompts (10 per family)
# never appear in it.

# %%
train, held_out = chat_data.split(quick=True)
print("train:", len(train), "| held-out:", len(held_out),
      "| shared prompts:", len({r["user"] for r in train} & {r["user"] for r in held_out}))
Table(["family", "user", "reply"], [[r["family"], r["user"], r["reply"]] for r in train[:5]])

# %% [markdown]
# ## The rendering contract and the BPE boundary
#
# The conversation is written out by hand as ChatML, so the same bytes reach a model with or
# without a chat template:

# %%
print(chat_data.render_prompt(train[0]["user"]) + train[0]["reply"] + chat_data.END_OF_TURN)

# %% [markdown]
# The labels come from two tokenisations: the prompt alone, and the whole conversation. The
# targets are whatever follows the prompt's tokens. A BPE tokeniser may merge characters
# across the seam: if the prompt ended in a space and the reply began with a digit, `" 4"`
# could become one token. Then the prompt tokens seen in training would not be the ones seen
# at generation time. `encode` refuses any conversation whose prompt tokens are not an exact
# prefix. The assistant header ends in a newline, and SmolLM2's tokenizer never merges that
# newline with what follows.
#
# Here is the first conversation of the recorded run, token by token. Targets are marked.

# %%
table = recorded["token_table"]
Table(["position", "id", "token", "target"],
      [[t["position"], t["id"], repr(t["token"]), "yes" if t["target"] else ""]
       for t in table if t["position"] in (0, 1, 2, 19, 20, 35, 36, 37, 38) or t["target"]])

# %%
targets = [t["token"] for t in table if t["target"]]
print("targets of the first conversation:", targets)
print(f"trained fraction of shifted positions: {100 * recorded['trained_fraction']:.3f} %")

# %% [markdown]
# Only about one position in ten is trained. The rest is the repeated system line, the
# user's turn and headers.
#
# **The loss.** Position $t$'s logits predict token $t+1$, so targets are compared with the
# logits one step earlier. A batch's loss is the sum of the target tokens' negative
# log-probabilities divided by the number of target tokens:
#
# $$ L = \frac{1}{\sum_i |T_i|} \sum_i \sum_{t \in T_i} -\log p_\theta(x_{i,t} \mid x_{i,<t}) . $$
#
# This is a token mean over the batch, not a mean of per-conversation means. A four-token
# reply weighs four times as much as a one-token one.
#
# ## Before training: a plain probe and the chat rows
#
# Can the model add or compare numbers at all, without any chat format? Three worked lines
# are followed by the query; the first word of the greedy continuation is the answer.

# %%
probe = recorded["probe"]
Table(["plain 3-shot probe (50 items)", "exact", "majority baseline"], [
    ["addition", probe["addition"]["exact"], probe["addition"]["majority_baseline"]],
    ["limit (PASS / FAIL)", probe["limit"]["exact"], probe["limit"]["majority_baseline"]],
], digits=2)

# %% [markdown]
# A limit-check score equal to the majority baseline means nothing was read from the
# numbers. Always answering the more common label scores the same.
#
# **The chat rows.** The tokens `<|im_start|>` (id 1) and `<|im_end|>` (id 2) have rows in the
# embedding table. SmolLM2 ties the embedding to the output head, so row 2 is also the output
# weight that must win when the model should stop. In the *base* checkpoint these rows look
# untrained: they are nearly parallel and sit among other unused special tokens. The lab's
# fix is to re-draw both rows from the table's per-dimension mean and standard deviation
# before training.

# %%
rows = recorded["chat_rows"]
print(f"cosine(row 1, row 2): {rows['before']['cosine']:.5f} before re-drawing, "
      f"{rows['after']['cosine']:.5f} after")
Table(["nearest rows to <|im_end|>", "id", "cosine"],
      [[repr(n["token"]), n["id"], n["cosine"]] for n in rows["before"]["nearest_to_end"]],
      digits=4)

# %% [markdown]
# **What the diagnosis shows on the instruct model.** SmolLM2-135M-Instruct was trained on
# ChatML, so one might expect distinct marker rows. The recorded diagnosis says otherwise.
# In this 4-bit copy, rows 1 and 2 still have a cosine of about 0.990, and the rows nearest
# to `<|im_end|>` are other special tokens that chat data never uses. Several of them have
# exactly the same cosine. They share it because those rows are bit-identical in the GGUF
# file: we checked rows 5, 9, 11 and 36743. 4-bit quantisation has collapsed near-identical
# untrained rows into one.
#
# Yet the instruct model already stops on 31 of the 50 held-out prompts before any training
# (the "before" column below). A row close to many others can still win the
# softmax: what decides stopping is how the hidden state scores row 2 against the rest,
# and a small component outside the shared direction is enough. The cosine is therefore a
# hint that rows look untrained, not a test of whether a model can stop.
#
# Re-drawing the rows throws away what instruct training put into them. We keep the step so
# the run follows the lab's recipe, and training then has to relearn stopping from
# re-drawn rows. The ablation that keeps the rows (`--no-row-init`) is the fair test of
# what the step costs on this model.
#
# ## Training and the before / after scores
#
# The run makes 15 AdamW updates (learning rate 1e-4, no weight decay) on batches of 16,
# which is exactly one epoch of the 240 conversations. The schedule is one warmup update,
# then a cosine decay to zero, with the gradient norm clipped at 1.0.

# %%
history = {h["step"]: h["loss"] for h in recorded["history"]}
Table(["update", "training loss"], [[s, history[s]] for s in (1, 5, 10, 15)], digits=4)

# %%
fig, ax = plt.subplots(figsize=(6, 3))
ax.plot(list(history), list(history.values()), marker="o", ms=3, label="instruct, Q4_1")
ax.set_xlabel("update"); ax.set_ylabel("masked loss (nats/token)"); ax.legend(); fig.tight_layout()
show(fig)

# %% [markdown]
# **What the QUICK run costs.** The lab sizes it to finish within 5 minutes on a laptop
# CPU. The record keeps two clocks: the 15 updates alone, and the whole command (loading
# the cached FP32 weights, both held-out evaluations, the probe, two crash checkpoints of
# weights and AdamW moments, 1.6 GB each, and saving the policy). It ran on a 2-core CPU.

# %%
Table(["QUICK run", "15 updates (s)", "whole command (s)"],
      [["recorded", f"{recorded['training_seconds']:.1f}", f"{recorded['provenance']['wall_seconds']:.1f}"]])

# %%
b, a = recorded["before"], recorded["after"]
rows = [[k, b[k], a[k]] for k in ("loss", "stop", "exact")]
rows += [[f"exact: {f}", b["families"][f], a["families"][f]] for f in chat_data.FAMILIES]
Table(["held-out (50)", "before", "after"], rows, digits=4)

# %%
Table(["expected", "generated after SFT"],
      [[r["reply"], g] for r, g in list(zip(recorded["held_out"], a["replies"]))[:10]])

# %% [markdown]
# **Three ablations and a longer budget.** We recorded the lab's single-seed ablations:
# the FULL budget, keeping the chat rows as loaded, and the loss on every token. FULL
# trains on 400 conversations, and its 50 held-out prompts are drawn to avoid those 400.
# Its held-out set therefore differs in part from QUICK's (its "before" loss is 2.5425,
# not 2.4340).

# %%
ours = {"default QUICK": recorded, "no chat-row init": records.load_recorded("sft-no-row-init"),
        "no masking": records.load_recorded("sft-no-mask"),
        "FULL (50 updates)": records.load_recorded("sft-full")}
commands = {"FULL (50 updates)": "lab sft --full", "no chat-row init": "lab sft --no-row-init",
            "no masking": "lab sft --no-mask", "default QUICK": "lab sft"}
Table(["run", "exact", "stop", "command"],
      [[name, ours[name]["after"]["exact"], ours[name]["after"]["stop"], commands[name]]
       for name in commands], digits=2)

# %% [markdown]
# Keeping the chat rows as loaded, the instruct model stops on every held-out prompt, as
# the default run does, and scores a little lower on exact answers (0.62 against 0.70).
# One seed and 50 items cannot separate 0.62 from 0.70. The stopping result is the point:
# the instruct model's `<|im_end|>` row already works, although its cosine to row 1 is
# 0.990. The lab's fix answers a question this model does not pose.
#
# Without masking, exact match falls by 10 points (0.60 against 0.70), and the held-out loss on the reply tokens is higher (0.3701 against
# 0.2644). With one seed and 50 items, 10 points is not clearly more than noise. Without
# the mask, about nine in ten terms of the loss are system and user tokens, which the
# instruct model already predicts well. Exercise 4 shows what it learns from that text
# all the same: to write the user's next turn.
# The held-out loss above is still measured on the reply tokens only, for every run.
#
# FULL (50 updates over two epochs of 400 conversations) reaches 0.82 exact with 100 %
# stopping. More than three times the updates bought 12
# points over QUICK's 0.70, and the mix moved: conversion rises from 0.8 to 1.0, addition
# from 0.3 to 0.7 and sorting from 0.5 to 0.8, while the limit comparison falls from 0.9 to
# 0.6. Extraction scores 1.0 after every run. Addition and the limit check swing the most from
# one run to the next: they need arithmetic or a comparison on the prompt's numbers, not
# just the format, and 10 items per family cannot pin them down.

# %% [markdown]
# ### Try this, recorded: keep the rows and train longer
#
# The lab asks for one more run of the setting that keeps the chat rows as loaded:
# stop after 20 updates instead of 15 (`lab sft --no-row-init --steps 20`). The first 15
# batches are the same rows in the same order, and both runs take their first two updates
# at the full learning rate; from the third on, the cosine of the longer run decays more
# slowly, so the two runs part there. The last five updates start a second pass over the
# 240 conversations.

# %%
from verifiable_grpo.part3 import lab_variants

updates = lab_variants.sft_rows()
Table(["updates (rows kept as loaded)", "last training loss", "held-out loss", "stop", "exact",
       *chat_data.FAMILIES],
      [[n, r["final_loss"], r["loss"], f"{r['stop']:.2f}", f"{r['exact']:.2f}",
        *(f"{r['families'][f]:.1f}" for f in chat_data.FAMILIES)]
       for n, r in sorted(updates.items())], digits=4)

# %% [markdown]
# The lab asks whether 20 updates make this setting stop more often. On the instruct model
# the question does not arise:
# both runs stop on all 50 held-out prompts. Five more updates lower the held-out loss
# from 0.3235 to 0.2460 and raise exact match from 0.62 to 0.68; the whole gain is in
# conversion (0.6 to 0.9), and every other family scores the same. Three items out of 50,
# in one seed, are within what another draw could change. The training losses show the
# shared start: the same values at updates 1 to 3, apart from update 4 on, and at update 15
# the longer run is at 0.1729 where the shorter one ended at 0.2021: its learning rate
# decays more slowly.

# %% [markdown]
# ### Try this, recorded: a sixth family that counts letters
#
# The lab suggests a new family, letter counting, with its own evaluation prompts, and
# warns that a new template does not bring a new skill with it. Our generator
# (`chat_data.letters_split`) asks "How many letters are in the word W?" for 64
# engineering words. A seeded shuffle holds 10 of them out, and the training rows use
# others only, so no held-out word is ever trained on. The run adds one letters row after
# each round of the five families (288 conversations) and trains one epoch, 18 updates,
# with everything else as in QUICK (`lab sft --letters`). Held out: the 50 prompts of
# QUICK and the 10 letter words.
#
# Two things are scored separately for the new family. **Format**: the reply is a bare
# number. **Correctness**: it is the right number.

# %%
letters = records.load_recorded("sft-letters")
print(f"{letters['train_rows']} training conversations, {letters['held_out_rows']} held out, "
      f"{letters['steps']} updates; {letters['training_seconds']:.0f} s of training, "
      f"{letters['provenance']['wall_seconds']:.0f} s for the whole command")
Table(["held-out family", "default QUICK: exact after", "with letters: exact before",
       "with letters: exact after"],
      [[f, recorded["after"]["families"].get(f, "-"), letters["before"]["families"][f],
        letters["after"]["families"][f]] for f in letters["after"]["families"]], digits=2)

# %%
asked = [(row, reply) for row, reply in zip(letters["held_out"], letters["after"]["replies"])
         if row["family"] == "letters"]
word = lambda row: row["user"].rsplit(" ", 1)[1].rstrip("?")
print(f"format: {sum(r.isdigit() for _, r in asked)} of {len(asked)}; "
      f"correct: {sum(r == row['reply'] for row, r in asked)} of {len(asked)}")
Table(["held-out word", "letters", "reply after SFT", "a bare number", "right"],
      [[word(row), row["reply"], reply, reply.isdigit(), reply == row["reply"]]
       for row, reply in asked])

# %% [markdown]
# The template took, the skill did not. After 18 updates every held-out letters reply is a
# bare number that stops, where before the fine-tune the model wrote sentences ("The word
# "relay" has 1 letters."). But the numbers are mostly 6, the length the model guesses for
# almost any word, so only the two six-letter words come out right: 0.2 exact. The model
# sees tokens, not letters, and 48 examples of the answer's form do not teach it to count
# the characters inside a token. The five old families score about as they did after QUICK
# (the table above: 34 of their 50 items right, against 35); one seed and 10 items per
# family cannot say whether the sixth family cost the others anything.

# %% [markdown]
# ## Beside the published lab
#
# The published lab runs the same recipe on SmolLM2's **base** checkpoint in FP32. Its
# figures are gathered here, beside ours, once. They differ for five reasons:
# - **The starting point.** The instruct model already follows ChatML and often stops, so its
#   "before" loss and stop rate are not the base model's 7.26 nats and 0 %.
# - **4-bit weights**, de-quantised to FP32.
# - **Our own data draw**, made with the same rules but not the same code.
# - **Another CPU.** Another processor or library build rounds the last digits of every
#   sum differently, and greedy decoding can turn such a difference into another token.
# - **Re-drawn chat rows.** On the instruct model this step removes trained rows instead
#   of repairing untrained ones.

# %%
side = [["trained share of positions (%)", f"{100 * recorded['trained_fraction']:.3f}",
         f"{published['trained_fraction_percent']:.3f}"],
        ["probe: addition exact", probe["addition"]["exact"], published["probe"]["addition"]],
        ["probe: limit exact (majority)", probe["limit"]["exact"],
         f"{published['probe']['limit']:.2f} ({published['probe']['limit_majority']:.2f})"],
        ["cosine(row 1, row 2) before re-drawing", f"{recorded['chat_rows']['before']['cosine']:.5f}",
         f"{published['chat_rows']['cosine_before']:.5f}"],
        ["cosine(row 1, row 2) after", f"{recorded['chat_rows']['after']['cosine']:.5f}",
         f"{published['chat_rows']['cosine_after']:.5f}"]]
side += [[f"training loss, update {s}", history[s], published["loss"][s]] for s in sorted(published["loss"])]
side += [["15 updates (s)", f"{recorded['training_seconds']:.1f}", f"{published['training_seconds']:.1f}"]]
side += [[f"held-out {k}: before / after", f"{b[k]:.4f} / {a[k]:.4f}",
          f"{published['before'][k]:.4f} / {published['after'][k]:.4f}"] for k in ("loss", "stop", "exact")]
side += [[f"held-out exact: {f}", a["families"][f], published["families"][f]] for f in chat_data.FAMILIES]
side += [[f"{name}: exact / stop", f"{ours[name]['after']['exact']:.2f} / {ours[name]['after']['stop']:.2f}",
          f"{exact:.2f} / {stop:.2f}"] for name, (exact, stop) in published["ablations"].items()]
print("the published run's first conversation has the targets:", published["first_targets"])
print("its rows nearest to <|im_end|>:",
      ", ".join(f"{t!r} {c:.4f}" for t, c in published["chat_rows"]["nearest_to_end"]))
Table(["quantity", "ours (instruct, Q4_1)", "the published run (base, FP32)"], side, digits=4)

# %% [markdown]
# On the base model the diagnosis is sharper: rows 1 and 2 have a cosine of 0.99976. There,
# keeping the rows was the worst setting: 2 % exact and 2 % stopping after 15 updates,
# where on the instruct model it is harmless. Without masking the published run lost 18
# points of exact match (0.48 against 0.66), more than our 10, and its FULL budget reached
# 0.90 exact against our 0.82.

# %% [markdown]
# ## Exercise with a checker: the share of positions a batch trains on
#
# Exercise 3 below asks which mean `batch_loss` takes; the same question decides the
# *trained fraction* this chapter printed above. Write `my_trained_fraction(masks)`: `masks`
# is a list of conversations, each a list of 0/1 over its shifted positions (1 where the
# position is a target). Return the share of the batch's positions that are targets. The
# checker runs hidden batches and names the mistake; a worked solution is hidden below.

# %%
def my_trained_fraction(masks):
    raise NotImplementedError("replace this line with your code")

# %%
from verifiable_grpo.exercises import check_trained_fraction

result = check_trained_fraction(my_trained_fraction)

# %% [markdown]
# ```{admonition} Worked solution
# :class: dropdown
# Count targets and positions over the whole batch, then divide once. A mean of
# per-conversation shares weighs a 2-token conversation like a 200-token one.
# ```

# %% tags=["hide-input"]
def solution_trained_fraction(masks):
    return sum(sum(m) for m in masks) / sum(len(m) for m in masks)


result = check_trained_fraction(solution_trained_fraction)

# %% [markdown]
# ## Exercises
#
# 1. In the first conversation, which shifted positions are trained? Count them, and say why
#    the assistant header's tokens are not targets even though they always follow a user turn.
# 2. The schedule: write down the learning-rate multiplier of each of the 15 QUICK updates
#    (warmup `max(1, round(0.05 × 15))`, then cosine to zero). Why does the last update still
#    move the weights?
# 3. Two conversations in one batch have 2 and 6 target tokens with summed losses 1.0 and 3.0
#    nats. Compute the token mean and the mean of per-conversation means. Which one does
#    `batch_loss` give?
# 4. **Try this.** Let generation run past the end of the turn: stop only at
#    `<|endoftext|>`, so an emitted `<|im_end|>` no longer ends the reply, and read what
#    follows it on the 50 held-out prompts, for the masked run and the `--no-mask` run
#    (`python -m verifiable_grpo lab sft-past-turn`, after both). Which model goes on to
#    write the user's next turn, and why would masking make a difference?

# %% [markdown]
# ```{admonition} Worked solution 1
# :class: dropdown
# The targets are the reply's tokens and the closing `<|im_end|>`: 6 of the 44 shifted
# positions (45 tokens). The header is the same for every conversation and always written by
# the template, so the model never needs to produce it. Training on it would spend capacity
# on a constant, and would dilute the loss on the part that varies. The next cell counts it.
# ```

# %% tags=["hide-cell"]
shifted = len(table) - 1
print(f"{len(targets)} targets of {shifted} shifted positions = {len(targets) / shifted:.4f}")

# %% [markdown]
# ```{admonition} Worked solution 2
# :class: dropdown
# Warmup is 1 update, so update 1 uses the full rate. Updates 2–15 use
# $\tfrac12(1 + \cos(\pi k/14))$ for k = 0…13, so update 2 also runs at the full rate. The
# last update uses k = 13, which is still positive (about 0.013). The multiplier would reach
# 0 only at k = 14, after the final update, so every one of the 15 updates moves the
# weights. The next cell prints the multipliers.
# ```

# %% tags=["hide-cell"]
factor = trainer.warmup_cosine(steps=15, warmup=max(1, round(0.05 * 15)))
print(" ".join(f"{factor(s):.3f}" for s in range(15)))

# %% [markdown]
# ```{admonition} Worked solution 3
# :class: dropdown
# Token mean: (1.0 + 3.0) / (2 + 6) = 0.5 nats/token. Mean of means: (1.0/2 + 3.0/6) / 2 =
# 0.5 here, by coincidence. With summed losses 1.0 and 6.0, the token mean is 0.875 and the
# mean of means 0.75. `batch_loss` returns the sum and the count, and the loop divides
# one by the other: it gives the token mean. Every target token weighs the same, however
# long its reply.
# ```

# %% [markdown]
# ```{admonition} Worked solution 4 (the recorded run, in the next cell)
# :class: dropdown
# Only the run trained on every token. Once `<|im_end|>` no longer stops generation, the
# masked policy writes `<|im_end|>` after every one of its 50 replies and then repeats that
# token until the budget runs out: it opens no new turn, because nothing after the end of
# its own reply was ever a target. The unmasked policy opens a new turn after 24 of its 50
# replies. In 23 of them the new turn is the user's: the model writes the next request
# itself, in the style of the training prompts, and in 15 of those it goes on to answer that
# request as the assistant. (The 24th opens a turn with an invented role and writes a
# system line.) The unmasked loss made every token of the user's turn and the system line a
# target, so the model learned to continue a conversation from either side. A stop on
# `<|im_end|>` hides this in normal use; a serving stack that misses the stop token would
# show the model writing the user's side of the conversation.
# ```

# %% tags=["hide-cell"]
past = records.load_recorded("sft-past-turn")
Table(["policy", "held-out prompts", "emitted <|im_end|>", "then opened a turn", "opened a user turn"],
      [[label, r["n"], r["ended_turn"], r["opened_turn"], r["opened_user_turn"]]
       for label, r in past["results"].items()])

# %% tags=["hide-cell"]
unmasked = past["results"]["every token (lab sft --no-mask)"]
shown = [k for k, text in enumerate(unmasked["continuations"]) if past_turn.USER_TURN in text][:3]
Table(["policy", "prompt", "continuation (first 90 characters)"],
      [[label, past["held_out"][k]["user"], repr(r["continuations"][k][:90])]
       for k in shown for label, r in past["results"].items()])
