"""`family study`'s options for a study over the devices of a node (part2/trl/study);
a module of its own so that building the CLI's parser imports nothing heavy."""

from __future__ import annotations


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
        type=int,
        default=2,
        help="--backend trl --devices: restarts of a run whose worker died (default 2)",
    )
    q.add_argument(
        "--shard",
        default=None,
        help="--backend trl: K/N, this node's share of the runs (every N-th from K)",
    )
    q.add_argument(
        "--dry-run",
        action="store_true",
        help="--backend trl: print what would run on which slot, run nothing",
    )
