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
# # The task and its verifier
#
# Before any model is trained we need two things that do not depend on a model: a set of
# problems whose answers are known exactly, and a program that decides, for any text a
# model might produce, whether it earns the reward. This chapter builds both and then tries
# to break the verifier.
#
# You will learn how the problems are generated and kept apart between training and test,
# what makes a reward "verifiable", and which lenient checks a model learns to exploit.
#
# **Invariant.** 1,000 training, 200 validation and 200 test problems, all distinct even up
# to the order of the movements; the solver is exact; a response earns 1 only when it is a
# single complete JSON object `{"final_stock": n}` with the right integer, and 0 otherwise.

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
from collections import Counter

from verifiable_grpo.task import data, statements, verifier
from verifiable_grpo.core.config import load_config
from verifiable_grpo.book import task_plots
from verifiable_grpo.book.notebook import Table, quiet, show

quiet()
config = load_config("tiny")

# %% [markdown]
# ## StockArithmetic-v1
#
# A problem is an initial stock, two deliveries and two withdrawals. The generator draws
# them from one seeded random stream, so the same seed always gives the same 1,400
# problems. Training and validation operands lie in 0..50; half of the test set does too
# (ID50), the other half has at least one operand in 51..100 (OOD100).

# %%
problems = data.generate_problem_set(config["data"]["seed"])
Table(["split", "problems", "ID50", "OOD100"],
      [[split, len(rows), sum(p == "ID50" for _, p in rows), sum(p == "OOD100" for _, p in rows)]
       for split, rows in problems.items()])

# %% [markdown]
# Look at where each population's largest operand falls, on either side of the dashed
# bound, and how far the OOD100 answers reach past the largest answer a training problem
# asks for.

# %%
show(task_plots.plot_problem_sizes(problems))

# %% [markdown]
# The statement is deliberately terse, and the model sees only the statement and one
# formatting instruction. The target is written by the solver, never by hand:

# %%
problem, population = problems["warmstart"][0]
statement = statements.render_statement(problem, 0)
print(statements.user_message(statement))
print("target:", statements.canonical_response(verifier.compute_final_stock(problem)))

# %% [markdown]
# Every problem is checked against the solver, and no problem appears twice, even with
# its deliveries or withdrawals swapped, across all four partitions:

# %%
keys = Counter(verifier.normalized_problem(p) for rows in problems.values() for p, _ in rows)
print("distinct normalised problems:", len(keys), "| repeated:", sum(c > 1 for c in keys.values()))
largest = max(verifier.compute_final_stock(p) for rows in problems.values() for p, _ in rows)
print("largest final stock:", largest, "(the verifier accepts 0..300)")

# %% [markdown]
# The solver applies the movements in order and refuses a problem whose stock would go
# negative on the way, with a message that says why:

# %%
for bad in [{"initial": 3, "deliveries": [0, 0], "withdrawals": [5, 0]},
            {"initial": 3, "deliveries": [1], "withdrawals": [0, 0]},
            {"initial": True, "deliveries": [1, 1], "withdrawals": [0, 0]}]:
    try:
        verifier.compute_final_stock(bad)
    except ValueError as error:
        print(f"{bad} -> ValueError: {error}")

# %% [markdown]
# ## The verifier, case by case
#
# The reward is 1 for a complete, correct answer and 0 for everything else: no partial
# credit, no bonus for style, no repair of almost-JSON. Here is what it does with a range
# of plausible outputs for the problem above (expected answer shown in the last column).

# %%
cases = [
    ('{"final_stock": %d}', "eos", "the canonical answer"),
    (' {"final_stock":%d}\n', "eos", "JSON whitespace around it"),
    ('{"final_stock": %d}', "length", "correct text, but cut by the token limit"),
    ('{"final_stock": 1}', "eos", "valid JSON, wrong number"),
    ('{"final_stock": %d.0}', "eos", "a float, even an integral one"),
    ('{"final_stock": 1.5e1}', "eos", "exponent notation"),
    ('{"final_stock": "%d"}', "eos", "a string"),
    ('{"final_stock": true}', "eos", "a boolean"),
    ('{"final_stock": NaN}', "eos", "a non-finite number"),
    ('{"final_stock": %d, "unit": "boxes"}', "eos", "an extra field"),
    ('{"final_stock": %d, "final_stock": %d}', "eos", "a duplicated field"),
    ('```json\n{"final_stock": %d}\n```', "eos", "a Markdown fence"),
    ('The answer is {"final_stock": %d}', "eos", "prose around the object"),
    ('{"final_stock": 301}', "eos", "out of range"),
]
expected = verifier.compute_final_stock(problem)
rows = []
for template, finish, what in cases:
    text = template.replace("%d", str(expected))
    result = verifier.score_generated_json(text, finish, problem)
    rows.append([what, repr(text), finish, result["reason"] or "-", result["reward"]])
Table(["case", "text", "finish", "reason", "reward"], rows)

# %% [markdown]
# A generated token id that the tokenizer cannot decode must not vanish silently during
# decoding: the sampler reports it, and the verifier then rejects the response whatever the
# text looks like.

# %%
print(verifier.score_generated_json('{"final_stock": %d}' % expected, "eos", problem,
                                    tokenization_valid=False))

# %% [markdown]
# ## Error to diagnose: two objects, one of them right
#
# A lenient reward function that searches the text for a JSON object would pay this
# response, because its second object holds the right answer. A model rewarded that way
# learns to hedge by writing several answers. The strict parser reads the whole text as one
# JSON object; the second object makes that fail, and the verifier reports it with the same
# reason as any text that is not exactly one object of the required shape,
# `invalid_json_schema`. The response earns nothing.

# %%
hedge = '{"final_stock": 0} {"final_stock": %d}' % expected
print(verifier.score_generated_json(hedge, "eos", problem))

# %% [markdown]
# Note also what the verifier does **not** do: it never executes generated text, and it
# never asks a model whether an answer looks right. The next chapter samples four responses
# from a real model and scores them with exactly this function.

# %% [markdown]
# ## Exercise: write the reward yourself
#
# Write `my_reward(text, finish_reason, expected)` returning 1 or 0 with the rules above:
# EOS required, at most 256 characters, exactly one JSON object (JSON whitespace around it
# allowed) holding exactly the integer field `final_stock`, equal to `expected`. Use
# `json.loads`; never `eval`. The checker runs sixteen hidden responses through your function
# and, for each one it gets wrong, prints the response, what it expected and a hint.

# %%
import json

def my_reward(text, finish_reason, expected):
    raise NotImplementedError("replace this line with your code")

# %%
from verifiable_grpo.exercises import check_reward

result = check_reward(my_reward)

# %% [markdown]
# ```{admonition} Worked solution
# :class: dropdown
# Two details trip most first
# attempts: `json.loads` keeps the *last* of two repeated keys and accepts `NaN`, so both
# need a hook; and `True` passes `isinstance(value, int)`, so the type test is `type(...) is int`.
# ```

# %% tags=["hide-input"]
def solution_reward(text, finish_reason, expected):
    if finish_reason != "eos" or not isinstance(text, str) or len(text) > 256:
        return 0

    def no_repeated_keys(pairs):
        keys = [key for key, _ in pairs]
        if len(keys) != len(set(keys)):
            raise ValueError("repeated key")
        return dict(pairs)

    def no_constants(name):           # NaN, Infinity, -Infinity
        raise ValueError(name)

    try:
        value = json.loads(text, object_pairs_hook=no_repeated_keys, parse_constant=no_constants)
    except (ValueError, RecursionError):
        return 0
    if type(value) is not dict or list(value) != ["final_stock"]:
        return 0
    answer = value["final_stock"]
    return int(type(answer) is int and answer == expected)

result = check_reward(solution_reward)
