"""SmolLM2-135M-Instruct under GRPO on a task inside its band, declared before it ran.

Order (each step a recorded run that stamps its commit when it starts):
1. the SCREEN: the instruct model as it is, on SmallSums-v1's 64 screen problems, greedy and
   4 draws each at T = 1. It passes when per-draw success p lies in [0.05, 0.5] (a group
   of 8 then has a learning signal often enough, and there is room to learn) and greedy
   success exceeds p (the mode is more often right than a draw: the gap GRPO closes first,
   by sharpening the policy towards its mode). `band` refuses to run on a failed screen.
2. GRPO from the instruct model (no warm start: the 2-shot prompt teaches the format),
   Part I's objective (clip 0.2, exact prefix KL with beta 0.02 to the instruct model,
   population-std group advantages, two updates per rollout set), SETTING's budget.
3. Scored once on the 200 held-out test problems: greedy and 8 draws each, for the
   instruct model and the trained policy. PRIMARY: per-draw success, paired problem by
   problem (bootstrap over problems, 95 %): GRPO made the model better at new problems when
   the interval lies above zero. Greedy pass@1 and an exact McNemar test beside it. The
   validation split (96 problems x 4 draws) gives the curve at CURVE_AT iterations; it
   decides nothing.

Why these values: G = 8 gives a group with signal with probability 1 - (1 - p)^8, about
0.5 at the screen's expected p of 0.09 (4 prompts, so about two informative groups per
iteration); lr 3e-6 because one AdamW update at 1e-5 moved this model's exact KL to 0.07 in a
probe (ratios 0.02..14, far outside any clip), and 3e-6 keeps a step near a tenth of that;
100 iterations (200 updates, 3,200 responses) because a smoke run of this code took about
25 s per 4-prompt iteration, so training and scoring fit about an hour on 2 CPU cores.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from verifiable_grpo.core import files, preregistration
from verifiable_grpo.core import model as model_lib
from verifiable_grpo.core.config import ConfigError, load_config, provenance, resolve
from verifiable_grpo.core.config_schema import Profile
from verifiable_grpo.part1 import band_data, smollm2_candidate
from verifiable_grpo.part1.band_scoring import rate, score
from verifiable_grpo.task import small_sums

RECORDED = "data/recorded/band"
SCREEN = {"draws": 4, "seed_base": 930_000, "low": 0.05, "high": 0.5}
SETTING = {
    "prompts_per_iteration": 4,
    "group_size": 8,
    "learning_rate": 3.0e-6,
    "iterations": 100,
    "updates_per_rollout": 2,
    "kl_coefficient": 0.02,
    "clip_epsilon": 0.2,
    "checkpoint_every_iterations": 25,
}
CURVE_AT = (0, 25, 50, 75, 100)
TEST = {"draws": 8, "seed_base": 940_000}
ANALYSIS_SEED = 20261204
RULE = (
    "primary: per-draw success on SmallSums-v1's 200 test problems x 8 draws, trained minus "
    "instruct model, paired by problem (bootstrap over problems, 95%); better when the "
    "interval lies above 0; greedy pass@1 and exact McNemar beside it; scored once"
)


def band_config() -> Profile:
    """The tiny profile's code path with SmolLM2's model section, the 2-shot SmallSums
    prompt, short answers and SETTING; checked by the schema."""
    return load_config("tiny").replaced(
        profile="band-smollm2",
        model=smollm2_candidate.SMOLLM2_MODEL,
        data={"prompt": "small-sums-2shot"},
        # The 2-shot prompt is about 144 tokens; a right answer is 10 with EOS.
        tokens={"max_prompt": 192, "max_response": 16, "max_total": 208},
        grpo={**SETTING, "interrupt_at": SETTING["iterations"] - 1},
        evaluation={"problems": len(small_sums.splits()["test"]), "draws": TEST["draws"]},
    )


def group_signal(p: float, group_size: int) -> float:
    """Chance that G independent draws with success p do not all agree: 1 - p^G - (1-p)^G."""
    return 1.0 - p**group_size - (1.0 - p) ** group_size


def signal_share(rows: list[list], group_size: int) -> float:
    """Estimated share of groups of `group_size` draws with a learning signal (rewards not
    all equal), from each problem's per-draw success p: 1 - p^G - (1 - p)^G, averaged."""
    by_problem: dict[str, list[int]] = {}
    for row in rows:
        by_problem.setdefault(row[0], []).append(row[3])
    return float(np.mean([group_signal(np.mean(v), group_size) for v in by_problem.values()]))


def screen_verdict(scored: dict) -> dict:
    p, greedy = rate(scored["sample"]), rate(scored["greedy"])
    return {
        "per_draw": p,
        "greedy": greedy,
        "signal_share_g8": signal_share(scored["sample"], 8),
        "passed": bool(SCREEN["low"] <= p <= SCREEN["high"] and greedy > p),
    }


def run_screen(out: Path, exploratory: bool = False) -> dict:
    """The declared screen of the instruct model (computed once per folder)."""
    out = Path(out)
    stamp = preregistration.stamp_folder(out, exploratory)
    done = out / "result.json"
    if done.is_file():
        return files.read_json(done)
    config = band_config()
    smollm2_candidate.check_weights(config)
    policy, tokenizer = model_lib.load_base(config)
    examples = small_sums.splits()["screen"]
    scored = score(policy, tokenizer, config, examples, SCREEN["draws"], SCREEN["seed_base"])
    result = {
        "what": "screen",
        "family": small_sums.FAMILY,
        "rule": f"passes when {SCREEN['low']} <= per-draw <= {SCREEN['high']} and greedy > per-draw",
        "screen": SCREEN,
        "started": stamp,
        **screen_verdict(scored),
        "scored": scored,
        "model_digest": model_lib.model_digest(policy),
        "provenance": provenance(config),
    }
    files.save_json(done, result)
    return result


def screen_line(result: dict) -> str:
    verdict = "passes" if result["passed"] else "fails"
    return (
        f"screen {verdict}: per-draw {result['per_draw']:.3f}, greedy {result['greedy']:.3f}, "
        f"groups of 8 with a signal {result['signal_share_g8']:.2f}"
    )


def recorded(what: str, path: str | None = None) -> dict:
    return files.read_json(resolve(RECORDED if path is None else path) / f"{what}.json")


def export(out: Path, what: str, dest=None) -> Path:
    """data/recorded/band/{screen,band}.json from a finished folder (replaced on purpose:
    the run folder keeps the evidence)."""
    result = files.read_json(Path(out) / "result.json")
    dest = resolve(RECORDED) if dest is None else Path(dest)
    return files.save_json(dest / f"{what}.json", result, overwrite=True)


def _require_screen() -> dict:
    try:
        screen = recorded("screen")
    except FileNotFoundError:
        raise ConfigError(["no recorded screen: run `learn band-screen --export` first"]) from None
    if not screen["passed"]:
        raise ConfigError(
            [f"the recorded screen failed ({screen_line(screen)}): declare another band"]
        )
    return screen


def run_band(out: Path, exploratory: bool = False, progress: bool = True) -> dict:
    """GRPO on the screened band, its curve and its one test comparison."""
    out = Path(out)
    _require_screen()
    stamp = preregistration.stamp_folder(out, exploratory)
    done = out / "result.json"
    if done.is_file():
        return files.read_json(done)
    config = band_config()
    folder = out / "run"
    band_data.prepare(folder, config)
    tokenizer = model_lib.load_tokenizer(config)
    splits = small_sums.splits()
    curve = band_data.Curve(folder / "curve", splits["validation"], tokenizer, config, CURVE_AT)
    before = band_data.cached(
        folder / "test-before.json",
        lambda: score(
            band_data.instruct(folder, config), tokenizer, config, splits["test"], **TEST
        ),
    )
    curve.point(0, band_data.instruct(folder, config))
    record, policy = band_data.train(config, folder, curve, progress)
    after = band_data.cached(
        folder / "test-after.json",
        lambda: score(policy, tokenizer, config, splits["test"], **TEST),
    )
    result = band_data.summary(record, before, after, curve.points(), ANALYSIS_SEED)
    result.update(
        what="band",
        family=small_sums.FAMILY,
        rule=RULE,
        setting=SETTING,
        started=stamp,
        final_model_digest=model_lib.model_digest(policy),
        provenance=provenance(config),
    )
    files.save_json(done, result)
    return result


def result_line(result: dict) -> str:
    primary, greedy = result["paired"]["sample"], result["paired"]["greedy"]
    return (
        f"band: per-draw {primary['first_rate']:.3f} -> {primary['second_rate']:.3f}, paired "
        f"{primary['difference']:+.3f} [{primary['low']:+.3f}, {primary['high']:+.3f}]; greedy "
        f"{greedy['first_rate']:.3f} -> {greedy['second_rate']:.3f} (McNemar p "
        f"{greedy['mcnemar_p']:.4f})"
    )
