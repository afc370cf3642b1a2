"""Part III's sentences that quote a recorded number, tied to the records they quote."""

from __future__ import annotations

from verifiable_grpo.book.claims import SOURCES, fixed, keys, percent, record
from verifiable_grpo.part3.sft_lab import masked_sft


def _group_size_bill():
    mixed = {g: 1 - 0.9**g - 0.1**g for g in (8, 4)}
    return [fixed(mixed[8], 2), fixed(mixed[4], 2), f"{100 * mixed[4] / mixed[8]:.0f}"]


CLAIMS = {
    "III.10 group size": (
        "notebooks/part3/10_case_study_bill.py",
        "Every GRPO stage is proportional to the number of responses",
        _group_size_bill,
    ),
}


# Chapter III.1, masked SFT: QUICK (sft), its ablations and the published run's figures.
SFT = "notebooks/part3/01_masked_sft.py"
SOURCES["published:sft"] = masked_sft.MODULE_REPORTS
CLAIMS |= {
    "III.1 chat rows": (
        SFT,
        "**The chat rows.**",
        keys("published:sft", "chat_rows.cosine_before f5"),
    ),
    "III.1 diagnosis": (
        SFT,
        "**What the diagnosis shows on the instruct model.**",
        keys("part3/sft-metrics.json", "chat_rows.before.cosine f3"),
    ),
    "III.1 starting point": (
        SFT,
        "**Why the numbers differ from the published run's.**",
        keys("published:sft", "before.loss f2", "before.stop p0"),
    ),
    "III.1 FULL's held-out set": (
        SFT,
        "The published lab also reports separate single-seed ablations.",
        keys(
            "part3/sft-full-metrics.json", "before.loss f4", "part3/sft-metrics.json:before.loss f4"
        ),
    ),
    "III.1 rows kept": (
        SFT,
        "On the base model, keeping the rows was",
        keys(
            "published:sft",
            "ablations.no chat-row init[0] p0",
            "ablations.no chat-row init[1] p0",
            "part3/sft-no-row-init-metrics.json:after.exact f2",
            "part3/sft-metrics.json:after.exact f2",
            "part3/sft-no-row-init-metrics.json:after.exact f2",
            "part3/sft-metrics.json:after.exact f2",
            "part3/sft-no-row-init-metrics.json:chat_rows.after.cosine f3",
        ),
    ),
    "III.1 no masking": (
        SFT,
        "Without masking, the published run lost",
        keys(
            "published:sft",
            "ablations.no masking[0] f2",
            "ablations.default QUICK[0] f2",
            "part3/sft-no-mask-metrics.json:after.exact f2",
            "part3/sft-metrics.json:after.exact f2",
            "part3/sft-no-mask-metrics.json:after.loss f4",
            "part3/sft-metrics.json:after.loss f4",
        ),
    ),
    "III.1 FULL": (
        SFT,
        "FULL (50 updates over two epochs",
        keys(
            "part3/sft-full-metrics.json",
            "after.exact f2",
            "after.stop p0",
            "published:sft:ablations.FULL (50 updates)[0] f2",
            "part3/sft-metrics.json:after.exact f2",
            "part3/sft-metrics.json:after.families.conversion f1",
            "after.families.conversion f1",
            "part3/sft-metrics.json:after.families.addition f1",
            "after.families.addition f1",
            "part3/sft-metrics.json:after.families.sorting f1",
            "after.families.sorting f1",
            "part3/sft-metrics.json:after.families.limit f1",
            "after.families.limit f1",
            "after.families.extraction f1",
        ),
    ),
    "III.1 twenty updates": (
        SFT,
        "On the published run's base model this setting barely stopped",
        keys(
            "part3/sft-no-row-init-metrics.json",
            "after.loss f4",
            "part3/sft-no-row-init-20-metrics.json:after.loss f4",
            "after.exact f2",
            "part3/sft-no-row-init-20-metrics.json:after.exact f2",
            "after.families.conversion f1",
            "part3/sft-no-row-init-20-metrics.json:after.families.conversion f1",
            "part3/sft-no-row-init-20-metrics.json:history[14].loss f4",
            "history[14].loss f4",
        ),
    ),
}


# Chapter III.2, LoRA: the structure by hand, the target, rank and chat-row variants.
LORA = "notebooks/part3/02_lora.py"


def _lora(name: str = "lora") -> dict:
    return record(f"part3/{name}-metrics.json")


def _lora_by_hand():
    """Trainable share, and AdamW's two FP32 moments (decimal MB) for adapters and model."""
    run = _lora()
    return [
        percent(run["trainable"] / run["total"], 3),
        fixed(8 * run["trainable"] / 1e6, 2),
        f"{8 * run['base_parameters'] / 1e6:,.2f}",
    ]


def _lora_attention_only():
    run = _lora("lora-qkvo")
    return [percent(run["trainable"] / run["total"], 2)]


def _lora_targets():
    qkvo, default = _lora("lora-qkvo"), _lora()
    share = qkvo["trainable"] / default["trainable"]
    return [
        percent(share, 0),
        fixed(qkvo["adapted"]["loss"], 4),
        fixed(default["adapted"]["loss"], 4),
        fixed(qkvo["adapted"]["exact"], 2),
        fixed(default["adapted"]["exact"], 2),
        fixed(qkvo["adapted"]["families"]["conversion"], 1),
        fixed(default["adapted"]["families"]["conversion"], 1),
        percent(1 - share, 0),
    ]


CLAIMS |= {
    "III.2 by hand": (LORA, "By hand, one block:", _lora_by_hand),
    "III.2 attention only": (LORA, "Attention only: per block", _lora_attention_only),
    "III.2 rows as loaded": (
        LORA,
        "On this instruct model, yes: the run that keeps the rows",
        keys(
            "part3/lora-no-row-init-metrics.json",
            "adapted.exact f2",
            "part3/lora-metrics.json:adapted.exact f2",
            "adapted.loss f4",
            "part3/lora-metrics.json:adapted.loss f4",
        ),
    ),
    "III.2 targets": (LORA, "Wrapping only q, k, v and o trains", _lora_targets),
    "III.2 ranks": (
        LORA,
        "At a fixed scale (α = 2r), rank 2 is too narrow",
        keys(
            "part3/lora-r2-a4-metrics.json",
            "adapted.loss f4",
            "part3/lora-metrics.json:adapted.loss f4",
            "adapted.exact f2",
            "part3/lora-metrics.json:adapted.exact f2",
            "part3/lora-r32-a64-metrics.json:adapted.loss f4",
            "part3/lora-r32-a64-metrics.json:adapted.exact f2",
            "part3/lora-r2-a16-metrics.json:adapted.loss f4",
            "part3/lora-r2-a16-metrics.json:adapted.exact f2",
            "part3/lora-r32-a16-metrics.json:adapted.loss f4",
            "part3/lora-r32-a16-metrics.json:adapted.exact f2",
        ),
    ),
    "III.2 row delta": (
        LORA,
        "On this instruct model the delta changes little",
        keys(
            "part3/lora-row-delta-metrics.json",
            "adapted.exact f2",
            "part3/lora-metrics.json:adapted.exact f2",
            "part3/lora-no-row-init-metrics.json:adapted.exact f2",
            "chat_rows.after.cosine f3",
            "chat_rows.folded.cosine f3",
        ),
    ),
}
