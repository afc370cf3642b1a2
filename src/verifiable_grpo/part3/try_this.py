"""The course's 25 "Try this" variants: where each one is in the book, and the lab that
runs the ones no other lab records (`python -m verifiable_grpo lab try-this`).

INVENTORY has one row per variant, in the course's order (Labs 1 to 6). A row's status:
- "recorded": a recorded run the book shows; `record` names the file under
  data/recorded/part3/ (and, for this lab, the key in try-this.json);
- "partial": part of the variant is shown (counted, or run in part), the rest is not;
- "not run": nothing yet.
`needs` says what the missing part would take. The tests hold every "recorded" row to an
existing record. Lab 6's strict checkers (suite_lab/try_this_checkers.py) rescore the recorded
suite's transcripts live, so they need no run of their own.
"""

from __future__ import annotations

from dataclasses import dataclass

from verifiable_grpo.core.schema_checks import NON_EMPTY, SEED, at_least, each
from verifiable_grpo.core.settings_schema import option
from verifiable_grpo.part3.lab_limits import COUNTED, POSITIVE

STATUSES = ("recorded", "partial", "not run")


@dataclass(frozen=True)
class Variant:
    lab: int
    variant: str
    status: str
    chapter: str  # the notebook under notebooks/part3/ that shows it ("" if none)
    record: str = ""  # recorded file (without .json), or "try-this:KEY"; several: commas
    needs: str = ""

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {self.status!r}")


INVENTORY = (
    Variant(
        1,
        "loss on every token; read what follows an ignored end-of-turn",
        "recorded",
        "01_masked_sft",
        "sft-past-turn",
    ),
    Variant(
        1,
        "keep the chat rows as loaded; stopping after 15 and after 20 updates",
        "recorded",
        "01_masked_sft",
        "sft-no-row-init,sft-no-row-init-20",
    ),
    Variant(1, "the FULL budget, family by family", "recorded", "01_masked_sft", "sft-full"),
    Variant(
        1,
        "a sixth family (count the letters of a word) with its own held-out prompts",
        "recorded",
        "01_masked_sft",
        "sft-letters",
    ),
    Variant(
        1,
        "pack conversations with a block-diagonal mask and reset positions; compare "
        "slots and losses",
        "recorded",
        "14_sft_data_and_tools",
        "sft-packing",
    ),
    Variant(
        2,
        "skip the chat-row re-draw under a frozen base",
        "recorded",
        "02_lora",
        "lora-no-row-init",
    ),
    Variant(
        2,
        "adapters on q, k, v, o only, at the same budget",
        "recorded",
        "02_lora",
        "lora-qkvo,lora",
    ),
    Variant(
        2,
        "ranks 2, 8, 32 with alpha = 2r, then alpha fixed at 16",
        "recorded",
        "02_lora",
        "lora-r2-a4,lora,lora-r32-a64,lora-r2-a16,lora-r32-a16",
    ),
    Variant(
        2,
        "a trainable delta on the two chat rows, shared by lookup and tied head",
        "recorded",
        "02_lora",
        "lora-row-delta,lora,lora-no-row-init",
    ),
    Variant(
        3,
        "200 training pairs over several seeds: calibration and the best-of-n peak",
        "recorded",
        "03_reward_model",
        "try-this:reward",
    ),
    Variant(3, "a labeller biased by 0.5 x2", "recorded", "03_reward_model", "try-this:reward"),
    Variant(
        3,
        "softmax selection at several temperatures instead of the argmax",
        "recorded",
        "03_reward_model",
        "reward-model",
    ),
    Variant(4, "beta = 0.5 with the same pairs and budget", "recorded", "04_dpo", "dpo"),
    Variant(
        4,
        "off-policy pairs plus an SFT term on the chosen replies",
        "recorded",
        "04_dpo",
        "try-this:dpo",
    ),
    Variant(
        4, "IPO's squared loss with a fixed target margin", "recorded", "04_dpo", "try-this:dpo"
    ),
    Variant(
        4,
        "DPO on a 135M instruct model with 64 on-policy pairs",
        "recorded",
        "04_dpo",
        "dpo-smollm2",
    ),
    Variant(5, "no KL term", "recorded", "05_expert_iteration_vs_grpo", "expert-iteration"),
    Variant(
        5,
        "no std scaling and MAXLEN as the length denominator (Dr. GRPO-like)",
        "recorded",
        "05_expert_iteration_vs_grpo",
        "try-this:grpo",
    ),
    Variant(
        5,
        "drop groups with equal rewards and refill, counting the samples",
        "recorded",
        "05_expert_iteration_vs_grpo",
        "try-this:grpo",
    ),
    Variant(
        5,
        "G = 4 against G = 16 at a fixed number of generations",
        "recorded",
        "05_expert_iteration_vs_grpo",
        "try-this:grpo",
    ),
    Variant(
        5,
        "the repaired (exact) against the substring verifier over several seeds",
        "recorded",
        "05_expert_iteration_vs_grpo",
        "try-this:grpo",
    ),
    Variant(
        6,
        "strict checkers: full JSON, value types, topic relevance",
        "recorded",
        "06_behaviour_suite",
        "suite",
    ),
    Variant(
        6,
        "five prompts for each of five failure families (false completion, verdicts "
        "without evidence, destructive edits, over-refusal, sycophancy)",
        "recorded",
        "06_behaviour_suite",
        "suite-families",
    ),
    Variant(
        6,
        "five samples per item at temperature 0.7, clustered bootstrap",
        "recorded",
        "06_behaviour_suite",
        "suite-sampled",
    ),
    Variant(
        6,
        "prompt hashes and 13-gram overlap with the SFT prompts",
        "recorded",
        "06_behaviour_suite",
        "try-this:suite",
    ),
)


def counts() -> dict:
    """How many variants have each status."""
    return {status: sum(v.status == status for v in INVENTORY) for status in STATUSES}


@dataclass(frozen=True)
class TryThisSettings:
    """The lab's settings (configs/part3/try-this.yaml), each key declared once."""

    grpo_iterations: int = option(
        "GRPO iterations per Lab 5 variant run", POSITIVE, COUNTED, default=150
    )
    grpo_seeds: tuple[int, ...] = option(
        "seeds of the exact and substring runs", NON_EMPTY, each(SEED), default=(41, 42, 43)
    )
    reward_seeds: tuple[int, ...] = option(
        "Lab 3 seeds (200 against 4,000 pairs)", NON_EMPTY, each(SEED), default=(0, 1, 2)
    )
    small_pairs: int = option(
        "the small training set of Lab 3's first variant", at_least(2), default=200
    )
    label_bias: float = option("the labeller's weight on x2 (Lab 3)", default=0.5)
    dpo_steps: int = option("steps per Lab 4 variant run", POSITIVE, COUNTED, default=300)
    sft_weight: float = option(
        "weight of the SFT term on chosen replies (Lab 4)", at_least(0), default=1.0
    )


def run_lab(settings: TryThisSettings) -> dict:
    """Every variant that INVENTORY marks "try-this:KEY", each under its KEY."""
    from verifiable_grpo.part3.dpo_lab import try_this_dpo
    from verifiable_grpo.part3.expert_iteration_lab import try_this_grpo
    from verifiable_grpo.part3.reward_lab import try_this_reward
    from verifiable_grpo.part3.suite_lab import try_this_suite

    s = settings
    return {
        "reward": try_this_reward.run_variants(s.reward_seeds, s.small_pairs, s.label_bias),
        "dpo": try_this_dpo.run_variants(steps=s.dpo_steps, sft_weight=s.sft_weight),
        "grpo": try_this_grpo.run_variants(s.grpo_iterations, s.grpo_seeds),
        "suite": try_this_suite.run_suite_check(),
    }
