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
# # Part III: quiz, the lab variants, and summary
#
# Ten questions on Part III, then where each of the 25 "Try this" variants of the labs
# stands in this book, then a summary that closes the part. The questions are ours; the
# topics and the variants follow the post-training module
# ({ref}`the post-training module <ref-module>`).
# Parts I and II have quizzes of their own, at the end of each part
# ({doc}`../part1/11_quiz`, {doc}`../part2/09_quiz`).
#
# **What you will learn.** Whether the numbers and mechanisms of Part III stuck: memory
# and compute, LoRA, DPO, GRPO's groups, verifiers, PPO's clipping, merging and serving.
# Choose an answer for each question before you open the explanations. The checker
# says which answers are right and names each choice that is not; the explanations say
# why. The tests hold every keyed answer to the package's own computation or recorded run.

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
from verifiable_grpo.exercises import quiz

print(quiz.render(quiz.PART3))

# %% [markdown]
# Put one letter per question in `my_answers` (or leave `None`) and run the cell.

# %%
my_answers = [None] * len(quiz.PART3)
print(quiz.report(quiz.check_quiz(quiz.PART3, my_answers), quiz.PART3))

# %% [markdown]
# ```{admonition} Explanations
# :class: dropdown
# 1. **(d) 112 GB.** 2 + 2 + 4 + 8 = 16 bytes per parameter, times $7 \times 10^9$, before
#    activations ({doc}`09_memory_and_compute`).
# 2. **(b) about one third.** A frozen weight skips its weight gradient, one of the three
#    matrix products per weight; the activation gradient still flows through it. Long
#    contexts add attention work that LoRA does not reduce, so the saving is smaller
#    (29 % for the case study at 8,192 tokens).
# 3. **(b).** $BA = 0$ at the start, so the function is unchanged, and the gradient with
#    respect to $B$ is not zero because $A x$ is not ({doc}`02_lora`).
# 4. **(c) 0.229.** Random strings are easy to rank below anything; the loss falls without
#    teaching the task, and the chosen answers became less likely ({doc}`04_dpo`).
# 5. **(c) 0.337.** $1 - 0.95^8 - 0.05^8$: two groups in three are all correct and teach
#    nothing about the task ({doc}`05_expert_iteration_vs_grpo`).
# 6. **(a).** The checker accepted replies that merely contained the answer, and the
#    policy learned to produce them ({doc}`05_expert_iteration_vs_grpo`).
# 7. **(b) 0.5 · I.** Merge the products; averaging the factors gives 0.25 everywhere
#    ({doc}`12_model_merging`).
# 8. **(b) zero.** For a negative advantage, the minimum takes the clipped branch once the
#    ratio is below $1 - \epsilon$: the token was already pushed down far enough. Other
#    tokens sharing the weights can still move it ({doc}`11_rlhf_background`).
# 9. **(c) 3.175.** $\log 64 - 63/64$ ({doc}`03_reward_model`).
# 10. **(b).** 8,305,020,928 block weights at 4.125 bits plus 1,245,708,288 table entries at
#     8 bits ({doc}`10_case_study_bill`).
# ```

# %%
print(quiz.report(quiz.check_quiz(quiz.PART3, [q.answer for q in quiz.PART3])), "(the key)")

# %% [markdown]
# ## The labs' "Try this" variants, and what the rest would need
#
# Each of the module's six labs ends with variants to try: 25 in all. The table lists
# every one, in the labs' order, with where this book shows it. "Recorded" means a run
# we executed and recorded, shown in the chapter named. Most of the Lab 3, 4 and 5
# variants come from one recorded run,
# `python -m verifiable_grpo lab try-this` (a few minutes on one core); the Lab 1 and 2
# variants on the 135M model are each a lab command with one option changed. Four needed
# new code as well as a run of the 135M model: a letter-counting family for Lab 1
# (`lab sft --letters`), a delta on the tied chat rows for Lab 2 (`lab lora --no-row-init
# --row-delta`), a DPO loop on the instruct model for Lab 4 (`lab dpo-smollm2`) and 25
# failure-family items with their checkers for Lab 6 (`lab suite-families`). The count
# below says how many rows are recorded; a row not yet run would say what it needs.

# %%
from verifiable_grpo.book.notebook import Table
from verifiable_grpo.part3 import try_this

print(", ".join(f"{n} {status}" for status, n in try_this.counts().items()))
Table(["lab", "variant", "status", "shown in", "what the rest would need"],
      [[v.lab, v.variant, v.status, v.chapter or "-", v.needs or "-"] for v in try_this.INVENTORY])

# %% [markdown]
# ## Part III in thirteen lines
#
# 1. **Train the behaviour you will serve.** Render the exact template the model will see,
#    put the loss on the answer and its end-of-turn token only, and check that the
#    end-of-turn token's embedding rows are actually trained (Lab 1).
# 2. **Count what trains.** LoRA's parameters are $r(\text{in} + \text{out})$ per adapted
#    matrix. Its memory saving is large; its compute saving is at most a third, because
#    gradients still flow through the frozen weights.
# 3. **Budgets are arithmetic on shapes.** 16 bytes per fully trained parameter,
#    checkpointed activations, a logits tensor that can dwarf them, and units stated
#    (GB or GiB).
# 4. **A reward model learns differences.** Bradley-Terry fixes rewards up to a constant;
#    optimising hard against a learned reward finds its errors (best-of-n).
# 5. **DPO fits margins, not answers.** A low loss on easy pairs can come with a worse
#    generator; log the chosen and rejected log-ratios.
# 6. **Keeping successes needs successes.** Expert iteration works when every prompt is
#    sometimes solved, and teaches nothing where none is.
# 7. **GRPO learns from mixed groups.** A group that scores all the same has zero
#    advantages; its success rate predicts how many such groups there will be.
# 8. **A verifier defines the task.** A lenient checker is optimised as written, not as
#    intended; check a sample of accepted outputs independently.
# 9. **PPO's clip is not a trust region.** It stops pushing tokens that already moved far
#    enough; other tokens can still move them. Monitor the KL and the ratios.
# 10. **Evaluate behaviour by category, with paired statistics.** Small suites give wide
#     intervals; judges have position and length biases to measure.
# 11. **Merge products, then evaluate.** Soups and task vectors can combine fine-tunes,
#     within limits; adapters merge as $BA$; every merge is a new model.
# 12. **Write the bill down.** Every cost rests on assumptions (utilisation, price,
#     tokens); state them, so that a reader can change them.
# 13. **Data is a budget too.** Split a token budget by mixture weight and see which
#     source repeats; pack rows with a block-causal attention mask as well as a loss mask;
#     round-trip a tool call through the template; count refusals on harmful *and* benign
#     prompts; and remember that a scorer which never penalises a wrong answer rewards
#     guessing ({doc}`14_sft_data_and_tools`).
