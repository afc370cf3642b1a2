"""The recorded "Try this" runs of Labs 1 and 2 on SmolLM2-135M, as rows for the chapters.

Each variant is the lab's own command with one option changed, recorded under the name of
its run folder (data/recorded/part3/NAME-metrics.json):
- Lab 2, targets: the seven projections of each block (the default run) against q, k, v, o;
- Lab 2, ranks: 2, 8 and 32 with alpha = 2r (a scale alpha/r of 2 at every rank), then
  alpha fixed at 16 (a scale of 8, 2 and 0.5); rank 8 with alpha 16 is the default run;
- Lab 1, updates: the run that keeps the chat rows as loaded, stopped after 15 updates (the
  QUICK budget) and after 20 (`--steps 20`; its cosine schedule spans 20).
A variant not yet recorded is left out of the rows and named by `missing`.
"""

from __future__ import annotations

from verifiable_grpo.part3.smollm2 import records

ATTENTION = ("q_proj", "k_proj", "v_proj", "o_proj")

# label -> (record name, the command's options after `python -m verifiable_grpo lab`)
LORA_TARGETS = {
    "all seven projections": ("lora", "lora"),
    "q, k, v, o only": ("lora-qkvo", "lora --targets " + ",".join(ATTENTION)),
}
# (rank, alpha) -> record name
LORA_RANKS = {
    (2, 4): "lora-r2-a4",
    (8, 16): "lora",
    (32, 64): "lora-r32-a64",
    (2, 16): "lora-r2-a16",
    (32, 16): "lora-r32-a16",
}
# the two series the course asks for, in its order (rank 8, alpha 16 belongs to both)
RANK_SERIES = {
    "alpha = 2r": ((2, 4), (8, 16), (32, 64)),
    "alpha = 16": ((2, 16), (8, 16), (32, 16)),
}
# updates -> record name (both keep the chat rows as loaded)
SFT_UPDATES = {15: "sft-no-row-init", 20: "sft-no-row-init-20"}


def _recorded(name: str) -> dict | None:
    try:
        return records.load_recorded(name)
    except FileNotFoundError:
        return None


def missing() -> list[str]:
    """The variants' record names that are not recorded yet."""
    names = (
        [n for n, _ in LORA_TARGETS.values()]
        + list(LORA_RANKS.values())
        + list(SFT_UPDATES.values())
    )
    return sorted({n for n in names if _recorded(n) is None})


def lora_row(record: dict) -> dict:
    """What a Lab 2 run changed and what it scored (adapted model, 50 held-out items)."""
    s, adapted = record["settings"], record["adapted"]
    return {
        "rank": s["rank"],
        "alpha": s["alpha"],
        "scale": s["alpha"] / s["rank"],
        "wrapped": record["wrapped"],
        "trainable": record["trainable"],
        "final_loss": record["history"][-1]["loss"],
        "loss": adapted["loss"],
        "stop": adapted["stop"],
        "exact": adapted["exact"],
        "training_seconds": record["training_seconds"],
    }


def target_rows() -> dict:
    """label -> lora_row (plus the command) for each recorded target choice."""
    rows = {}
    for label, (name, command) in LORA_TARGETS.items():
        record = _recorded(name)
        if record is not None:
            rows[label] = {**lora_row(record), "command": command}
    return rows


def rank_rows() -> list[dict]:
    """One lora_row per recorded run of each series (with its series), in RANK_SERIES order."""
    rows = []
    for series, keys in RANK_SERIES.items():
        for key in keys:
            record = _recorded(LORA_RANKS[key])
            if record is not None:
                rows.append({"series": series, **lora_row(record)})
    return rows


def sft_rows() -> dict:
    """updates -> the Lab 1 scores of the runs that keep the chat rows as loaded."""
    rows = {}
    for updates, name in SFT_UPDATES.items():
        record = _recorded(name)
        if record is not None:
            after = record["after"]
            rows[updates] = {
                "final_loss": record["history"][-1]["loss"],
                "loss": after["loss"],
                "stop": after["stop"],
                "exact": after["exact"],
                "families": after["families"],
                "training_seconds": record["training_seconds"],
            }
    return rows
