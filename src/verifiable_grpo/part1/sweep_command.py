"""`python -m verifiable_grpo sweep`: run (or continue) the sweep, print its table."""

from __future__ import annotations

from pathlib import Path

from verifiable_grpo.core import preregistration
from verifiable_grpo.core.config import load_config
from verifiable_grpo.part1 import sweep


def format_summary(summary: dict) -> str:
    warm = summary["warm_start"]
    lines = [
        f"warm start: validation per-draw {warm['validation_per_draw']['rate']:.3f}, test "
        f"greedy {warm['test_greedy']['rate']:.3f}, test per-draw "
        f"{warm['test_per_draw']['rate']:.3f}",
        f"{'setting':14} {'lr':>7} {'it':>4} {'upd':>3} {'G':>2} {'val/draw':>8} "
        f"{'greedy':>6} {'/draw':>6} {'paired diff [95% CI]':>26} {'KL':>8} {'clip':>5}",
    ]
    for row in summary["settings"]:
        test = row["paired_vs_warm_start"]
        lines.append(
            f"{row['name']:14} {row['learning_rate']:>7.0e} {row['iterations']:>4} "
            f"{row['updates_per_rollout']:>3} {row['group_size']:>2} "
            f"{row['validation_per_draw']['rate']:>8.3f} {row['test_greedy']['rate']:>6.3f} "
            f"{row['test_per_draw']['rate']:>6.3f} {test['difference']:>+8.3f} "
            f"[{test['low']:+.3f}, {test['high']:+.3f}] {row['last10_kl']:>8.1e} "
            f"{row['clip_max']:>5.3f}"
        )
    lines.append(
        f"selected by validation: {summary['selected']} -> "
        f"{'learns' if summary['learns'] else 'does not learn'} (paired test interval)"
    )
    return "\n".join(lines)


def command_sweep(args) -> int:
    config = load_config(args.config)
    sweep.check_setting_names(args.settings)  # bad input first, before the stamp
    # A sweep is a declared comparison: its start is stamped before any compute.
    preregistration.stamp_folder(Path(args.out), args.exploratory)
    summary = sweep.run_sweep(config, args.out, args.settings)
    print(format_summary(summary))
    if args.export:
        print(f"recorded {sweep.export(config, args.out)}")
    return 0
