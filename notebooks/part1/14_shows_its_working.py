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
# # A model that shows its working
#
# Every answer in the book so far has been one JSON number. The models that made GRPO
# famous write their working first, inside a delimited block, and are paid for the answer
# after it ({ref}`DeepSeek-AI 2025 <ref-deepseek-r1>`). This chapter asks whether that
# helps a 135M-parameter model on a CPU, and how to find out without fooling yourself.
#
# You will learn:
# - why a thinking block might help a small model, and why it might not: what the extra
#   tokens cost the policy gradient, and what a small format reward does to a group's
#   advantages;
# - how a task is screened under two prompt templates before any training, with the rule
#   fixed in advance;
# - how to keep the answer reward and the format reward apart, and which hacks to watch
#   for when a format is rewarded;
# - how a comparison at equal budget is declared before it runs;
# - how to write a format reward that cannot be earned without working (the exercise).

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

from verifiable_grpo.book import working_plots
from verifiable_grpo.book.notebook import Table, show
from verifiable_grpo.part1 import thinking_comparison, thinking_reading, thinking_screen
from verifiable_grpo.training import hack_detectors
from verifiable_grpo.training.losses import group_advantages

screen = thinking_screen.recorded()

# %% [markdown]
# ## Why working might help, and why it might not
#
# **Why it might help.** A two-digit sum with a carry, $47 + 38$, asks for an intermediate
# result ($7 + 8 = 15$, carry one) that a model answering in one number must hold in its
# activations. Written down, the intermediate result becomes part of the context, and
# every later token can attend to it. The working also gives GRPO more to compare: over
# many groups, answers whose working holds a right step are right more often, and the
# policy gradient pushes up the steps that go with right answers.
#
# **Why it might not, at 135M.** Three reasons.
#
# 1. *Every token of working is a sampled action, and all share one advantage.* The
#    response's single advantage $A$ multiplies the gradient of every token's
#    log-probability, $\nabla_\theta \log \pi_\theta(o_t \mid q, o_{<t})$, and the
#    book's loss averages over a response's tokens, so each token gets $A / |o|$. In a
#    response of 70 tokens, the few tokens that decided the answer get a seventh of the
#    push they would get in a response of 10, the same push as the tokens that did not
#    matter, and the gradient carries the noise of seventy sampled choices instead of ten.
# 2. *A longer response is a longer chance to derail.* A small model that copies the
#    shape of the worked examples but not their arithmetic writes working that is wrong,
#    or that never reaches its answer before the token limit; each such response is a
#    0 for the answer reward.
# 3. *A small format weight is not small inside a silent group.* The format reward pays a
#    declared $w = 0.1$ for a well-formed block. In a group whose $G$ answers are all
#    wrong, the rewards are $r_i = w f_i$ with $f_i \in \{0, 1\}$. Group normalisation
#    divides by the group's standard deviation, and the weight cancels:
#
#    $$A_i = \frac{w f_i - w \bar f}{w\,\sigma_f} = \frac{f_i - \bar f}{\sigma_f}.$$
#
#    The advantages are as large as if the format were worth a whole right answer. The
#    weight ranks format below the answer only in a group where both vary.
#
# The cell below computes the advantages of three groups of four with the trainer's own
# function: a format-only group at $w = 0.1$, the same group at $w = 1$, and a group with
# one right, well-formed answer.

# %%
groups = {"one well-formed answer, none right (w = 0.1)": [0.1, 0.0, 0.0, 0.0],
          "the same, were the format worth 1": [1.0, 0.0, 0.0, 0.0],
          "one right and well-formed, two well-formed": [1.1, 0.1, 0.0, 0.1]}
rows = []
for name, rewards in groups.items():
    advantages, _, _ = group_advantages(torch.tensor([rewards]))
    rows.append([name, " ".join(f"{r:g}" for r in rewards),
                 " ".join(f"{a:+.2f}" for a in advantages[0].tolist())])
Table(["group of four", "rewards", "advantages"], rows)

# %% [markdown]
# The first two rows get the same advantages: in a group where no answer is right, the
# format term is the whole signal, whatever its weight. Where one answer is right (third
# row), the right answer dominates and the format term only separates the wrong ones a
# little. The screen below measures how often each kind of group would occur.
#
# ## Two templates, one problem
#
# Two task families were declared before anything was screened, each one step past the
# small sums of chapter 12: **CarrySums-v1**, sums of two two-digit numbers whose ones
# digits carry, and **ThreeSmall-v1**, three small operands such as $11 - 3 + 9$. Each
# family's prompt has two worked examples, and each is asked under two templates:
# **answer-only**, the JSON number as in chapter 12, and **think-then-answer**, the
# working inside `<think>` and `</think>`, then the JSON on its own line. The worked
# examples' working is computed by the package, never typed. Here is the conversation the
# model continues on the first screen problem of CarrySums-v1 (the chat template then
# wraps each turn in its role markers):

# %%
for template in thinking_screen.TEMPLATES:
    print(f"=== {template} ===")
    for turn in thinking_reading.prompt_turns("CarrySums-v1", template):
        print(f"[{turn['role']}]\n{turn['content']}")
    print()

# %% [markdown]
# The strict verifier of chapter 1 judges only the **final answer**: under
# think-then-answer, the text after the closing tag. The working itself earns nothing
# from the answer reward; only the format reward looks at it.
#
# ## The screen
#
# A family is worth training on only if the model sometimes succeeds: with no right
# answer in a group, GRPO has nothing to amplify (chapter 12). The rule, fixed before the
# screen: a family **passes** when both templates lie in the band
# $0.05 \le \text{per-draw} \le 0.5$, or when think-then-answer lies in the band where
# answer-only is below it. SmolLM2-135M-Instruct answered the first 32 screen problems of
# each family, 4 sampled answers each, under each template, with at most 24 new tokens
# answer-only and 96 with working.

# %%
print("rule:", screen["rule"])
table = thinking_reading.screen_table(screen)
Table(["family", "verdict", "template", "per-draw [95%]", "in band", "valid", "cut",
       "tokens"],
      [[r["family"], "passes" if r["passed"] else "fails", r["template"],
        f"{r['per_draw']:.3f} [{r['low']:.3f}, {r['high']:.3f}]",
        "yes" if r["in_band"] else "no", f"{r['valid']:.3f}", f"{r['without_eos']:.3f}",
        f"{r['tokens']:.1f}"]
       for r in table])

# %%
show(working_plots.plot_screen(table, screen["band"]))

# %% [markdown]
# **The screen.** On CarrySums-v1 the model answered 0.016 of the draws right when it
# answered at once and 0.078 when it wrote its working first, so the family passes by the
# second clause of the rule. On ThreeSmall-v1 it answered 0.039 and 0.031: neither
# template reaches the band, and the family fails. Both are recorded, the failure too.
# Read the pass with its interval: over 32 problems, think-then-answer's 0.078 has a 95 %
# interval of [0.031, 0.133], which reaches below the band's lower edge. The pass is a
# point estimate meeting a rule decided in advance, not proof that working helps. Working
# is also costly: 73.4 tokens per response against 11.0, and 386 seconds for the cell
# against 96.
#
# Here are the first two screen problems of each family, the first draw under each
# template: the rule picks them, not the reader.

# %%
for c in thinking_reading.shown_completions(screen):
    verdict = "right" if c["right"] else "wrong"
    print(f"--- {c['family']}: {c['question']} (answer {c['expected']}), {c['template']}: "
          f"{verdict}, ended on {c['finish_reason']}")
    print(c["text"])

# %% [markdown]
# The working copies the shape of the worked examples, "Ones: ..., carry ..., Tens: ...",
# and fills it with wrong arithmetic; once it runs past the token limit without closing
# its block. This is the small model's problem with working in one picture: the form is
# easy to imitate, the arithmetic inside it is not.
#
# ## Two rewards, kept apart, and the hacks to watch
#
# The think-then-answer arm is paid by two **reward terms**, each a declared function
# with its weight: the **answer** term, the strict verifier's 0 or 1 on the final answer
# (weight 1), and the **format** term, 1 for exactly one closed, non-empty `<think>`
# block at the start followed by exactly one parseable JSON answer and EOS, whatever the
# number (weight 0.1). Every GRPO iteration logs each term's mean apart, so a run whose
# format term rises while its answer term stays flat shows it.
#
# A rewarded format invites **reward hacking**: earning the reward without doing the
# task. Every GRPO run of the book records, beside its rewards, the share of responses
# each hack detector flags, plus two signals of the batch: the share of silent groups,
# and whether every advantage is zero (a loss that is zero by construction). The
# detectors read only the text:

# %%
print("detectors:", ", ".join(hack_detectors.DETECTORS))
detectors = thinking_reading.detector_table(screen)
Table(["family", "template", "answer term", "format term",
       *[name.replace("_", " ") for name in hack_detectors.DETECTORS]],
      [[r["family"], r["template"], f"{r['answer']:.3f}", f"{r['format']:.3f}",
        *[f"{r['shares'][name]:.3f}" for name in hack_detectors.DETECTORS]]
       for r in detectors])

# %% [markdown]
# **Hacks on the screen.** Before any training, the untrained model's think-then-answer
# responses on CarrySums-v1 earn the format term 0.594 of the time, leave their block
# unclosed 0.289 of the time, and stop at the token limit 0.219 of the time; on
# ThreeSmall-v1, 0.570, 0.148 and 0.109. No response has an empty or copied block. These
# are the starting shares a run is read against: a format term that climbs towards 1
# while unclosed blocks and truncations vanish is the model learning the shape, which
# says nothing yet about the sums.
#
# Now read each screen problem's four think-then-answer draws as one GRPO group, to see
# where a group's signal would come from under the declared reward:

# %%
group_rows = thinking_reading.group_table(screen)
Table(["family", "groups of 4", "silent under the answer", "silent under answer + format",
       "signal from the format term only"],
      [[r["family"], r["groups"], f"{r['answer_silent']:.3f}", f"{r['total_silent']:.3f}",
        f"{r['format_only']:.3f}"] for r in group_rows])

# %%
show(working_plots.plot_group_signals(group_rows))

# %% [markdown]
# **Where the signal would come from.** On CarrySums-v1, 0.750 of the groups hold no
# right answer, and in 0.656 of them the format term alone varies. By the derivation
# above, those groups get advantages of full size from the format alone: most of what
# the first iterations of a think-then-answer run could learn is the format. On
# ThreeSmall-v1, 0.906 and 0.844. A run is read with this in mind: its format term is
# expected to rise first, and only its answer term says whether working paid.
#
# ## The declared comparison
#
# Whether working pays is measured by a comparison fixed before it runs: two arms,
# **answer-only** and **think-then-answer**, each GRPO from the instruct model at the same
# budget on CarrySums-v1 (the family that passed), the same prompts, group size, learning
# rate and KL term, each scored once on held-out test problems and paired per problem
# with the untrained model under its own template. The declaration:

# %%
declared = thinking_comparison.load()
Table(["declared", "value"], thinking_reading.declaration_rows(declared))

# %% [markdown]
# The plan, with times estimated from the screen's measured seconds per response. Two
# seeds per arm would exceed the budget, so the plan runs the fallback seed declared
# beside them (`learn thinking-compare --dry-run` prints the same plan and computes
# nothing):

# %%
print("\n".join(thinking_comparison.plan_lines(thinking_comparison.plan(declared, screen))))

# %% [markdown]
# **Not run yet.** The comparison has not been run, on the CPU or on a GPU. No number of
# it appears in this chapter until its record exists; the table below reads the record
# files and says "not run" until then. On a GPU the same template and rewards run under
# the `qwen` profile (Qwen2.5-0.5B-Instruct); that result is not run either.
#
# When the record exists, this chapter will show from it: the answer term and the format
# term per iteration, apart; response length and entropy over training; each detector's
# share over training; each arm's gain with its interval; the traces of the first test
# problems before and after training, chosen by that rule; and a count of self-checking
# phrases ("wait", "check", a recomputation) in those traces before and after, as a plain
# reading of whether anything like an "aha" appeared.

# %%
Table(["comparison", "status"], thinking_reading.comparison_status())

# %% [markdown]
# To run it, on a quiet machine, from a clean checkout:
#
# ```bash
# python -m verifiable_grpo learn thinking-compare --out runs/learn --export
# ```
#
# Whatever it shows is published: if the thinking arm gains no more than the answer-only
# arm at this budget, this chapter will say that working did not pay at 135M.
#
# ## Exercise: a format reward that cannot be earned without working
#
# Write `my_format_reward(text, finish_reason)`: 1.0 when the response is exactly one
# closed, non-empty `<think>...</think>` block at its start, then exactly one JSON answer
# `{"final_stock": <integer>}`, ended on EOS (`finish_reason == "eos"`); 0.0 otherwise.
# Ignore the number: the answer reward judges it. The checker names the classic mistake,
# a regex that looks right and accepts an empty block or one that never closes.

# %%
from verifiable_grpo.exercises.format_reward import check_format_reward


def my_format_reward(text, finish_reason):
    raise NotImplementedError  # your code here


result = check_format_reward(my_format_reward)

# %% [markdown]
# ````{admonition} Worked solution
# :class: dropdown
# Match the block at the start with a lazy group, then check what the regex alone cannot:
# one tag of each kind, working that is not blank, and an answer that parses as exactly
# one JSON object with one integer:
#
# ```python
# import json, re
#
# BLOCK = re.compile(r"\s*<think>(?P<working>.*?)</think>(?P<answer>.*)", re.DOTALL)
#
#
# def my_format_reward(text, finish_reason):
#     if finish_reason != "eos" or text.count("<think>") != 1 or text.count("</think>") != 1:
#         return 0.0
#     match = BLOCK.fullmatch(text)
#     if match is None or not match["working"].strip():
#         return 0.0  # no block at the start, or a blank one
#     try:
#         answer = json.loads(match["answer"])
#     except json.JSONDecodeError:
#         return 0.0  # prose, or a second answer
#     if not isinstance(answer, dict) or list(answer) != ["final_stock"]:
#         return 0.0
#     return 1.0 if type(answer["final_stock"]) is int else 0.0
# ```
#
# Why the tempting regex fails: `<think>.*(</think>)?\s*\{.*\}` accepts `<think></think>`
# (the `.*` matches nothing) and a block that never closes (the closing tag is optional).
# A policy trained on it earns the format reward with no working at all, and by the
# derivation above, in every group with no right answer that reward is the whole signal:
# GRPO would teach the empty block first.
# ````
