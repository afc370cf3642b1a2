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
# # Part I: quiz
#
# Eight questions on Part I: the budget of the practical's GRPO stage, group advantages,
# the verifier's rule for a response that never stops, the KL penalty, the clip and the
# first update's ratio. The questions are ours. The tests hold every keyed answer to the
# `qwen` profile's configuration and to the package's loss functions, so the key cannot
# drift from the chapters.
#
# **What you will learn.** Whether the counts and the mechanisms of Part I stuck. Choose
# an answer for each question before you open the explanations. The checker says which
# answers are right and names each choice that is not; the explanations say why.

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
from verifiable_grpo.exercises import quiz

print(quiz.render(quiz.PART1))

# %% [markdown]
# Put one letter per question in `my_answers` (`None` leaves a question unanswered) and
# run the cell.

# %%
my_answers = [None] * len(quiz.PART1)
print(quiz.report(quiz.check_quiz(quiz.PART1, my_answers), quiz.PART1))

# %% [markdown]
# For example, a reader who takes the sample standard deviation for Part I's (question 3)
# and thinks a truncated answer still scores (question 5) sees:

# %%
example = [q.answer for q in quiz.PART1]
example[2], example[4] = "b", "a"
print(quiz.report(quiz.check_quiz(quiz.PART1, example), quiz.PART1))

# %% [markdown]
# ```{admonition} Explanations
# :class: dropdown
# 1. **(b) 1,600** $= 100 \times 4 \times 4$: iterations times prompts times group size
#    ({doc}`06_grpo`).
# 2. **(b) 200** $= 100 \times 2$: each rollout set serves two updates.
# 3. **(a) ±1.** The mean is 0.5 and the population standard deviation 0.5, so each
#    advantage is $\pm 0.5 / (0.5 + 10^{-8})$ ({doc}`02_group_advantages`).
# 4. **(b) ±0.866.** The sample standard deviation divides by $G - 1 = 3$ instead of 4, so
#    it is $\sqrt{4/3}$ times larger and the advantages are $\sqrt{3/4}$ times smaller.
#    Part III's Lab 5 uses this convention.
# 5. **(b) 0.** A response cut by the token limit never said it was finished, whatever its
#    prefix looks like. The verifier scores it 0 with the reason `completion_without_eos`
#    ({doc}`01_task_and_verifier`).
# 6. **(b).** Part I sums $p \log(p/p_{\text{ref}})$ over the whole vocabulary at every
#    prefix the response visited ({doc}`04_exact_kl`). Part III's Lab 5 estimates it from
#    the sampled token alone with k3.
# 7. **(b) [0.8, 1.2]** $= [1 - \epsilon, 1 + \epsilon]$ ({doc}`03_ratio_and_clipping`).
# 8. **(a).** The old log-probabilities are the ones the sampler recorded. Before the
#    first update the weights have not moved, so the trainer's rescoring agrees with them
#    up to numerical differences, which the run checks against 2e-4. A ratio of 1 is far
#    inside the clip interval, so the clip can act only on the second update.
# ```

# %%
print(quiz.report(quiz.check_quiz(quiz.PART1, [q.answer for q in quiz.PART1])), "(the key)")
