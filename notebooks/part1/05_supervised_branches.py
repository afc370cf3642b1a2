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
#
# %% [markdown]
# # Warm-start SFT and further SFT
#
# Before any reinforcement learning, the model must learn to answer in the expected JSON at
# all. The **warm start** teaches that on 128 examples (3 epochs of 16 updates of 8
# examples: 48 updates). **Further SFT** then continues from the warm start on the other
# 872 training examples for 2 epochs (218 updates): the supervised baseline GRPO has to
# beat. GRPO itself starts from the warm start, not from further SFT.
#
# You will learn which tokens a supervised loss should score, how to average it over a batch
# of answers of different lengths, and what a falling validation loss does and does not
# tell you about the answers a model will sample.
#
# **Invariant.** Only response tokens are supervised, the closing `<|im_end|>` included;
# the loss of an update is the sum of the token cross-entropies of its 8 examples divided
# by their total number of response tokens; dropout is off during updates; validation NLL is
# measured after every epoch and never used to pick a checkpoint; no test problem is
# visible to learning.

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

import tempfile

import torch

from verifiable_grpo.book import plots
from verifiable_grpo.task import prompts
from verifiable_grpo.core import scoring
from verifiable_grpo.training import sft
from verifiable_grpo.core.config import load_config
from verifiable_grpo.core.model import load_base
from verifiable_grpo.book.notebook import Table, choose_profile, load_recorded, rounded_prints, show

config = load_config(choose_profile())
print("live profile:", config["profile"])

# %% [markdown]
# ## What is supervised
#
# A training example is the chat prompt followed by the canonical answer and the EOS token.
# The mask is set by *position*: everything up to the end of the prompt is context, the rest
# is target. Logits at position $t$ predict token $t+1$, so the first supervised score sits
# on the first answer token and the last one on `<|im_end|>`.

# %%
model, tokenizer = load_base(config)
statement = "Initial stock 12. Deliveries 5 and 7. Withdrawals 3 and 4."
row = prompts.completion_row(tokenizer, statement, '{"final_stock": 17}', config)
ids = torch.tensor([row["input_ids"]])
with torch.no_grad():
    logprobs = scoring.token_logprobs(model, ids, torch.ones_like(ids))
table = scoring.token_table(tokenizer, ids, logprobs, torch.tensor([row["response_mask"]]))
print("prompt tokens:", row["prompt_length"], "| response tokens (EOS included):", row["response_tokens"])
Table(["position", "token", "supervised", "log p (base model)"],
      [[r["position"], repr(r["token"]), r["supervised"], r["logprob"]]
       for r in table[row["prompt_length"] - 3:]], digits=3)

# %% [markdown]
# The base model was never shown the key `final_stock`, so `_stock` after `final` is far
# from certain, while the digits already carry its (imperfect) arithmetic.
#
# ## A live warm start
#
# The same code runs here on the smoke profile (a few examples, seconds; the full budget
# when a GPU is present). It writes its own dataset and a learning view without any test
# material into a temporary folder.
#
# Losses and NLLs computed live are shown to three decimals, here and in the lines the
# training loop prints: further digits differ from one CPU to another. The recorded run
# further down prints what its files hold.

# %%
live = tempfile.mkdtemp(prefix="warmstart-")
sft.ensure_learning_view(config, live)      # dataset + a view without test material
with rounded_prints(decimals=3):
    record = sft.run_sft_branch(config, live, "warmstart", "continuous")
Table(["update", "epoch", "learning rate", "loss", "tokens"],
      [[h["update"], h["epoch"], h["learning_rate"], h["loss"], h["tokens"]] for h in record["history"]],
      digits=[0, 0, 5, 3, 0])

# %%
Table(["epoch", "after update", "validation NLL", "used to select?"],
      [[v["epoch"], v["updates"], v["nll"], v["used_for_selection"]] for v in record["validation_history"]],
      digits=3)

# %% [markdown]
# Further SFT starts from the warm start's *final* policy, the one a resumed run writes
# (the resume chapter shows that it equals the continuous run's). So the live demo first
# produces it (interrupt, then resume), then runs further SFT from it:

# %%
with rounded_prints(decimals=3):
    for mode in ("interrupt", "resume"):
        sft.run_sft_branch(config, live, "warmstart", mode)
    further_live = sft.run_sft_branch(config, live, "sft", "continuous")
print("further SFT starts from the warm start's final weights:",
      further_live["initial_model_digest"] == record["final_model_digest"])
Table(["update", "epoch", "learning rate", "loss", "tokens"],
      [[h["update"], h["epoch"], h["learning_rate"], h["loss"], h["tokens"]]
       for h in further_live["history"]], digits=[0, 0, 5, 3, 0])

# %% [markdown]
# ## The recorded tiny run
#
# The tiny profile ran both branches with the budgets of
# {ref}`the practical's specification <ref-practical>` (the assignment this part
# follows) on a CPU, with learning rate 2e-4 instead of its 2e-5 (see [the tiny base's page](../../book/tiny-base.md)
# for why).

# %%
warm = load_recorded("learning/warmstart-continuous.json")
further = load_recorded("learning/sft-continuous.json")
display(show(plots.plot_sft_curves({"warmstart": warm, "sft": further})))

# %%
Table(["branch", "examples", "epochs", "updates", "validation NLL per epoch", "final = initial?"],
      [[r["branch"], r["examples"], r["epochs"], r["updates"],
        ", ".join(f"{v['nll']:.4f}" for v in r["validation_history"]), not r["weights_changed"]]
       for r in (warm, further)])

# %% [markdown]
# Costs are not equal across branches, and the book does not pretend they are: further SFT
# sees 872 examples twice, the warm start 128 three times.

# %%
Table(["branch", "optimisation s", "validation s", "command s", "state MB"],
      [[r["branch"], r["timings"]["optimisation_seconds"], r["timings"]["validation_seconds"],
        r["timings"]["command_seconds"], r["state"]["bytes"] / 1e6] for r in (warm, further)],
      digits=1)

# %% [markdown]
# A falling validation NLL says the model assigns more probability to the reference
# answers; it does not say that its own sampled answers are more often right. That is
# measured on the test set in the evaluation chapter.
#
# ## Error to diagnose: averaging the averages
#
# With 8 examples per update there are two plausible normalisations: the mean over all
# supervised tokens of the batch (what the practical asks for), or the mean over
# examples of each example's own token mean. They differ whenever answers have different
# lengths, and the second silently gives the tokens of short answers more weight.

# %%
batch = [prompts.completion_row(tokenizer, statement, text, config)
         for text in ('{"final_stock": 7}', '{"final_stock": 117}')]
collated = prompts.collate(batch, tokenizer.pad_token_id)
with torch.no_grad():
    scores = scoring.token_logprobs(model, collated["input_ids"], collated["attention_mask"])
token_level, tokens = sft.accumulation_loss(scores, collated["response_mask"])
sums, counts = scoring.masked_sums(scores, collated["response_mask"])
print("response tokens per example:", counts.tolist())
print(f"loss over all tokens of the accumulation: {float(token_level):.3f}")
print(f"mean of per-example means (not used):     {float((-sums / counts).mean()):.3f}")

# %% [markdown]
# ## On a GPU: what the qwen profile would cost (estimates)
#
# On a runtime with a CUDA GPU (Colab), the chapters' live cells use a few iterations of
# Qwen2.5-0.5B-Instruct (the `qwen-live` profile); the full `qwen` run is one command and
# takes hours. Before it starts, `python -m verifiable_grpo plan --config qwen` prints what
# it will take: disk, generated tokens and hours per GPU class. The book's runs were made
# without a GPU, so the hours are **estimates from a cost model**, whose structure was
# checked against a qwen-shaped stand-in's measured CPU steps, not measurements. The
# faithful profile samples one sequence at a time without a KV cache, as the practical
# does; `qwen-fast` decodes in padded batches with a cache.

# %%
from verifiable_grpo.part1 import run_plan

for profile in ("qwen", "qwen-fast"):
    print(run_plan.format_plan(run_plan.build_plan(load_config(profile))), end="\n\n")

# %% [markdown]
# ## Exercise: the supervised loss of one accumulation
#
# Write `my_sft_loss(token_logprobs, mask)`: `token_logprobs` is float64 `[B, T]` (the
# log-probability of each target token), `mask` is boolean `[B, T]`, True on the supervised
# positions. Return the negative log-likelihood averaged over **all** supervised tokens of
# the batch, as the practical asks. Positions outside the mask may hold anything, even
# $-\infty$. The checker names the mean of per-example means from the section above.

# %%
def my_sft_loss(token_logprobs, mask):
    raise NotImplementedError("replace this line with your code")

# %%
from verifiable_grpo.exercises import check_sft_loss

result = check_sft_loss(my_sft_loss)

# %% [markdown]
# ```{admonition} Worked solution
# :class: dropdown
# `torch.where` selects instead of multiplying, so a
# $-\infty$ in the padding never turns into NaN.
# ```

# %% tags=["hide-input"]
def solution_sft_loss(token_logprobs, mask):
    picked = torch.where(mask, token_logprobs, torch.zeros_like(token_logprobs))
    return -picked.sum() / mask.sum()

result = check_sft_loss(solution_sft_loss)
