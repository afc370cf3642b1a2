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
# # The exact KL on visited prefixes
#
# GRPO keeps the policy close to a frozen reference with a KL penalty. Most implementations
# estimate that KL from the one token that was sampled at each position. This practical
# computes it exactly instead: at every prefix the sampled responses actually visited, it
# sums $p_\text{cur}(v)\,[\log p_\text{cur}(v) - \log p_\text{ref}(v)]$ over the **whole**
# vocabulary. The sum is exact up to rounding; what it does not do is enumerate prefixes
# that were never visited.
#
# You will learn how to compute the exact KL over a large vocabulary without holding a full
# softmax, how its gradient follows from the softmax, and how far the one-token estimators
# k1, k2 and k3 wander from it.
#
# **Invariant.** The blocked computation equals PyTorch's `kl_div` on the same
# distributions, whatever the block size; KL(p, p) = 0; and the sampled estimators k1 and k3
# are unbiased estimates of the same number.

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

import torch
import torch.nn.functional as F

from verifiable_grpo.part1 import demos
from verifiable_grpo.training import losses
from verifiable_grpo.task import prompts
from verifiable_grpo.core import scoring
from verifiable_grpo.book import widgets
from verifiable_grpo.core.config import load_config
from verifiable_grpo.core.model import load_base
from verifiable_grpo.book.notebook import Table, choose_profile, significant
from verifiable_grpo.task.statements import canonical_response, render_statement
from verifiable_grpo.task.verifier import compute_final_stock

torch.manual_seed(0)
config = load_config(choose_profile())
model, tokenizer = load_base(config)
print("profile:", config["profile"], "| vocabulary:", model.config.vocab_size)

# %% [markdown]
# What "exact on visited prefixes" means, drawn for a response of five tokens over a toy
# vocabulary of six entries (the model's has thousands):
#
# ![Five tokens of a sampled response side by side. Under each, the whole distribution of
# the policy and of the reference at the prefix that produced it, with the sampled entry
# outlined, and the exact KL at that prefix: near 0 for the JSON scaffolding, 0.29 and 0.24
# for the two digits. The response's terms are summed over every vocabulary entry at each
# visited prefix, not only the sampled one; the loss adds beta times their mean over the
# tokens.](../../book/images/exact_kl_prefixes.png)
#
# *The exact KL at each visited prefix sums over the whole vocabulary, not only over the
# token that was sampled.*
#
# ## Two real, nearby policies
#
# We need two genuinely different distributions of the model over its vocabulary. The
# reference is the base model; the "current" policy is a copy moved by one small gradient
# step on one answer, much as a few GRPO updates move a policy away from its reference.
# The prefixes are those of one prompt followed by its answer.

# %%
problem = {"initial": 12, "deliveries": [5, 7], "withdrawals": [3, 4]}
statement = render_statement(problem, 0)
row = prompts.completion_row(tokenizer, statement, canonical_response(compute_final_stock(problem)),
                             config)
ids = torch.tensor([row["input_ids"]])
mask = torch.tensor([row["response_mask"]])
current_model = demos.nudged_copy(model, ids, mask, learning_rate=0.02, steps=1)
with torch.no_grad():
    attention = torch.ones_like(ids)
    start = row["prompt_length"] - 1        # logits at t predict token t+1: the response prefixes
    reference_logits = scoring.forward_logits(model, ids, attention)[0, start:-1]
    current_logits = scoring.forward_logits(current_model, ids, attention)[0, start:-1]
print("visited prefixes:", current_logits.shape[0], "| logits per prefix:", current_logits.shape[1])

# %% [markdown]
# ## Exact, blocked, and checked against `kl_div`
#
# The book's code processes the vocabulary in blocks (4,096 by default, which matters for
# Qwen's 151,936 logits) but normalises every block with the logsumexp of the full row.
# Here a block of 64 splits this small vocabulary into several blocks; the values agree
# with PyTorch's `kl_div` in float64, and the float32 computation with both.
#
# The two policies are computed live, and another CPU's kernels change their logits in the
# last bits, which moves a KL of 0.29 in its fifth digit. The tables therefore show two
# significant digits, and a value below $10^{-6}$ as "<1e-6" (the nudge barely changed the
# distribution at most prefixes, and in float32 such a KL is mostly rounding); the table
# lists only the prefixes the nudge moved, and counts the others. How closely
# the computations agree is stated as a bound, not as one particular CPU's rounding error.

# %%
def reference_kl(current, reference):
    return F.kl_div(torch.log_softmax(reference, -1), torch.log_softmax(current, -1),
                    log_target=True, reduction="none").sum(-1)

exact32 = losses.exact_prefix_kl(current_logits, reference_logits, block_size=64)
exact64 = losses.exact_prefix_kl(current_logits.double(), reference_logits.double(), block_size=64)
single = losses.exact_prefix_kl(current_logits.double(), reference_logits.double(),
                                block_size=current_logits.shape[-1])
torch_ref = reference_kl(current_logits.double(), reference_logits.double())
tokens = [tokenizer.decode([t]) for t in row["input_ids"][row["prompt_length"]:]]
def live(value):
    return significant(value, 2, below=1e-6)

moved = [i for i, value in enumerate(exact64) if value >= 1e-5]   # the prefixes the nudge changed
print(f"{len(tokens) - len(moved)} of {len(tokens)} prefixes have an exact KL below 1e-5; "
      "the others:")
Table(["next token", "exact fp64 (blocks of 64)", "one block", "kl_div fp64"],
      [[repr(tokens[i]), live(exact64[i]), live(single[i]), live(torch_ref[i])] for i in moved])

# %%
def within(a, b, tolerance):
    return bool((a - b).abs().max() <= tolerance)

print("blocked = kl_div in float64, within 1e-12 at every prefix:", within(exact64, torch_ref, 1e-12))
print("blocks of 64 = one block, within 1e-12:", within(exact64, single, 1e-12))
print("float32 (blocks of 64) = float64, within 1e-5:", within(exact32.double(), exact64, 1e-5))
print("KL(p, p) at every prefix:", losses.exact_prefix_kl(current_logits, current_logits).abs().max().item())

# %% [markdown]
# The penalty is differentiable with respect to the current logits only; the reference is
# a constant. `kl_divergence.py` does not let autograd differentiate the blocked sum (that would
# keep every block's probabilities alive); it writes the gradient out. With
# $p = \mathrm{softmax}(z)$, $\partial \log p_v / \partial z_j = \delta_{vj} - p_j$ and
# $\partial p_v / \partial z_j = p_v(\delta_{vj} - p_j)$, so for
# $\mathrm{KL} = \sum_v p_v (\log p_v - \log q_v)$
#
# $$\begin{aligned}
# \frac{\partial\,\mathrm{KL}}{\partial z_j}
#   &= \sum_v p_v(\delta_{vj} - p_j)(\log p_v - \log q_v) + \sum_v p_v(\delta_{vj} - p_j) \\
#   &= p_j\,(\log p_j - \log q_j) - p_j\,\mathrm{KL} + (p_j - p_j) \\
#   &= p_j\,\big(\log p_j - \log q_j - \mathrm{KL}\big).
# \end{aligned}$$
#
# The backward pass computes exactly this, one block at a time, with the full-row
# normalisers saved from the forward pass. It matches autograd through `kl_div`:

# %%
leaf = current_logits.double().clone().requires_grad_(True)
losses.exact_prefix_kl(leaf, reference_logits.double(), block_size=64).sum().backward()
ours = leaf.grad.clone()
leaf.grad = None
reference_kl(leaf, reference_logits.double()).sum().backward()
print("gradient = autograd through kl_div, within 1e-12:", within(ours, leaf.grad, 1e-12))

# %% [markdown]
# ## Against the sampled estimators
#
# With tokens drawn from the current policy and $d = \log p_\text{cur} - \log
# p_\text{ref}$ at the sampled token, the usual one-sample estimators
# ({ref}`Schulman's note on approximating the KL <ref-kl-approx>`) are k1 $= d$,
# k2 $= d^2/2$ and k3 $= e^{-d} - 1 + d$ (the note writes them with the ratio
# $p_\text{ref}/p_\text{cur} = e^{-d}$). k1 and k3 are unbiased for the KL; k2 is not. Averaged over many
# draws at each visited prefix they approach the exact value; a GRPO loss built from one
# draw per position sees the noise instead.

# %%
estimates = demos.sampled_estimates_at_prefixes(current_logits, reference_logits, samples=20000, seed=0)
Table(["next token", "exact", "k1 mean", "k3 mean", "k2 mean", "k1 std (1 draw)", "k3 std (1 draw)"],
      [[repr(tokens[i]), live(exact64[i])] + [live(estimates[k][i]) for k in ("k1", "k3", "k2", "k1_std", "k3_std")]
       for i in moved])

# %% [markdown]
# ## The estimators as losses: their gradients
#
# A GRPO loss does not only need the KL's *value*, it needs its *gradient*, and a sampled
# estimator used as a loss has its own. The token $y$ was drawn from $p$ and is fixed when the
# loss is differentiated; only $\log p(y)$ carries a gradient. Write
# $d(y) = \log p(y) - \log q(y)$ and recall $\mathbb{E}_{y\sim p}[\nabla \log p(y)] = \sum_y \nabla p(y) = 0$.
#
# - **k1** $= d$: $\ \mathbb{E}[\nabla k_1] = \mathbb{E}[\nabla \log p(y)] = 0$. Its value is
#   unbiased, yet as a loss it pushes on nothing in expectation: a k1 penalty is noise. (The
#   true gradient $\nabla \mathrm{KL}(p\|q) = \mathbb{E}[d\,\nabla\log p]$ needs the score term
#   that a loss through $\log p(y)$ alone does not produce.)
# - **k2** $= d^2/2$: $\ \mathbb{E}[\nabla k_2] = \mathbb{E}[d\,\nabla \log p(y)] = \nabla \mathrm{KL}(p\|q)$.
#   A biased value, but the reverse-KL gradient in expectation.
# - **k3** $= e^{-d} - 1 + d$: $\ \nabla k_3 = (1 - q(y)/p(y))\,\nabla\log p(y)$, so
#   $\mathbb{E}[\nabla k_3] = \sum_y (p(y) - q(y))\nabla \log p(y) = -\sum_y q(y)\nabla\log p(y)
#   = \nabla \mathrm{KL}(q\|p)$: the gradient of the **forward** KL, not of the reverse KL
#   whose value it estimates. The two agree to first order when $p \approx q$ and part ways
#   as the policy moves.
#
# The GRPO paper ({ref}`Shao et al. 2024 <ref-deepseekmath>`) penalises the policy with this sampled k3 (one token per position), and
# so do most GRPO libraries; this practical uses the exact reverse KL on the visited
# prefixes instead, so its gradient is the reverse-KL gradient at those prefixes, without
# sampling noise. The table computes each expected gradient exactly (every token $y$ of the
# vocabulary, weighted by a constant $p(y)$, one backward pass) for the two distributions
# of the widget below, in float64; the check after it does the same at the model's visited
# prefixes.

# %%
from verifiable_grpo.part1 import kl_probe

p_small = torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64)
q_small = torch.tensor([0.2, 0.3, 0.5], dtype=torch.float64)
g = kl_probe.estimator_loss_gradients(p_small.log(), q_small.log())
def distance(a, b):
    return float((a - b).norm())
Table(["gradient (w.r.t. the logits of p)", "value", "distance to grad KL(p||q)",
       "distance to grad KL(q||p)"],
      [[name, ", ".join(f"{v:+.4f}" for v in g[key].tolist()), distance(g[key], g["reverse"]),
        distance(g[key], g["forward"])]
       for name, key in (("exact KL(p||q)", "reverse"), ("exact KL(q||p)", "forward"),
                         ("E[grad k1]", "k1"), ("E[grad k2]", "k2"), ("E[grad k3]", "k3"))],
      digits=4)

# %%
at_prefixes = kl_probe.estimator_loss_gradients(current_logits, reference_logits)
scale = float(at_prefixes["reverse"].norm())
print("at the visited prefixes, relative to |grad KL(p||q)|:")
for name in ("k1", "k2", "k3", "forward"):
    print(f"  |E[grad {name}] - grad KL(p||q)| / |grad KL(p||q)|:",
          significant(distance(at_prefixes[name], at_prefixes["reverse"]) / scale, 1, below=1e-9))

# %% [markdown]
# ## A representative probe: the recorded GRPO policy against its reference
#
# The nudged copy above is a deliberate, visible step. What did GRPO itself do? The
# recorded run ships its final policy and the warm start it started from (its frozen
# reference). The probe samples four responses from the GRPO policy at each of eight
# training prompts (one seeded generator, temperature 1, as in training) and computes the
# exact KL to the reference at every prefix those responses visited, beside the same
# summary for the nudged copy.

# %%
from verifiable_grpo.task import data
from verifiable_grpo.training import rollout
from verifiable_grpo.book.notebook import recorded_policy

tiny = load_config("tiny")
grpo_policy, tiny_tokenizer, _ = recorded_policy("grpo", tiny)
reference_policy, _, _ = recorded_policy("warmstart", tiny)
sampler = rollout.Sampler(grpo_policy, tiny_tokenizer, tiny, torch.Generator().manual_seed(11))
sequences = []
for index, (problem_, _) in enumerate(data.generate_problem_set(tiny["data"]["seed"])["train"][:8]):
    example = {"document_id": f"train-{index}", "statement": render_statement(problem_, 0),
               "problem": problem_}
    sampled = rollout.sample_group(sampler, example, group_size=4, group_id=f"probe-{index}")
    sequences += [(r["prompt_ids"], r["response_ids"]) for r in sampled["responses"]]
probe = kl_probe.kl_summary(kl_probe.visited_prefix_kl(grpo_policy, reference_policy, sequences))
nudge = kl_probe.kl_summary(exact64)
Table(["policy pair", "visited prefixes", "mean KL", "median KL", "largest KL",
       f"share of prefixes above {probe['threshold']:g}"],
      [[name, s["prefixes"], significant(s["mean"], 2), significant(s["median"], 2, below=1e-6),
        significant(s["max"], 2), s["share_above"]]
       for name, s in (("recorded GRPO vs its reference", probe), ("nudged copy vs base (above)", nudge))],
      digits=2)

# %% [markdown]
# In both pairs the median prefix barely moves: most visited prefixes (the JSON scaffolding
# that every policy writes almost deterministically) carry next to no KL, and the penalty
# sits on a minority of prefixes (the last column), with a mean set by a few large values.
# The per-token table at the top of the chapter shows where the nudge put its change; the
# GRPO chapter's telemetry follows the same quantity during training.
#
# ## Try it
#
# First, what one draw gives. Edit two small distributions and pick the token that was
# drawn: each estimator turns that single token into a number, and its mean over draws
# from $p$ is what a long run would average. $k_1$ and $k_3$ average to the exact KL, $k_2$
# does not; $k_1$ can be negative, $k_3$ never is; the $\pm$ column is how far one draw
# strays. In the built book the widget below runs in your browser.
#
# <div class="vg-live" data-widget="kl" data-p="0.5, 0.3, 0.2" data-q="0.2, 0.3, 0.5"><em>(A
# live widget appears here in the built book.)</em></div>
# <script src="../../_static/vg-live.js"></script>
#
# Then the draws themselves: edit the distributions and the number of draws below (in
# Jupyter or on Colab; the book shows the default setting). The exact value is fixed, the
# sampled estimates wander around it and settle as the draws grow.

# %% tags=["remove-output"]
# NBVAL_IGNORE_OUTPUT
widgets.make_kl_widget("0.5, 0.3, 0.2", "0.2, 0.3, 0.5", samples=widgets.KL_DEFAULT_SAMPLES)

# %% [markdown]
# ## Error to diagnose: normalising each block on its own
#
# Processing the vocabulary in blocks is only a memory device. Applying a softmax *inside*
# each block computes another quantity: the sum of the KLs of the per-block distributions,
# which is not the KL of the model's distribution.

# %%
wrong = demos.kl_normalising_each_block(current_logits.double(), reference_logits.double(), 64)
Table(["next token", "exact", "each block normalised"],
      [[repr(tok), live(e), live(w)] for tok, e, w in zip(tokens, exact64, wrong)])

# %% [markdown]
# ## Exercise: the blocked exact KL
#
# Write `my_exact_kl(current_logits, reference_logits, block_size)` for float64 logits
# `[T, V]`, returning the KL per prefix `[T]`. Walk the vocabulary in blocks of
# `block_size` (the point is never to hold a full softmax), but normalise every block with
# the logsumexp of the whole row, computed block by block with the row maximum factored out.
# A logit of $-\infty$ is a token of probability 0 and contributes 0. The checker also
# differentiates your function and compares with $p(\log p - \log q - \mathrm{KL})$.

# %%
def my_exact_kl(current_logits, reference_logits, block_size):
    raise NotImplementedError("replace this line with your code")

# %%
from verifiable_grpo.exercises import check_exact_kl

result = check_exact_kl(my_exact_kl)

# %% [markdown]
# ```{admonition} Worked solution
# :class: dropdown
# Two passes for the normaliser (maximum, then the
# sum of exponentials), a third for the KL.
# ```

# %% tags=["hide-input"]
def solution_exact_kl(current_logits, reference_logits, block_size):
    vocab = current_logits.shape[-1]
    blocks = [slice(start, start + block_size) for start in range(0, vocab, block_size)]

    def log_normaliser(logits):
        top = torch.stack([logits[:, b].amax(-1) for b in blocks]).amax(0, keepdim=True).T
        total = sum(torch.exp(logits[:, b] - top).sum(-1, keepdim=True) for b in blocks)
        return top + total.log()

    cur, ref = log_normaliser(current_logits), log_normaliser(reference_logits)
    kl = torch.zeros(current_logits.shape[0], dtype=current_logits.dtype)
    for b in blocks:
        log_p, log_q = current_logits[:, b] - cur, reference_logits[:, b] - ref
        p = log_p.exp()
        kl = kl + torch.where(p > 0, p * (log_p - log_q), torch.zeros_like(p)).sum(-1)
    return kl

result = check_exact_kl(solution_exact_kl)
