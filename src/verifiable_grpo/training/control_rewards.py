"""What a GRPO response is rewarded for: the verifier's verdict, or a control's.

A gain after GRPO could come from the reward's content (the right number), or from any
reward at all: with a clipped objective even a coin flip moves a model, and a reward that
only checks the format could explain the part of a gain that is format repairs. Two
control rewards, selected by the profile's `grpo.reward`, answer that at equal budget:

- `random`: 1 with probability `grpo.reward_rate`, independent of the answer. The coin of a
  response is a hash of the profile's seed and the response's rollout id (branch,
  iteration, prompt position, draw), so it is the same after a resume, on any machine,
  and never consumes a draw of the sampler's generator;
- `format`: 1 when the strict verifier's parse accepts the answer (one JSON object with an
  integer final_stock, ended by EOS, every token decodable), whatever the number.

The verifier still judges every response: a control group keeps its verdicts and carries
the verifier's rewards beside the control's ("verifier_rewards"), so a control run's
record says how often it was right while it learnt from something else.
"""

from __future__ import annotations

import hashlib

from verifiable_grpo.core.config_schema import REWARDS, Profile

__all__ = ["REWARDS", "coin", "format_reward", "rewarded"]


def coin(seed: int, rollout_id: str, rate: float) -> float:
    """1.0 with probability `rate`, from the first 64 bits of SHA-256(seed/rollout_id)."""
    digest = hashlib.sha256(f"{seed}/{rollout_id}".encode()).digest()
    return 1.0 if int.from_bytes(digest[:8], "big") / 2.0**64 < rate else 0.0


def format_reward(verdict: dict) -> float:
    """1.0 when the verifier found a well-formed answer (any number), else 0.0."""
    return 1.0 if verdict["valid"] else 0.0


def _control(group: dict, config: Profile) -> list[float]:
    if config.grpo.reward == "random":
        return [
            coin(config.seed, r["rollout_id"], config.grpo.reward_rate) for r in group["responses"]
        ]
    return [format_reward(r["verifier"]) for r in group["responses"]]


def rewarded(groups: list[dict], config: Profile) -> list[dict]:
    """The sampled groups with the profile's reward: unchanged under the verifier (the
    records of every verifier run stay as they were), else with the control's rewards,
    the verifier's kept beside them and zero_variance recomputed."""
    kind = config.grpo.reward
    if kind == "verifier":
        return groups
    return [with_rewards(group, _control(group, config), kind) for group in groups]


def with_rewards(group: dict, rewards: list[float], kind: str) -> dict:
    """A copy of a sampled group rewarded otherwise than by the verifier: the new rewards,
    the verifier's kept beside them, the reward's name and zero_variance recomputed."""
    changed = {k: v for k, v in group.items() if k != "zero_variance"}
    changed.update(
        rewards=rewards,
        verifier_rewards=group["rewards"],
        reward_kind=kind,
        zero_variance=len(set(rewards)) == 1,
    )
    return changed
