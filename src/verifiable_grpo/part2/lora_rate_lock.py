"""A second pre-registration: the same five arms, trained as LoRA adapters at a LoRA rate.

The study card trained LoRA adapters at 1e-6, a rate TRL's guide pairs with full
fine-tuning; its LoRA runs use ten times that. This lock pre-registers the study a reader
would want instead, on the tiny base so that the same code verifies it: the committed lock's
arms, seeds, regimes, budgets and analysis, with the policy frozen under r16/alpha32 adapters
(the card's shape) and a learning rate ten times the committed full-fine-tuning one. It is
written and hashed, not run. Its SHA-256 is pinned here and in its pin file, so an edit of
the file is refused like an edit of the committed lock.
"""

from __future__ import annotations

from verifiable_grpo.part2 import lock as lock_lib

PATH = "configs/part2/lock-lora-rate.json"
LOCKED_AT = "2026-12-02"
FULL_TO_LORA_RATE = 10  # TRL's LoRA Without Regret guide: 1e-5 for LoRA beside 1e-6 full
# FULL_TO_LORA_RATE x the committed 3e-5, written out so the JSON holds 0.0003 exactly.
BUDGET = {"trainable": "lora", "lora": dict(lock_lib.LORA_DEFAULTS), "learning_rate": 3.0e-4}
PINNED_SHA256 = "0b178a3408814756ffad9ba6931e1955e98d58dd1e989b4875bb46f1559a6dd6"

NOTES = [
    "learning rate 3e-4: ten times the 3e-5 at which configs/part2/lock.json trains the whole "
    "tiny policy, the ratio between the LoRA rate (1e-5) and the full fine-tuning rate (1e-6) "
    "in TRL's LoRA Without Regret guide. At the study card's scale the same rule gives 1e-5, "
    "not the card's 1e-6; TRL's LoRA examples use 1e-5 to 5e-5. Linear decay to 0, no warm-up.",
    "LoRA r=16, alpha=32, dropout 0 on every q/k/v/o/gate/up/down projection "
    "(training/lora.py), the card's adapter shape; the base stays frozen.",
    "pre-registered but not run: no result exists under this lock. Its runs go to a new study "
    "folder; a folder bound to configs/part2/lock.json refuses them.",
    *lock_lib.NOTES[2:],
]


def build() -> dict:
    """The lock as the code, the tiny profile and the warm start define it today."""
    return lock_lib.build_lock(
        lock_lib.LockChoices(budget=BUDGET, locked_at=LOCKED_AT, notes=tuple(NOTES))
    )


def write(path: str = PATH):
    """Pre-register it (once: an existing lock or pin is never replaced)."""
    return lock_lib.write_lock(build(), path)
