"""The pre-registered analysis of the family study (the lock's "analysis" section).

Per regime and arm: the mean primary metric over seeds with a 95% percentile bootstrap
over seeds; for each non-baseline arm the per-seed difference arm - grpo (same seed),
its paired bootstrap interval and an exact two-sided sign-flip p-value, Benjamini-Hochberg
over the arms, and a verdict: better / worse (BH rejects and the interval excludes 0 on
that side) or inconclusive. Also the cost per arm and the observed ZVF beside the
i.i.d. prediction p^G + (1 - p)^G, which is not comparable across arms (dapo optimises
only varied groups; aero's one-rollout groups still carry a posterior advantage).

Every interval draws from its own generator, seeded by (analysis seed, regime, arm,
purpose), so adding or reordering a table cannot move another table's numbers.
Verdicts need every pre-registered seed of both arms; a missing run fails closed.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np

from verifiable_grpo.core import files
from verifiable_grpo.core.record_names import with_current_names
from verifiable_grpo.evaluation import statistics

PRIMARY = "heldout_greedy_all"
# Summary fields of a run manifest behind the cost and ZVF columns (absent in published
# per-seed numbers, which then get the accuracy columns only).
COST_KEYS = (
    "mean_reward_drawn",
    "rollouts_generated",
    "rollouts_discarded",
    "tokens_generated",
    "seconds_per_step",
    "mean_zero_variance_fraction",
    "mean_zero_variance_fraction_drawn",
    "group_size",
)
PURPOSE = {"per_arm": 0, "paired": 1}


def load_manifests(out) -> list[dict]:
    """The summaries of every finished run under OUT/runs."""
    found = []
    for path in sorted(Path(out).glob("runs/*/*/run_manifest.json")):
        m = with_current_names(files.read_json(path))  # recorded runs say `zvf`
        found.append(
            {
                "arm": m["arm"],
                "seed": m["seed"],
                "regime": m["regime"],
                "lock_sha256": m["lock_sha256"],
                "group_size": m["config"]["grpo"]["group_size"],
                **m["summary"],
            }
        )
    return found


def sign_flip_pvalue(differences) -> float:
    """Exact two-sided paired test: the share of the 2^n sign assignments whose |mean|
    reaches the observed |mean| (all-zero differences give 1.0)."""
    d = np.asarray(differences, dtype=np.float64)
    if d.ndim != 1 or d.size == 0:
        raise ValueError("sign_flip_pvalue needs a non-empty list of paired differences")
    if d.size > 20:
        raise ValueError(f"{d.size} pairs: 2^n sign flips is too many to enumerate exactly")
    observed = abs(d.sum())
    signs = np.array(list(itertools.product((1.0, -1.0), repeat=d.size)))
    sums = np.abs(signs @ d)
    return float(np.mean(sums >= observed - 1e-12 * max(1.0, observed)))


def iid_zero_variance_fraction(p: float, group_size: int) -> float:
    """ZVF expected when every reward of a group is an independent Bernoulli(p)."""
    if not 0 <= p <= 1:
        raise ValueError(f"p must lie in [0, 1], got {p!r}")
    return p**group_size + (1 - p) ** group_size


def _rng(lock: dict, regime_index: int, arm_index: int, purpose: str) -> np.random.Generator:
    return np.random.default_rng(
        [lock["analysis"]["rng_seed"], regime_index, arm_index, PURPOSE[purpose]]
    )


def _verdict(reject: bool, low: float, high: float) -> str:
    if reject and low > 0:
        return "better"
    if reject and high < 0:
        return "worse"
    return "inconclusive"


def analyse(
    lock: dict, runs: list[dict], lock_sha: str | None = None, metric: str = PRIMARY
) -> dict:
    """The analysis of `runs` (load_manifests rows) under `lock`, regime by regime."""
    arms, seeds = list(lock["arms"]), list(lock["seeds"])
    if lock_sha is not None:
        foreign = sorted(
            {str(r.get("lock_sha256"))[:12] for r in runs if r.get("lock_sha256") != lock_sha}
        )
        if foreign:
            raise ValueError(
                f"runs from another lock ({', '.join(foreign)}...) are mixed in: "
                "analyse each study folder under its own lock"
            )
    result = {"metric": metric, "regimes": {}}
    for r_index, regime in enumerate(lock["regimes"]):
        table = {(r["arm"], r["seed"]): r for r in runs if r["regime"] == regime}
        missing = [f"{a}/seed {s}" for a in arms for s in seeds if (a, s) not in table]
        rows = [
            _arm_row(lock, table, arm, r_index, a_index, metric) for a_index, arm in enumerate(arms)
        ]
        comparisons = [] if missing else _comparisons(lock, table, r_index, metric)
        result["regimes"][regime] = {
            "arms": rows,
            "comparisons": comparisons,
            "complete": not missing,
            "missing": missing,
        }
    return result


def _arm_row(lock: dict, table: dict, arm: str, r_index: int, a_index: int, metric: str) -> dict:
    """One arm's row in one regime: its seeds' mean with a bootstrap interval, and the
    mean costs and zero-variance fractions when the manifests carry them."""
    plan = lock["analysis"]
    done = [table[(arm, s)] for s in lock["seeds"] if (arm, s) in table]
    row = {"arm": arm, "seeds": len(done)}
    if done:
        values = [d[metric] for d in done]
        row["mean"] = float(np.mean(values))
        row["low"], row["high"] = statistics.percentile_bootstrap(
            values, _rng(lock, r_index, a_index, "per_arm"), plan["resamples"], plan["level"]
        )
    if done and all(k in d for d in done for k in COST_KEYS):
        p = float(np.mean([d["mean_reward_drawn"] for d in done]))
        row.update(
            {
                "rollouts_generated": float(np.mean([d["rollouts_generated"] for d in done])),
                "rollouts_discarded": float(np.mean([d["rollouts_discarded"] for d in done])),
                "tokens_generated": float(np.mean([d["tokens_generated"] for d in done])),
                "seconds_per_step": float(np.mean([d["seconds_per_step"] for d in done])),
                "zero_variance_fraction_logged": float(
                    np.mean([d["mean_zero_variance_fraction"] for d in done])
                ),
                "zero_variance_fraction_drawn": float(
                    np.mean([d["mean_zero_variance_fraction_drawn"] for d in done])
                ),
                "reward_drawn": p,
                "zero_variance_fraction_iid": iid_zero_variance_fraction(p, done[0]["group_size"]),
            }
        )
    return row


def _comparisons(lock: dict, table: dict, r_index: int, metric: str) -> list[dict]:
    """Every arm against the baseline, paired by seed, with Benjamini-Hochberg verdicts."""
    plan, seeds, baseline = lock["analysis"], list(lock["seeds"]), lock["baseline_arm"]
    base = [table[(baseline, s)][metric] for s in seeds]
    comparisons = []
    for a_index, arm in enumerate(lock["arms"]):
        if arm == baseline:
            continue
        values = [table[(arm, s)][metric] for s in seeds]
        paired = statistics.paired_bootstrap(
            values, base, _rng(lock, r_index, a_index, "paired"), plan["resamples"], plan["level"]
        )
        differences = np.subtract(values, base)
        comparisons.append({"arm": arm, **paired, "p_value": sign_flip_pvalue(differences)})
    if comparisons:
        adjusted, reject = statistics.benjamini_hochberg(
            [c["p_value"] for c in comparisons], alpha=0.05
        )
        for c, adj, rej in zip(comparisons, adjusted, reject):
            c.update(
                p_adjusted=float(adj),
                reject=bool(rej),
                verdict=_verdict(bool(rej), c["low"], c["high"]),
            )
    return comparisons


def format_analysis(result: dict, digits: int = 4) -> str:
    """Fixed-width text tables of `analyse`'s result."""

    def f(x) -> str:
        return f"{x:.{digits}f}"

    lines = []
    for regime, part in result["regimes"].items():
        lines.append(f"regime {regime} (metric {result['metric']})")
        lines.append(
            f"{'arm':8} {'seeds':>5} {'mean':>8} {'95% CI':>19} {'rollouts':>9} "
            f"{'discarded':>9} {'ZVF':>6} {'iid ZVF':>7}"
        )
        for row in part["arms"]:
            if row["seeds"] == 0:
                lines.append(f"{row['arm']:8} {0:>5}  (no finished run)")
                continue
            if "rollouts_generated" not in row:
                lines.append(
                    f"{row['arm']:8} {row['seeds']:>5} {f(row['mean']):>8} "
                    f"[{f(row['low'])}, {f(row['high'])}]"
                )
                continue
            lines.append(
                f"{row['arm']:8} {row['seeds']:>5} {f(row['mean']):>8} "
                f"[{f(row['low'])}, {f(row['high'])}] {row['rollouts_generated']:>9.1f} "
                f"{row['rollouts_discarded']:>9.1f} {row['zero_variance_fraction_logged']:>6.3f} "
                f"{row['zero_variance_fraction_iid']:>7.3f}"
            )
        if not part["complete"]:
            lines.append(
                f"no verdicts: {len(part['missing'])} pre-registered runs missing "
                f"(e.g. {', '.join(part['missing'][:3])})"
            )
        for c in part["comparisons"]:
            lines.append(
                f"{c['arm']} - grpo: {c['difference']:+.{digits}f} "
                f"[{c['low']:+.{digits}f}, {c['high']:+.{digits}f}], p {c['p_value']:.4f}, "
                f"BH {c['p_adjusted']:.4f} -> {c['verdict']}"
            )
        lines.append("")
    return "\n".join(lines).rstrip()
