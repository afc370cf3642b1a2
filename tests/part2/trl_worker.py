"""A study worker for the tests: `family run` with the stand-in reward of
test_trl_backend_runs.py (the tiny base never writes a GSM8K answer, and constant rewards
train nothing), optionally killed with SIGKILL right after its first checkpoint is
complete, once (a marker file remembers it), as a crashed GPU worker would die.

    python tests/part2/trl_worker.py MARKER|- family run --backend trl ...
"""

import hashlib
import os
import signal
import sys
from pathlib import Path

from transformers import trainer_callback

from verifiable_grpo import cli
from verifiable_grpo.part2 import gsm8k


def hash_reward(text, answer):
    return float(hashlib.sha256(text.encode()).hexdigest()[0] in "01234567")


def die_after_first_checkpoint(marker: Path) -> None:
    save = trainer_callback.CallbackHandler.on_save

    def on_save(self, args, state, control):
        control = save(self, args, state, control)  # every callback wrote its files
        if state.global_step == 1 and not marker.exists():
            marker.touch()
            os.kill(os.getpid(), signal.SIGKILL)
        return control

    trainer_callback.CallbackHandler.on_save = on_save


if __name__ == "__main__":
    gsm8k.reward = hash_reward
    if sys.argv[1] != "-":
        die_after_first_checkpoint(Path(sys.argv[1]))
    sys.exit(cli.main(sys.argv[2:]))
