"""Multiple-choice quizzes with a checker, one bank per part of the book: the learner
passes one choice letter per question and gets back which are right and, for each wrong
one, the choice they picked, without the explanation (that is in the page's hidden
solutions). The numeric answers are checked against the package's own
functions by the tests, so a quiz cannot drift from the chapters.
"""

from __future__ import annotations

from dataclasses import dataclass

LETTERS = "abcd"


@dataclass(frozen=True)
class Question:
    prompt: str
    choices: tuple[str, str, str, str]
    answer: str  # one of a, b, c, d

    def __post_init__(self):
        if len(self.choices) != len(LETTERS) or self.answer not in LETTERS:
            raise ValueError(
                f"a question needs {len(LETTERS)} choices and an answer in {LETTERS!r}"
            )


PART3 = (
    Question(
        "Full fine-tuning of a 7,000,000,000-parameter model with AdamW in mixed precision "
        "(bf16 weights and gradients, FP32 master copy and moments): model states alone?",
        ("14 GB", "28 GB", "56 GB", "112 GB"),
        "d",
    ),
    Question(
        "LoRA on every projection, short sequences: what share of the training FLOPs per "
        "token does freezing the base save, at most?",
        (
            "about 98 %, like the trainable parameters",
            "about one third",
            "nothing: the base still runs",
            "about a half",
        ),
        "b",
    ),
    Question(
        "Why does LoRA start with B = 0 and a random A?",
        (
            "to save optimizer memory",
            "so the adapted model starts as exactly the base model while B still gets a gradient",
            "so that A learns before B",
            "Adam cannot update a zero matrix",
        ),
        "b",
    ),
    Question(
        "Lab 4's DPO on off-policy rejected strings reached pair accuracy 1.000. The sampled "
        "task accuracy after 300 steps was:",
        (
            "0.874, as with on-policy pairs",
            "1.000",
            "0.229, below the reference's 0.478",
            "0.478, unchanged",
        ),
        "c",
    ),
    Question(
        "A GRPO group of G = 8 responses to a prompt the policy solves with probability 0.95: "
        "how likely is the group to carry any task gradient?",
        ("0.950", "0.663", "0.337", "0.050"),
        "c",
    ),
    Question(
        "Lab 5's GRPO on the substring checker (accept any reply containing the answer) ended with:",
        (
            "acceptance 0.976 and exact accuracy 0.778",
            "acceptance and exact accuracy both about 0.97",
            "acceptance 0.778 and exact accuracy 0.976",
            "no change from the reference",
        ),
        "a",
    ),
    Question(
        "Two rank-1 LoRA updates, e1·e1ᵀ and e2·e2ᵀ on a 2 × 2 layer, merged with weight 0.5 "
        "each. The merged update is:",
        ("a matrix of 0.25s", "0.5 · I", "I", "zero"),
        "b",
    ),
    Question(
        "PPO with ε = 0.2: a token with negative advantage whose ratio is already 0.5. Its "
        "clipped objective's gradient with respect to the ratio is:",
        (
            "negative: it keeps pushing the token down",
            "zero: the helpful move went far enough",
            "positive",
            "undefined at the clip boundary",
        ),
        "b",
    ),
    Question(
        "Best-of-n against a verifier: the KL bound log n − (n − 1)/n at n = 64 is, in nats:",
        ("0.636", "1.835", "3.175", "4.159"),
        "c",
    ),
    Question(
        "The case study serves 9.55B parameters in about 5.53 GB, not the 4.78 GB of "
        "4 bits per weight, because:",
        (
            "the KV cache is included",
            "block weights carry an FP16 scale per 128 and the two "
            "vocabulary tables are stored in 8 bits",
            "GiB were used instead of GB",
            "the adapters are kept separately",
        ),
        "b",
    ),
)


PART1 = (
    Question(
        "Part I's GRPO stage runs 100 iterations of 4 prompts with G = 4 responses each. "
        "How many responses does it generate?",
        ("400", "1,600", "3,200", "6,400"),
        "b",
    ),
    Question(
        "Each rollout batch is used for 2 updates. How many optimizer updates is that?",
        ("100", "200", "400", "800"),
        "b",
    ),
    Question(
        "One group scores [1, 0, 1, 0]. With Part I's population standard deviation, the "
        "advantages are:",
        ("±1", "±0.866", "±0.5", "all 0"),
        "a",
    ),
    Question(
        "The same group with the sample standard deviation (Lab 5's convention):",
        ("±1", "±0.866", "±1.155", "all 0"),
        "b",
    ),
    Question(
        "A response stops at the token limit; its text so far is a valid JSON answer. Its reward:",
        (
            "1 if the value is right",
            "0: a response without end-of-sequence scores nothing",
            "0.5",
            "undefined",
        ),
        "b",
    ),
    Question(
        "Part I's KL penalty is computed:",
        (
            "from the sampled tokens only, with the k3 estimator",
            "exactly, over the whole vocabulary at every visited prefix",
            "once per response, from the reward model",
            "not at all",
        ),
        "b",
    ),
    Question(
        "The clip interval on Part I's token ratio (ε = 0.2) is:",
        ("[0.5, 2]", "[0.8, 1.2]", "[0.8, 1.28]", "[0, 1.2]"),
        "b",
    ),
    Question(
        "At the first of the two updates on a rollout set, every token's ratio π/π_old is:",
        (
            "1, up to the sampler-trainer mismatch the run checks (log-probs within 2e-4), "
            "so the clip does not bind yet",
            "about 0.8",
            "about 1.2",
            "the exponential of the advantage",
        ),
        "a",
    ),
)

PART2 = (
    Question(
        "A group of G = 4 independent tries at success rate 0.5: probability that all four "
        "rewards are equal (the group's contribution to the zero-variance fraction)?",
        ("0.0625", "0.125", "0.25", "0.5"),
        "b",
    ),
    Question(
        "The dapo arm's clip interval on the ratio is:",
        ("[0.8, 1.2]", "[0.8, 1.28]", "[0.72, 1.28]", "none"),
        "b",
    ),
    Question(
        "The gspo arm clips a ratio computed:",
        ("per token", "per sequence, from the mean token log-ratio", "per group", "per batch"),
        "b",
    ),
    Question(
        "The drgrpo arm's advantages are:",
        (
            "(r − mean) / std",
            "r − mean, not divided by the std",
            "r itself",
            "ranks within the group",
        ),
        "b",
    ),
    Question(
        "With one update per rollout set, switching grpo to gspo or to dapo's clip-higher "
        "changes the gradient by:",
        (
            "about 20 %",
            "nothing: every ratio is 1 (to about 1e-5), inside any clip interval",
            "a factor G",
            "it depends on the learning rate",
        ),
        "b",
    ),
    Question(
        "Every Part II arm trains with a KL coefficient β of:",
        ("0.02, as Part I", "0.04, as Lab 5", "0: no KL term, as the published study", "1"),
        "c",
    ),
    Question(
        "A dynamic sampler keeps only groups whose rewards differ. If 3 groups in 4 are "
        "all-equal, how many groups does it draw, on average, per group it keeps?",
        ("1.33", "3", "4", "0.75"),
        "c",
    ),
    Question(
        "Per sampled token, which KL estimator can never be negative?",
        ("k1 = log π − log π_ref", "k3 = u − log u − 1 with u = π_ref / π", "both", "neither"),
        "b",
    ),
)


def check_quiz(questions, answers) -> dict:
    """Which answers are right. `answers` holds one letter per question (None: skipped);
    `picked` maps each wrongly answered question's number to the letter chosen."""
    answers = list(answers)
    if len(answers) != len(questions):
        raise ValueError(f"{len(answers)} answers for {len(questions)} questions")
    for i, answer in enumerate(answers, 1):
        if answer is not None and (not isinstance(answer, str) or answer.lower() not in LETTERS):
            raise ValueError(
                f"answer {i} must be one of {', '.join(LETTERS)} (or None), got {answer!r}"
            )
    marks = [None if a is None else a.lower() == q.answer for q, a in zip(questions, answers)]
    wrong = [i for i, m in enumerate(marks, 1) if m is False]
    return {
        "right": sum(m is True for m in marks),
        "wrong": wrong,
        "picked": {i: answers[i - 1].lower() for i in wrong},
        "skipped": [i for i, m in enumerate(marks, 1) if m is None],
        "of": len(questions),
    }


def report(result: dict, questions=None) -> str:
    """One line of totals; with `questions`, one more line per wrong answer naming the
    choice that was picked (not the right one: the explanations say why)."""
    line = f"{result['right']} of {result['of']} right"
    if result["wrong"]:
        line += f"; look again at question(s) {', '.join(map(str, result['wrong']))}"
    if result["skipped"]:
        line += f"; not answered: {', '.join(map(str, result['skipped']))}"
    if questions is not None:
        for number, letter in result.get("picked", {}).items():
            chosen = questions[number - 1].choices[LETTERS.index(letter)]
            line += f"\n  question {number}: ({letter}) {chosen!r} is not the answer"
    return line


def render(questions) -> str:
    """The questions as plain text, numbered, with lettered choices."""
    blocks = []
    for i, q in enumerate(questions, 1):
        options = "\n".join(f"   ({letter}) {text}" for letter, text in zip(LETTERS, q.choices))
        blocks.append(f"{i}. {q.prompt}\n{options}")
    return "\n\n".join(blocks)
