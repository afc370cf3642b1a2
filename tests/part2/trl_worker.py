"""A TRL backend process for the tests: `family run` (or `family study`'s worker) with the
stand-in reward of test_trl_backend_runs.py (the tiny base never writes a GSM8K answer,
and constant rewards train nothing), and optionally

  --fixed-rollouts       completions that are a function of (prompt, its k-th copy) only,
                         so one process and two draw the same rollouts (sampling RNGs
                         differ per process; the update and the evaluation are compared);
  --kill-once MARKER     SIGKILL right after the first checkpoint is complete, once (the
                         marker remembers it), as a crashed GPU worker would die.

    python tests/part2/trl_worker.py [--fixed-rollouts] [--kill-once MARKER] family run ...
"""

import hashlib
import os
import signal
import sys
from pathlib import Path


def hash_reward(text, answer):
    return float(hashlib.sha256(text.encode()).hexdigest()[0] in "01234567")


def fixed_single_turn(self, prompt_ids, images, multimodal_fields, num_generations, **_):
    """GRPOTrainer._generate_single_turn's output, from hashes instead of sampling."""
    eos, vocab = self._tokenizer.eos_token_id, self._tokenizer.vocab_size
    copies, completions = {}, []
    for ids in prompt_ids:
        k = copies[tuple(ids)] = copies.get(tuple(ids), -1) + 1
        digest = hashlib.sha256(f"{list(ids)}/{k}".encode()).digest()
        length = 2 + digest[0] % 5
        completions.append([10 + digest[1 + i] % (vocab - 20) for i in range(length)] + [eos])
    return completions, None


def die_after_first_checkpoint(marker: Path) -> None:
    from transformers import trainer_callback

    save = trainer_callback.CallbackHandler.on_save

    def on_save(self, args, state, control):
        control = save(self, args, state, control)  # every callback wrote its files
        if state.global_step == 1 and not marker.exists():
            marker.touch()
            os.kill(os.getpid(), signal.SIGKILL)
        return control

    trainer_callback.CallbackHandler.on_save = on_save


def main(argv: list[str]) -> int:
    from verifiable_grpo import cli
    from verifiable_grpo.part2 import gsm8k

    gsm8k.reward = hash_reward
    if argv[0] == "--fixed-rollouts":
        from trl import GRPOTrainer

        GRPOTrainer._generate_single_turn = fixed_single_turn
        argv = argv[1:]
    if argv[0] == "--kill-once":
        die_after_first_checkpoint(Path(argv[1]))
        argv = argv[2:]
    return cli.main(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
