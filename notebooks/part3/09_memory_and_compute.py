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
# # Memory and compute: a budget you can recompute
#
# Before a fine-tuning run starts, someone has to say whether it fits on the hardware and
# how long it will take. This chapter builds that estimate from the model's shape, with a
# calculator in the package (`verifiable_grpo.models.accounting`) that the tests pin to
# the printed figures of the post-training module ({ref}`cited here <ref-module>`).
#
# **What you will learn.**
# - Why full fine-tuning with AdamW costs 16 bytes per parameter before any activation,
#   and why "GB" and "GiB" give different numbers for the same bytes.
# - How to count LoRA's trainable parameters by hand, and what the scale $\alpha/r$
#   (or rsLoRA's $\alpha/\sqrt r$) does when the rank changes.
# - Why LoRA saves most of the memory but only about a third of the arithmetic.
# - What activations and a full-vocabulary logits tensor add.
# - How QLoRA stores a frozen base in about 4.127 bits per weight, and what one weight
#   looks like after a 4-bit round trip.
#
# Everything here is arithmetic on shapes, so every number is exact and recomputed live.
# Three models appear: the published 9.55B case-study model, SmolLM2-135M (the model the
# Part III labs train) and Qwen2.5-0.5B (the `qwen` profile of Part I).

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

from verifiable_grpo.book import cost_plots
from verifiable_grpo.book.notebook import Table, show
from verifiable_grpo.models import accounting as acc
from verifiable_grpo.part3 import quantisation as qz
from verifiable_grpo.part3.smollm2 import records

CASE, SMOL, QWEN = acc.CASE_STUDY, acc.smollm2_135m(), acc.QWEN2_5_0_5B
MODELS = (CASE, SMOL, QWEN)

# %% [markdown]
# ## The three models
#
# The calculator needs only a handful of numbers per model: vocabulary $V$, width $d$,
# depth $L$, attention and KV heads, the FFN width, and whether the output head shares
# the embedding table. The published text prints the case-study model's parameter count, $V$ and
# $d$ but not its depth or head layout. We reconstructed them: $L = 36$ is the only depth
# that reproduces its FLOP figures below, and 32 heads of width 128 with 8 KV heads and an
# FFN of 15,360 then give its parameter count exactly. SmolLM2's shape is the one the
# labs load; Qwen2.5-0.5B's is its published config, whose count the `qwen` profile checks.

# %%
Table(["model", "V", "d", "L", "heads / KV", "FFN", "tied", "parameters", "N - V·d"],
      [[m.name, m.vocab, m.hidden, m.layers, f"{m.heads} / {m.kv_heads}", m.ffn, m.tied,
        f"{m.parameters():,}", f"{m.matmul_parameters():,}"] for m in MODELS])

# %% [markdown]
# $N - V d$ leaves out the input lookup: reading a row of a table costs no
# multiplications. A tied head still multiplies by the table at the output, so it stays
# in. The published text prints $N - V d = 8{,}927{,}875{,}072$ for its model; the row above agrees.
#
# ## Sixteen bytes per trained parameter
#
# Mixed-precision training computes in 16-bit floats but keeps an FP32 copy of each
# weight for the optimizer, because small updates vanish when added to a 16-bit number.
# AdamW adds two FP32 moments. Per trained parameter:

# %%
full = acc.TrainingSetup(method="full")
parts = acc.trained_bytes_per_parameter(full)
Table(["kind", "bytes"], [[k, v] for k, v in parts.items()] + [["sum", sum(parts.values())]], digits=0)

# %%
states = CASE.parameters() * sum(parts.values())
print(f"case study, model states: 16 x {CASE.parameters():,} = {int(states):,} bytes")
print(f"  = {states / acc.GB:.3f} GB (decimal, 10^9)  = {states / acc.GIB:.3f} GiB (binary, 2^30)")

# %% [markdown]
# The published 152.812 GB is decimal. The same bytes are 142.317 GiB, about 7 % fewer
# units. Tools disagree on which unit they print: a device sold as "80 GB" and an
# allocator reporting in GiB describe one budget with two numbers. An estimate has to say
# which unit it uses before it is compared with a card. Either way, these states alone are
# about twice what one 80 GB accelerator holds, before a single activation.
#
# ## LoRA, counted by hand
#
# LoRA freezes a projection $W$ (out × in) and trains $B A$, with $A$ of shape $r$ × in
# and $B$ of shape out × $r$. That is $r(\text{in} + \text{out})$ parameters per adapted
# matrix. For a square 4,096 × 4,096 projection at rank 64:

# %%
square = acc.ModelShape("one 4096 x 4096 projection", vocab=1, hidden=4096, layers=1, heads=32,
                        kv_heads=32, ffn=4096, tied=True)
adapter = acc.lora_parameters(square, 64, ("q_proj",))
print(f"64 x (4,096 + 4,096) = {adapter:,} against {4096 ** 2:,} frozen: {adapter / 4096 ** 2:.3%}")

# %% [markdown]
# A model's projections are not all square: with grouped-query attention, $k$ and $v$
# map $d$ to a smaller width, and the FFN matrices are wider than $d$. The calculator sums
# the real shapes. For SmolLM2 at rank 8 on all seven projections, it must agree with what
# Lab 2 counted on the loaded model:

# %%
lora_record = records.load_recorded("lora")
trainable = acc.lora_parameters(SMOL, 8)
Table(["Lab 2 figure", "calculator", "Lab 2 record"],
      [["frozen base parameters", f"{SMOL.parameters():,}", f"{lora_record['base_parameters']:,}"],
       ["wrapped projections", SMOL.layers * len(acc.PROJECTIONS), lora_record["wrapped"]],
       ["adapter parameters (r = 8)", f"{trainable:,}", f"{lora_record['trainable']:,}"],
       ["total with adapters", f"{SMOL.parameters() + trainable:,}", f"{lora_record['total']:,}"]])

# %%
print(f"AdamW moments, adapters only: 8 x {trainable:,} = {8 * trainable / 1e6:.2f} MB")
print(f"AdamW moments, whole base:    8 x {SMOL.parameters():,} = {8 * SMOL.parameters() / 1e6:.2f} MB")

# %% [markdown]
# These are the published 19.54 MB and 1,076.12 MB. They are the moments only: the adapter
# weights and their gradients come on top, and so do the activations, which LoRA does
# not shrink.
#
# **The scale.** The update is multiplied by $s = \alpha/r$. Doubling the rank at fixed
# $\alpha$ halves $s$, so a comparison of ranks silently changes the step size too.
# rsLoRA divides by $\sqrt r$ instead, so that the update's size depends less on $r$:

# %%
Table(["rank r", "α/r (α = 16)", "α/√r (α = 16)", "α/r (α = 2r)"],
      [[r, acc.lora_scale(16, r), acc.lora_scale(16, r, rank_stabilised=True), acc.lora_scale(2 * r, r)]
       for r in (2, 8, 32, 64)])

# %% [markdown]
# Neither rule guarantees equal update sizes across ranks; they are conventions. When
# ranks are compared, state the rule and keep the learning rate fixed, or the effect of
# the rank cannot be separated from the effect of the scale.
#
# ## Compute: what freezing saves
#
# A forward pass costs about 2 FLOPs per weight that multiplies (one multiply, one add),
# so $2(N - Vd)$ per token. The backward pass costs twice that: one product for the
# gradient with respect to the activations, one for the gradient with respect to the
# weights. Attention over a causal context of length $T$ adds on average $2LTd$ per token
# forward. Full training is therefore $6(N - Vd) + 6LTd$ per token.
#
# A frozen weight needs no weight gradient, but the activation gradient must still flow
# through it to reach the adapters below. LoRA drops one of the three products:
# $4(N - Vd) + 6LTd$ (the adapters' own small cost is left out).

# %%
rows = []
for m, length in ((CASE, 8192), (SMOL, 2048), (QWEN, 320)):
    f, l = (acc.flops_per_token(m, length, k) for k in ("full", "lora"))
    rows.append([m.name, length, f"{f:.3e}", f"{l:.3e}", f"{1 - l / f:.1%}"])
Table(["model", "T", "full FLOPs/token", "LoRA FLOPs/token", "LoRA saves"], rows)

# %% [markdown]
# For the case-study model at $T = 8{,}192$ this gives $6.08 \times 10^{10}$ against
# $4.30 \times 10^{10}$, the published pair: LoRA saves about 29 % of the arithmetic,
# although it trains about 2 % of the parameters. Memory and compute do not shrink
# together. (320 tokens is the Part I budget per sequence for Qwen: at that length the
# attention term is negligible and the saving approaches the upper limit of one third.)
#
# ## Activations and logits
#
# The backward pass needs the tensors the forward pass computed. With full activation
# checkpointing, each layer stores only its input ($T \cdot d$ values) and recomputes
# the rest during the backward pass, one layer at a time. The recomputed layer briefly
# holds its own tensors. We count, per token, the layer input and its normalised copy, the
# queries, keys and values, the attention output, the residual sum and its normalised
# copy, and the FFN's gate, up and gated product. (Flash attention keeps no $T \times T$
# matrix.) That is $6d + 2\,d_{kv} + 3 d_{ff}$ values:

# %%
per_layer = acc.layer_activation_values(CASE)
activations = acc.activation_bytes(CASE, full)
logits = acc.logits_bytes(CASE, full)
print(f"one layer: 6·4096 + 2·1024 + 3·15360 = {per_layer:,} values per token")
print(f"stored inputs 36·8192·4096·2 B + one layer {per_layer:,}·8192·2 B = {int(activations):,} B "
      f"= {activations / 1e9:.2f} GB")
print(f"FP32 logits: 8192 x 152,064 x 4 B = {int(logits):,} B = {logits / 1e9:.3f} GB")

# %% [markdown]
# The published text states 3.61 GB for this subtotal, and 4.983 GB for the logits. Its own
# per-layer formula is in another module that we do not have. Ours is the simplest one we
# found that gives its figure, and the test pins it. The logits tensor is larger than all
# the checkpointed activations together. Computing the loss over chunks of the sequence
# avoids holding it. An estimate that assumes chunking has to say so.
#
# ## QLoRA: a 4-bit base under 16-bit adapters
#
# QLoRA stores the frozen projections in 4-bit codes. The codes are dequantised for each
# matrix product, and only the adapters, kept in 16 bits, are trained. Each block of 64 weights
# shares one absmax scale. Stored in FP32, the scales cost $32/64 = 0.5$ bits per weight.
# Double quantisation stores the scales themselves in 8 bits, with one FP32 scale per 256
# of them:

# %%
Table(["storage", "bits per weight"],
      [["4-bit codes + FP32 scale per 64", qz.bits_per_weight(4, 64, 32)],
       ["+ double quantisation (8-bit scales, FP32 per 256)", qz.bits_per_weight(4, 64, 8, 256, 32)],
       ["serving format: FP16 scale per 128 (next chapter)", qz.bits_per_weight(4, 128, 16)]],
      digits=6)

# %% [markdown]
# The second row is the 4.127 bits per weight of QLoRA. The 16 codes of **NF4** are not
# evenly spaced: they are quantiles of a normal distribution, rescaled to $[-1, 1]$, so
# more levels sit near zero where most weights are. Our construction follows the QLoRA
# recipe, and the tests compare it with the published table.

# %%
print("NF4 levels:", " ".join(f"{x:+.4f}" for x in qz.nf4_levels()))

# %% [markdown]
# **A worked round trip.** The published example is a block whose largest magnitude is
# 0.031 and which holds the weight $-0.027$. Divide by the scale, choose the nearest
# level, multiply back:

# %%
block = [-0.027, 0.031, 0.010, -0.004]
for name, levels in (("NF4", qz.nf4_levels()), ("uniform 4-bit", qz.uniform_levels(4))):
    trip = qz.round_trip(block, levels)
    print(f"{name:>13}: {block[0]} / {trip['scale']} = {trip['normalised'][0]:.3f} -> level "
          f"{trip['levels'][0]:+.3f} -> {trip['reconstructed'][0]:+.4f} "
          f"(error {abs(trip['reconstructed'][0] - block[0]):.4f})")

# %% [markdown]
# NF4 has no level between $-1$ and $-0.696$, so $-0.871$ becomes $-1$ and the weight
# comes back as $-0.031$. A uniform grid happens to have a level at $-6/7 = -0.857$ and
# does better on this one weight. NF4 is designed for the whole distribution of a normal
# block, not for every value.
#
# ## The calculator, on all three models
#
# `memory_table` combines everything above for one step of one sequence: the frozen base
# (none for full training; 16-bit for LoRA; 4.127-bit projections with 16-bit tables and
# norms for QLoRA), the trained parameters' weights, gradients, master copies and
# moments, the checkpointed activations, and an FP32 logits tensor.

# %%
def totals(model, length):
    out = []
    for method in acc.METHODS:
        setup = acc.TrainingSetup(method=method, sequence_length=length, lora_rank=8)
        table = acc.memory_table(model, setup)
        named = {row["component"]: row for row in table}
        states = sum(r["GB"] for r in table if r["component"].startswith("trained"))
        out.append([model.name, method, f"{acc.trained_parameters(model, setup):,}",
                    named["frozen base weights"]["GB"], states, named["activations"]["GB"],
                    named["logits"]["GB"], named["total"]["GB"], named["total"]["GiB"]])
    return out


Table(["model", "method", "trained (r = 8)", "frozen GB", "trained states GB", "activations GB",
       "logits GB", "total GB", "total GiB"],
      totals(CASE, 8192) + totals(SMOL, 2048) + totals(QWEN, 320), digits=3)

# %% [markdown]
# The case-study rows drawn: look at which segment each method shrinks, and at the
# activations and logits, which no method touches.

# %%
setups = {method: acc.TrainingSetup(method=method, sequence_length=8192, lora_rank=8) for method in acc.METHODS}
show(cost_plots.plot_memory_by_method({m: acc.memory_table(CASE, s) for m, s in setups.items()}, CASE.name))

# %% [markdown]
# Three things to read off. For the 9.55B model, the adapters make the optimizer state
# negligible and the frozen base dominates; QLoRA cuts the base to about a third (not a
# quarter: the 16-bit tables stay).
# For the small models the logits tensor is a large share: a 49k or 152k vocabulary is big
# next to a 576- or 896-wide model. And the labs' 135M model fits easily on a laptop.
#
# **Against the labs.** Lab 1 trains every SmolLM2 weight in FP32 with AdamW, with no
# separate master copy: 4 + 4 + 8 = 16 bytes again, so about 2.15 GB of states. Lab 2
# trains 2,442,240 adapter parameters; the table above at rank 8 is the same count. The
# labs record counts, not memory, so the counts are what we can check against them.

# %%
lab1 = acc.TrainingSetup(method="full", weights_dtype="fp32", master_weights=False,
                         activation_dtype="fp32", sequence_length=64, batch=16)
states = sum(b for name, b in acc.memory_rows(SMOL, lab1) if name.startswith("trained"))
assert acc.lora_parameters(SMOL, 8) == lora_record["trainable"]
print(f"Lab 1 (FP32 AdamW, no master copy): {sum(acc.trained_bytes_per_parameter(lab1).values()):.0f} "
      f"bytes x {SMOL.parameters():,} = {states / 1e9:.3f} GB of model states")

# %% [markdown]
# ## Bad input is refused
#
# A calculator that silently accepts a negative width or an unknown dtype returns a
# confident wrong budget. Ours refuses with a message that names the problem:

# %%
for attempt in (lambda: acc.ModelShape("x", vocab=-5, hidden=64, layers=2, heads=4, kv_heads=4,
                                       ffn=128, tied=True),
                lambda: acc.TrainingSetup(weights_dtype="fp12"),
                lambda: acc.lora_parameters(SMOL, 256)):
    try:
        attempt()
    except ValueError as error:
        print("ValueError:", error)

# %% [markdown]
# ## Exercises
#
# **1. (your own model)** A model has $V = 32{,}000$, $d = 4{,}096$, $L = 32$, 32 heads
# with 8 KV heads, an FFN of 14,336 and untied tables. How many parameters does it have,
# and how many does LoRA train at rank 16 on `q_proj` and `v_proj` only? Fill in the two
# numbers and run the check.

# %%
my_parameters = None  # your answer
my_adapter = None     # your answer
exercise = acc.ModelShape("exercise", vocab=32_000, hidden=4096, layers=32, heads=32, kv_heads=8,
                          ffn=14_336, tied=False)
if my_parameters is None:
    print("fill in my_parameters and my_adapter, then run this cell again")
else:
    print("parameters:", "right" if my_parameters == exercise.parameters() else "not yet")
    print("adapter:", "right" if my_adapter == acc.lora_parameters(exercise, 16, ("q_proj", "v_proj"))
          else "not yet")

# %% [markdown]
# ```{admonition} Worked solution 1
# :class: dropdown
# Per layer: $q$ and $o$ are $4096^2$ each, $k$ and $v$ are $4096 \times 1024$ each, the
# three FFN matrices are $3 \times 4096 \times 14336$, plus two norms of 4,096. That is
# 218,112,000 per layer, 6,979,584,000 for 32 layers, plus the final norm, plus two
# tables of $32000 \times 4096$: **7,241,732,096** parameters. The adapters: per layer
# $16(4096 + 4096) + 16(4096 + 1024) = 212{,}992$, times 32 = **6,815,744**.
# ```

# %%
print(f"{exercise.parameters():,} parameters; {acc.lora_parameters(exercise, 16, ('q_proj', 'v_proj')):,} adapter")

# %% [markdown]
# **2. (units)** A card reports 79.6 GiB free. Does the case-study model's QLoRA step at
# rank 64, $T = 8{,}192$, fit, with and without the FP32 logits tensor?
#
# ```{admonition} Worked solution 2
# :class: dropdown
# The cell below computes both totals in GiB: about 12.6 GiB without the logits and
# 17.2 GiB with them, so it fits either way. The frozen 4-bit base is the largest part
# (6.8 GB); the adapters' states are under 0.4 GB. Compare GiB with GiB: the same total
# is 18.5 in decimal GB.
# ```

# %%
qlora = acc.TrainingSetup(method="qlora", lora_rank=64)
total = acc.memory_rows(CASE, qlora)[-1][1]
print(f"QLoRA r=64: {total / acc.GIB:.2f} GiB with logits, "
      f"{(total - acc.logits_bytes(CASE, qlora)) / acc.GIB:.2f} GiB without")
