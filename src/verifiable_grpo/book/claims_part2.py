"""Part II's sentences that quote a recorded number, tied to the records they quote."""

from __future__ import annotations

from verifiable_grpo.book.claims import fixed, signed
from verifiable_grpo.part1 import advantage_scale, fixed_prompt_objectives, fixed_prompts


def _mismatch_rows():
    recorded = fixed_prompt_objectives.recorded()
    names = [
        fixed_prompt_objectives.run_name(n, True) for n in fixed_prompt_objectives.MISMATCH_RUNS
    ]
    rows = fixed_prompt_objectives.comparison(
        {n: recorded["runs"][n] for n in names}, fixed_prompts.recorded()["ours"]
    )
    return rows, recorded["runs"][names[1]]


def _mismatch_reading():
    rows, tis = _mismatch_rows()
    out = []
    for row in rows[1:3]:  # after float32 GRPO itself: no correction, then TIS
        low, high = row["difference_interval"]
        out += [signed(row["difference"]), signed(low), signed(high)]
    weights = [(h["behaviour_weight_min"], h["behaviour_weight_max"]) for h in tis["history"]]
    return out + [fixed(min(w for w, _ in weights)), fixed(max(w for _, w in weights))]


def _step_size_reading():
    grpo = fixed_prompts.recorded()["ours"]
    runs = fixed_prompt_objectives.recorded()["runs"]
    named = ("reinforce", "reinforce_baseline", "rloo", "reinforce_pp")
    rel = {r["objective"]: r["relative"] for r in advantage_scale.scales(named, grpo)}
    diff = {
        r["objective"]: r["difference"]
        for r in fixed_prompt_objectives.comparison({n: runs[n] for n in named}, grpo)
    }
    return [fixed(rel[n], 2) for n in named] + [
        fixed(1 / rel["reinforce_baseline"], 1),
        signed(diff["reinforce_baseline"]),
        signed(diff["reinforce"]),
    ]


CLAIMS = {
    "II.6 mismatch reading": (
        "notebooks/part2/06_training_inference_mismatch.py",
        "The reading at this scale",
        _mismatch_reading,
    ),
    "II.7 step size": (
        "notebooks/part2/07_newer_objectives.py",
        "**What the comparison can say.**",
        _step_size_reading,
    ),
}
