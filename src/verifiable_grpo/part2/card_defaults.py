"""The card-defaults sensitivity, as run: its record read back for chapter II.8.

The declaration (arms, seeds, command) is part2/card_defaults_lock; this module only reads
`data/recorded/part2-card-defaults`, exported by `family export` from the run of that lock,
and compares its two reruns of committed arms (grpo, gspo) with the recorded study.
"""

from __future__ import annotations

from verifiable_grpo.core.config import resolve
from verifiable_grpo.part2 import results

RECORD = "data/recorded/part2-card-defaults"
RERUN_ARMS = ("grpo", "gspo")  # the committed arms the sensitivity runs again
# The summary a chapter prints of a run: a rerun agrees when all of these are equal.
SUMMARY_KEYS = (
    "heldout_greedy_all",
    "heldout_greedy_id50",
    "heldout_greedy_ood100",
    "heldout_per_draw_all",
    "mean_zero_variance_fraction",
    "rollouts_generated",
)


def load(dest: str = RECORD) -> dict:
    return results.load(resolve(dest))


def comparison_rows(record: dict) -> list[list]:
    """[regime, arm, mean greedy, arm - grpo, 95% CI, p, BH, verdict] per pre-registered test,
    verdict second-to-none so a narrow page keeps it in view."""
    rows = []
    for regime, part in record["analysis"]["regimes"].items():
        means = {row["arm"]: row["mean"] for row in part["arms"]}
        for c in part["comparisons"]:
            rows.append(
                [
                    regime,
                    c["arm"],
                    c["verdict"],
                    f"{means[c['arm']]:.4f}",
                    f"{c['difference']:+.4f}",
                    f"[{c['low']:+.4f}, {c['high']:+.4f}]",
                    f"{c['p_value']:.4f}",
                    f"{c['p_adjusted']:.4f}",
                ]
            )
    return rows


def paper_minus_gspo(record: dict, regime: str) -> list[float]:
    """gspo_paper - gspo held-out greedy accuracy per seed (read, not tested: the lock's
    tests compare every arm with grpo only)."""
    seeds = results.per_seed(record, regime)
    return [p - g for p, g in zip(seeds["gspo_paper"], seeds["gspo"])]


def rerun_agreement(record: dict, committed: dict) -> dict:
    """How the reruns of grpo and gspo compare with the recorded study's same runs."""
    runs = [
        (record["runs"][key], committed["runs"][key])
        for key in record["runs"]
        if key[1] in RERUN_ARMS
    ]

    def rewards(manifest):
        return [step["mean_reward"] for step in manifest["telemetry"]]

    return {
        "runs": len(runs),
        "summaries_equal": sum(
            all(a["summary"][k] == b["summary"][k] for k in SUMMARY_KEYS) for a, b in runs
        ),
        "reward_traces_equal": sum(rewards(a) == rewards(b) for a, b in runs),
        "weights_equal": sum(
            a["final_weights_sha256"] == b["final_weights_sha256"] for a, b in runs
        ),
    }
