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
# # Exact resume
#
# A run that is interrupted and resumed must end in **exactly** the state an uninterrupted
# run reaches: the same weights, the same optimiser moments, the same learning-rate step,
# the same position in the data and the same random streams, bit for bit. "Close enough"
# hides real bugs: a random generator re-seeded after it was restored, a data cursor that
# restarts at zero, a buffered rollout that is lost or consumed twice.
#
# You will learn what a training state must hold for a resume to be exact, how to compare
# two states without fooling yourself, and why a resume must refuse a state that belongs to
# another run.
#
# **Invariant.** For every branch, `continuous` and `interrupt` + `resume` produce states
# that compare equal tensor by tensor (only wall-clock timings are excluded); a resume
# refuses a state whose identity (configuration, data, code, starting weights and number of
# CPU threads, which sets the order of floating-point sums) differs from its own.

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

from verifiable_grpo.core import checkpoint
from verifiable_grpo.training import sft
from verifiable_grpo.core.config import load_config
from verifiable_grpo.book.notebook import Table, choose_profile, load_recorded, rounded_prints

config = load_config(choose_profile())
print("live profile:", config["profile"])

# %% [markdown]
# ![Three time lines. Continuous runs from update 0 to N and ends in state S. Interrupt
# runs to update k, saves a state file (model weights, AdamW moments and step,
# learning-rate schedule step, data position, the random streams, the run's identity) and
# its process ends. Resume, a fresh process, loads that file at update k and runs to N,
# ending in a state S' that equals S tensor by tensor.](../../book/images/resume.png)
#
# *Exact resume: a run stopped at update k and continued from its saved state ends in the
# same state as a run that was never stopped.*
#
# ## Three runs of the warm start, live
#
# `continuous` runs every epoch; `interrupt` stops after the first epoch and saves its full
# state; `resume` loads that state in a fresh model and optimiser and finishes the job.
# Each starts by seeding every random stream, so no run depends on what the Python process
# did before.
#
# The runs' weights are compared through a fingerprint of every tensor, which is not
# printed: it names exact bits, and another CPU, adding numbers in another order, reaches
# other bits. What a resume promises is equality on the machine that runs it.

# %%
out = tempfile.mkdtemp(prefix="resume-")
sft.ensure_learning_view(config, out)
final_weights = {}
with rounded_prints(decimals=3):    # the loop's per-epoch NLL lines, at a portable precision
    for mode in ("continuous", "interrupt", "resume"):
        record = sft.run_sft_branch(config, out, "warmstart", mode)
        final_weights[mode] = record["final_model_digest"]
        print(f"{mode:10s} updates {record['updates']:3d} of {record['total_updates']}")
print("final weights: resume = continuous:", final_weights["resume"] == final_weights["continuous"],
      "| interrupt = continuous:", final_weights["interrupt"] == final_weights["continuous"])
verdict = checkpoint.verify_resume(out, "warmstart")
print("equal:", verdict["equal"], "| differences:", verdict["differences"])

# %% [markdown]
# ## What a state holds
#
# The compared state is everything the next update depends on. It is written with gzip at
# level 1 (lossless, fast); its size is measured, not promised. `position` is where the
# current epoch stands (its example order and how far into it training got): empty at an
# epoch boundary like this one, filled in the crash checkpoints that a run writes every few
# updates, so that a run killed mid-epoch continues from the very next batch.

# %%
state = checkpoint.load_state(f"{out}/checkpoints/warmstart-resume.pt.gz")

def describe(value):
    if isinstance(value, torch.Tensor):
        return f"tensor {tuple(value.shape)} {value.dtype}"
    if isinstance(value, dict):
        return f"mapping of {len(value)}"
    if isinstance(value, (list, tuple)):
        return f"list of {len(value)}"
    return type(value).__name__

Table(["key", "content"], [[key, describe(value)] for key, value in state.items()])

# %% [markdown]
# The two files are not byte-identical: each keeps its own wall-clock timings, which can
# never match across processes. The comparison excludes exactly those keys and nothing
# else.

# %%
print("same file bytes:", verdict["continuous"]["sha256"] == verdict["resume"]["sha256"])
print("same model digest:", verdict["continuous"]["model_digest"] == verdict["resume"]["model_digest"])

# %% [markdown]
# ## The recorded tiny run: five branches
#
# The pipeline ran every branch three ways with the budgets of
# {ref}`the practical's specification <ref-practical>`: the warm start
# and further SFT interrupted after one epoch, GRPO after 40 of its 100 iterations, the two
# exercise branches after 8 of their 20.

# %%
rows = []
for branch in ("warmstart", "sft", "grpo", "grpo-g2", "grpo-g8"):
    verdict_b = load_recorded(f"resume-{branch}.json")
    rows.append([branch, verdict_b["equal"], len(verdict_b["differences"]),
                 verdict_b["continuous"]["bytes"] / 1e6, verdict_b["resume"]["bytes"] / 1e6])
Table(["branch", "equal", "differences", "continuous state MB", "resumed state MB"], rows, digits=2)

# %% [markdown]
# ## Error to diagnose: resuming someone else's run
#
# A state carries the identity of the run that wrote it. Resuming it under a different
# configuration (here, only the learning rate changed) would silently splice two runs
# together; the resume refuses. Its error names the part of the run's identity that differs:
# here `config_sha256`, a fingerprint of the whole configuration, so it cannot say which
# setting changed. Comparing the two configurations finds it.

# %%
changed = config.replaced(warmstart={"learning_rate": 2 * config.warmstart.learning_rate})
other = tempfile.mkdtemp(prefix="resume-other-")
sft.ensure_learning_view(config, other)
with rounded_prints(decimals=3):
    sft.run_sft_branch(config, other, "warmstart", "interrupt")
try:
    sft.run_sft_branch(changed, other, "warmstart", "resume")
except ValueError as error:
    print("ValueError:", str(error).split(" (")[0])


def differing_settings(a, b, prefix=""):
    """Dotted names of the settings whose values differ between two nested configs."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [name for key in sorted(set(a) | set(b))
                for name in differing_settings(a.get(key), b.get(key), f"{prefix}{key}.")]
    return [] if a == b else [prefix.rstrip(".")]


print("settings that differ:", differing_settings(config, changed))

# %% [markdown]
# ## Exercise: compare two states
#
# Write `my_states_match(state_a, state_b)`: both are nested dicts and lists of tensors,
# python floats, ints and strings (weights, optimiser moments, RNG states, the consumed
# rollout ids). Return True only when they are identical to the bit: same keys, same tensor
# dtypes, shapes and bytes, floats with the same bits, ignoring any key named `"timings"` at
# any depth. The checker's hidden pairs differ by one ulp, by the sign of a zero, by a dtype,
# by one byte of an RNG state, and one pair holds the same NaN on both sides.

# %%
def my_states_match(state_a, state_b):
    raise NotImplementedError("replace this line with your code")

# %%
from verifiable_grpo.exercises import check_resume

result = check_resume(my_states_match)

# %% [markdown]
# ```{admonition} Worked solution
# :class: dropdown
# Tensors are compared as raw bytes, which treats a
# NaN as equal to the same NaN and -0.0 as different from 0.0; floats by `float.hex`.
# ```

# %% tags=["hide-input"]
import math

def solution_states_match(a, b):
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        keys_a = {k for k in a if k != "timings"}
        keys_b = {k for k in b if k != "timings"}
        return keys_a == keys_b and all(solution_states_match(a[k], b[k]) for k in keys_a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(solution_states_match(x, y) for x, y in zip(a, b))
    if isinstance(a, torch.Tensor):
        return (a.dtype == b.dtype and a.shape == b.shape
                and torch.equal(a.contiguous().reshape(-1).view(torch.uint8),
                                b.contiguous().reshape(-1).view(torch.uint8)))
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or a.hex() == b.hex()
    return a == b

result = check_resume(solution_states_match)
