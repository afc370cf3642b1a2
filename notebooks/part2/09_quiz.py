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
# # Part II: quiz
#
# Eight questions on Part II: what each arm changes, which changes cannot act when a
# rollout set serves one update, what dynamic sampling costs, and the KL estimators. The
# questions are ours. The tests hold every keyed answer to the objectives registry, the
# placebo demonstration and the estimators in the package.
#
# **What you will learn.** Whether the mechanics of the GRPO family stuck. Choose an answer
# for each question before you open the explanations. The checker says which answers are
# right and names each choice that is not; the explanations say why.

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
from verifiable_grpo.exercises import quiz

print(quiz.render(quiz.PART2))

# %% [markdown]
# Put one letter per question in `my_answers` (`None` leaves a question unanswered) and
# run the cell.

# %%
my_answers = [None] * len(quiz.PART2)
print(quiz.report(quiz.check_quiz(quiz.PART2, my_answers), quiz.PART2))

# %% [markdown]
# ```{admonition} Explanations
# :class: dropdown
# 1. **(b) 0.125** $= 0.5^4 + 0.5^4$: all four succeed or all four fail
#    ({doc}`01_the_arms`).
# 2. **(b) [0.8, 1.28].** "Clip-higher" leaves more room to raise a token's probability
#    than to lower it.
# 3. **(b).** One ratio per response, the exponential of the mean token log-ratio, so one
#    clip decision per sequence.
# 4. **(b).** Centring only: a group with a small spread is not amplified.
# 5. **(b).** On policy the ratio equals 1, both branches of the clipped minimum agree,
#    and no clip bound is active, so the gradient is the same for every clip interval and
#    for the sequence ratio. Autograd shows differences of order $10^{-18}$, float64
#    rounding ({doc}`02_placebos_and_cost`). They part only once the policy has moved,
#    on a second update.
# 6. **(c) 0.** The published study trained without a KL term, and so did every arm here
#    ({doc}`01_the_arms`).
# 7. **(c) 4.** A group is kept with probability $1 - 0.75 = 0.25$, so the number drawn per
#    kept group is geometric with mean $1/0.25 = 4$. Three of every four groups are
#    generated and thrown away ({doc}`02_placebos_and_cost`).
# 8. **(b).** $u - \log u - 1 \ge 0$ for every $u > 0$ (the tangent line of $\log$ at 1
#    lies above it). k1, the log-ratio, is negative whenever the sampled token is more
#    likely under the reference ({doc}`05_kl_estimators`).
# ```

# %%
print(quiz.report(quiz.check_quiz(quiz.PART2, [q.answer for q in quiz.PART2])), "(the key)")
