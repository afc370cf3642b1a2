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
# %% [markdown]
# # Evaluating a policy, not its best answer
#
# Each policy answers the same 200 test problems it never saw during learning: 100 drawn
# like the training problems (ID50) and 100 with at least one operand above 50 (OOD100).
# It gives one **greedy** answer per problem (greedy pass@1) and **four sampled** answers
# with fixed per-problem seeds shared by every policy (per-draw success over all 800). The
# test answers are read only after every generation is written.
#
# **Invariant.** 200 problems per policy; 1 + 4 responses per problem; every output is
# kept, invalid ones included; ID50, OOD100 and ALL are reported separately; generation
# cost is reported with the quality.

# %% tags=["colab"]
# On Colab only: fetch the project and install it. Elsewhere the package is already installed.
import sys

if "google.colab" in sys.modules:
    import os, subprocess
    subprocess.run("git clone -q --depth 1 https://github.com/verifiable-grpo/verifiable-grpo "
                   "/content/verifiable-grpo && pip install -q --no-deps -e /content/verifiable-grpo",
                   shell=True, check=True)
    sys.path.insert(0, "/content/verifiable-grpo/src")
    os.chdir("/content/verifiable-grpo/notebooks/part1")

# %%
from verifiable_grpo.book.notebook import quiet

quiet()  # first: progress bars read their settings when their modules are imported

from verifiable_grpo.evaluation import evaluate
from verifiable_grpo.book import plots
from verifiable_grpo.core.config import read_json, repo_root
from verifiable_grpo.core.runfolder import order_policies
from verifiable_grpo.book.notebook import Table, load_recorded, show

results = load_recorded("results.json")
exercise = load_recorded("exercise/results.json")
merged = {"policies": {**results["policies"], **exercise["policies"]}}
reference = read_json(repo_root() / "data" / "recorded" / "reference-r001.json")
print("problems:", results["problems"], "| populations:", results["populations"],
      "| draws per problem:", results["draws"])

# %% [markdown]
# ## The headline table (recorded tiny run)

# %%
Table(plots.RESULTS_COLUMNS, plots.results_rows(merged), digits=3)

# %%
display(show(plots.plot_results(merged, reference)))

# %% [markdown]
# The counts behind the rates, and what the outputs looked like:

# %%
rows = []
for policy in order_policies(merged["policies"]):
    entry = merged["policies"][policy]
    greedy, draws = entry["greedy_pass_at_1"]["ALL"], entry["per_draw_success"]["ALL"]
    rows.append([policy, f"{greedy['correct']}/{greedy['responses']}",
                 f"{draws['correct']}/{draws['responses']}", draws["json_validity"],
                 greedy["without_eos"] + draws["without_eos"], draws["mean_response_tokens"],
                 entry["generation"]["seconds"]["total"]])
Table(["policy", "greedy correct", "draws correct", "valid JSON (draws)", "no EOS",
       "mean tokens", "generation s"], rows, digits=3)

# %% [markdown]
# ## Beside the specification's published figures
#
# The specification published its own development observations (Qwen2.5-0.5B-Instruct,
# its machine, ALL problems only). They are **not** measurements of this project and are
# shown only for scale.

# %%
Table(["policy", "greedy pass@1 (spec.)", "per-draw (spec.)", "greedy pass@1 (ours)",
       "per-draw (ours)"],
      [[p, reference["metrics"][p]["greedy_pass_at_1"]["success_rate"],
        reference["metrics"][p]["empirical_per_draw_success"]["success_rate"],
        merged["policies"][p]["greedy_pass_at_1"]["ALL"]["success_rate"],
        merged["policies"][p]["per_draw_success"]["ALL"]["success_rate"]]
       for p in order_policies(merged["policies"])], digits=4)

# %% [markdown]
# ## Reading the numbers honestly
#
# On the tiny model, **further SFT** has the best greedy pass@1 (0.300 against 0.205 for the
# warm start and 0.230 for GRPO), and almost all of that gain is on ID50 problems, the
# range it trained on (0.46); on OOD100 the three policies are within a point of each other
# (0.13 to 0.14). Per-draw success barely moves at all: 0.156, 0.171 and 0.170.
#
# **GRPO did not beat further SFT here.** Its 100 iterations at learning rate 1e-5 kept the
# policy close to its reference (exact KL of order $10^{-3}$, see the GRPO chapter), its
# training reward stayed flat around 0.21, and its test rates sit between the warm start
# and further SFT. With 200 problems, the standard error of a greedy rate near 0.2 is about
# 0.03, so GRPO's edge over the warm start is within noise, while SFT's ID50 gain is not.
# The specification's own figures for the 0.5B model show the same ordering (further SFT
# 0.08 greedy pass@1, GRPO 0.015, warm start 0.015). Two things differ from a fair contest
# and the book does not hide them: further SFT sees 872 labelled examples twice, GRPO only
# 400 prompt presentations with no labels, and neither budget is tuned for this model.
#
# ## Error to diagnose: the best of four reported as pass@1
#
# With four draws per problem it is tempting to count a problem as solved when any draw is
# right. That number answers another question (can the model *ever* produce the answer?)
# and is always at least as large as per-draw success. It is computed here only to show
# the gap; it never enters the results.

# %%
rows = []
for policy in ("warmstart", "sft", "grpo"):
    scored = load_recorded(f"scores/{policy}-sample.json")["rows"]
    rows.append([policy, merged["policies"][policy]["greedy_pass_at_1"]["ALL"]["success_rate"],
                 merged["policies"][policy]["per_draw_success"]["ALL"]["success_rate"],
                 evaluate.best_of_draws_success(scored)])
Table(["policy", "greedy pass@1", "per-draw success", "best of 4 (not a pass@1)"], rows, digits=3)
