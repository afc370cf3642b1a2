"""`family study`'s options for a study over the devices of a node (part2/trl/study);
a module of its own so that building the CLI's parser imports nothing heavy."""

from __future__ import annotations

from verifiable_grpo.core.argument_types import non_negative

DEFAULT_RETRIES = 2
# What only a study over device slots (part2/trl/study) reads: any other way of running a
# study refuses them rather than ignoring them.
SLOT_OPTIONS = ("devices", "shard", "retries")


def add_node_arguments(q) -> None:
    """family study --backend trl over the devices of a node (part2/trl/study)."""
    q.add_argument(
        "--devices",
        default=None,
        help="--backend trl: one run at a time per device ('0,1,2,3') or per device "
        "group ('0+1,2+3'); default every visible GPU of a cuda config",
    )
    q.add_argument(
        "--retries",
        type=non_negative,
        default=None,
        help=f"--backend trl --devices: restarts of a run whose worker died (default "
        f"{DEFAULT_RETRIES})",
    )
    q.add_argument(
        "--shard",
        default=None,
        help="--backend trl: K/N, this node's share of the runs (every N-th from K)",
    )
    q.add_argument(
        "--dry-run",
        action="store_true",
        help="print the runs the study would start (--backend trl: on which slot) and "
        "start, compute and write nothing",
    )
