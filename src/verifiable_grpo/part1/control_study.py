"""What taught it: the declared control study (configs/part1/controls.yaml), run and analysed.

First half (`learn controls`): the instruct model scored once on the declared test draws,
then one GRPO run per (arm, seed) from the instruct model at the declared budget, the band
study's setting otherwise, each scored once on the same draws (same seeds: every run is
paired per problem and draw with the instruct model). Second half (`learn
controls-pass-at-k`): the declared policies answer the declared subset `draws` times each,
for pass@k up to k_max. Each half stamps its folder when it starts (learning_command), and
each step is cached in its folder, so the same command continues after a crash.

The analysis (`analyse`) is the declaration's primary: per-problem per-draw success, seeds
averaged per problem within an arm; each arm minus the instruct model and the verifier
minus each control, paired by problem, percentile bootstrap over problems; beside it each
seed's own per-draw success (min and max per arm). The rule reads the two contrasts.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from verifiable_grpo.core import files
from verifiable_grpo.core import model as model_lib
from verifiable_grpo.core.config import ConfigError, provenance, resolve
from verifiable_grpo.core.config_schema import Profile
from verifiable_grpo.evaluation import pass_at_k
from verifiable_grpo.evaluation.statistics import paired_bootstrap
from verifiable_grpo.part1 import band_data, band_reading, band_scoring, band_study
from verifiable_grpo.part1.control_declaration import (
    HALVES,
    INSTRUCT,
    half_runs,
    run_name,
    runs,
)
from verifiable_grpo.task import small_sums

RECORDED = "data/recorded/controls"
NOT_RUN = "not run"


def arm_config(base: Profile, declaration: dict, arm: str, seed: int) -> Profile:
    """The band setting at the declared budget, with the arm's reward and the run's seed."""
    budget = declaration["budget"]
    return base.replaced(
        seed=seed,
        grpo={
            **declaration["setting"],
            **budget,
            "interrupt_at": budget["iterations"] - 1,
            "reward": arm,
            "reward_rate": declaration["random_rate"],
        },
    )


def _score_once(path: Path, policy_of, base: Profile, examples: list, draws: dict) -> dict:
    tokenizer = model_lib.load_tokenizer(base)
    return band_data.cached(
        path, lambda: band_scoring.score(policy_of(), tokenizer, base, examples, **draws)
    )


def _test(declaration: dict) -> tuple[list, dict]:
    scoring = declaration["scoring"]
    examples = small_sums.splits()["test"][: scoring["problems"]]
    return examples, {"draws": scoring["draws"], "seed_base": scoring["seed_base"]}


def train_run(
    out: Path, base: Profile, declaration: dict, arm: str, seed: int, progress: bool = True
) -> dict:
    """One (arm, seed) run: trained (or continued, or reused) and scored once; its wall time
    from the instruct model to the test score is recorded (the 15-minute run)."""
    folder = Path(out) / run_name(arm, seed)
    done = folder / "result.json"
    if done.is_file():
        return files.read_json(done)
    started = time.perf_counter()
    config = arm_config(base, declaration, arm, seed)
    band_data.prepare(folder, config)
    curve = band_data.Curve(folder / "curve", [], None, config, at=())  # no curve: budget
    record, policy = band_data.train(config, folder, curve, progress)
    examples, draws = _test(declaration)
    after = _score_once(folder / "test-after.json", lambda: policy, config, examples, draws)
    wall = time.perf_counter() - started  # a continued run counts this process only
    history = record["history"]
    result = {
        "name": run_name(arm, seed),
        "arm": arm,
        "seed": seed,
        "train_seconds": record["timings"]["total_seconds"],
        "score_seconds": after["seconds"],
        "wall_seconds": wall,
        "history": [
            {k: h.get(k) for k in ("iteration", "mean_reward", "mean_verifier_reward")}
            | {k: h[k] for k in ("zero_variance_fraction", "mean_exact_kl")}
            for h in history
        ],
        "after": after,
        "per_draw": band_scoring.rate(after["sample"]),
        "failures": band_data.failures(after["sample"]),
        "final_model_digest": model_lib.model_digest(policy),
        "config_sha256": config.sha256,
    }
    files.save_json(done, result)
    return result


def instruct_score(out: Path, base: Profile, declaration: dict, half: str | None = None) -> dict:
    """The instruct model's answers to the declared test draws (once per study folder)."""
    examples, draws = _test(declaration)
    first = Path(out) / half_runs(declaration, half)[0][0]
    band_data.prepare(first, base)
    return _score_once(
        Path(out) / "instruct-test.json",
        lambda: band_data.instruct(first, base),
        base,
        examples,
        draws,
    )


def per_problem(rows: list[list]) -> tuple[list[str], np.ndarray, list]:
    """(ids, per-draw success per problem, the draw seeds per problem) in id order."""
    rewards = band_reading.per_problem_rewards(rows)
    seeds: dict[str, dict] = {}
    for document_id, draw, seed, *_ in rows:
        seeds.setdefault(document_id, {})[draw] = seed
    ids = list(rewards)
    return ids, np.array([np.mean(rewards[i]) for i in ids]), [seeds[i] for i in ids]


def _contrast(name: str, first, second, rng, analysis: dict) -> dict:
    interval = paired_bootstrap(
        first, second, rng, resamples=analysis["resamples"], level=analysis["level"]
    )
    return {"contrast": name, **interval, "above_zero": interval["low"] > 0}


def analyse(declaration: dict, instruct_rows: list, run_rows: dict[str, list]) -> dict:
    """The declared primary from the instruct model's and each run's sampled rows."""
    analysis = declaration["analysis"]
    ids, instruct, seeds = per_problem(instruct_rows)
    by_arm: dict[str, list] = {arm: [] for arm in declaration["arms"]}
    seed_rows = []
    for name, arm, seed in runs(declaration):
        run_ids, success, run_seeds = per_problem(run_rows[name])
        if run_ids != ids or run_seeds != seeds:
            raise ValueError(f"{name}: not scored on the instruct model's problems and draws")
        by_arm[arm].append(success)
        seed_rows.append({"run": name, "arm": arm, "seed": seed, "per_draw": float(success.mean())})
    arm_means = {arm: np.mean(v, axis=0) for arm, v in by_arm.items()}
    rng = np.random.default_rng(analysis["seed"])
    contrasts = [
        _contrast(f"{arm} - instruct", mean, instruct, rng, analysis)
        for arm, mean in arm_means.items()
    ]
    controls = [arm for arm in arm_means if arm != "verifier"]
    contrasts += [
        _contrast(f"verifier - {c}", arm_means["verifier"], arm_means[c], rng, analysis)
        for c in controls
    ]
    arms = []
    for arm, mean in arm_means.items():
        own = [r["per_draw"] for r in seed_rows if r["arm"] == arm]
        arms.append(
            {
                "arm": arm,
                "seeds": len(own),
                "per_draw": float(mean.mean()),
                "min": min(own),
                "max": max(own),
            }
        )
    verdict = all(c["above_zero"] for c in contrasts if c["contrast"].startswith("verifier - "))
    return {
        "problems": len(ids),
        "instruct_per_draw": float(instruct.mean()),
        "arms": arms,
        "seeds": seed_rows,
        "contrasts": contrasts,
        "rule": analysis["rule"],
        "verifier_taught_it": bool(verdict),
    }


def _started(folder: Path) -> dict | None:
    stamp = folder / "started.json"
    return files.read_json(stamp) if stamp.is_file() else None


def run_controls(
    out: Path,
    declaration: dict,
    base: Profile | None = None,
    progress: bool = True,
    half: str | None = None,
) -> dict:
    """One half's runs (`half`: first scores the instruct model too), or the whole study in
    one folder (None); out/result.json. The analysis needs every run: a whole study has it,
    a half's comes from `combine` once both halves are done."""
    out = Path(out)
    done = out / "result.json"
    if done.is_file():
        return files.read_json(done)
    base = band_study.band_config() if base is None else base
    started = time.perf_counter()
    instruct = None
    if half in (None, HALVES[0]):
        scored = instruct_score(out, base, declaration, half)
        instruct = {"after": scored, "failures": band_data.failures(scored["sample"])}
    results = {}
    for name, arm, seed in half_runs(declaration, half):
        results[name] = train_run(out, base, declaration, arm, seed, progress)
        print(f"{name}: per-draw success {results[name]['per_draw']:.3f} on the test draws")
    result = {
        "what": "controls" if half is None else f"controls-{half}",
        "declaration": _declared(declaration),
        "started": _started(out),
        "instruct": instruct,
        "runs": results,
        "seconds": time.perf_counter() - started,
        "provenance": provenance(base),
    }
    if half is None:
        rows = {name: r["after"]["sample"] for name, r in results.items()}
        result["analysis"] = analyse(declaration, instruct["after"]["sample"], rows)
    files.save_json(done, result)
    return result


def combine(halves: dict[str, dict], declaration: dict) -> dict:
    """The study's analysis from both halves' results (the first holds the instruct model);
    each half's start stamp and seconds beside it; the runs stay in the halves' records."""
    missing = [h for h in HALVES if h not in halves]
    if missing:
        raise ValueError(f"the {' and '.join(missing)} half has not run")
    instruct = halves[HALVES[0]]["instruct"]
    runs_done = {name: r for h in HALVES for name, r in halves[h]["runs"].items()}
    rows = {name: r["after"]["sample"] for name, r in runs_done.items()}
    return {
        "what": "controls",
        "declaration": _declared(declaration),
        "halves": {
            h: {
                "started": halves[h]["started"],
                "seconds": halves[h]["seconds"],
                "runs": list(halves[h]["runs"]),
            }
            for h in HALVES
        },
        "per_draw": {name: r["per_draw"] for name, r in runs_done.items()},
        "analysis": analyse(declaration, instruct["after"]["sample"], rows),
    }


def fifteen_minute_run(instruct: dict, run: dict, analysis: dict) -> dict:
    """The declared secondary: one verifier run's wall time and its own paired gain."""
    ids, before, _ = per_problem(instruct["after"]["sample"])
    run_ids, after, _ = per_problem(run["after"]["sample"])
    if run_ids != ids:
        raise ValueError(f"{run['name']}: not scored on the instruct model's problems")
    interval = paired_bootstrap(
        after,
        before,
        np.random.default_rng(analysis["seed"]),
        resamples=analysis["resamples"],
        level=analysis["level"],
    )
    return {
        "run": run["name"],
        "wall_seconds": run["wall_seconds"],
        "train_seconds": run["train_seconds"],
        "score_seconds": run["score_seconds"],
        "within_15_minutes": run["wall_seconds"] <= 15 * 60,
        "gain": interval,
        "gain_at_least_0.3": interval["difference"] >= 0.3,
    }


def _declared(declaration: dict) -> dict:
    path = Path(declaration["path"])
    shown = (
        path.relative_to(resolve(".")).as_posix()
        if path.is_relative_to(resolve("."))
        else str(path)
    )
    return {**declaration, "path": shown}


def run_folder(name: str, study_folders: list[Path]) -> Path | None:
    """The folder of a finished run in one of the study's folders (whole study or halves)."""
    found = [Path(f) / name for f in study_folders if (Path(f) / name / "result.json").is_file()]
    return found[0] if found else None


def policy_of(name: str, study_folders: list[Path], base: Profile, declaration: dict):
    """The instruct model, or a finished run's trained policy (SHA-checked)."""
    from verifiable_grpo.training.grpo import with_trained_weights

    if name == INSTRUCT:
        finished = (run_folder(n, study_folders) for n, _, _ in runs(declaration))
        first = next(folder for folder in finished if folder is not None)
        return band_data.instruct(first, base)
    arm, seed = name.rsplit("-", 1)
    folder = run_folder(name, study_folders)
    config = arm_config(base, declaration, arm, int(seed))
    return with_trained_weights(band_data.instruct(folder, config), folder)


def require_runs(study_folders: list[Path], declaration: dict) -> None:
    """pass@k needs the halves' trained policies: refused before any compute."""
    for name in declaration["pass_at_k"]["policies"]:
        if name != INSTRUCT and run_folder(name, study_folders) is None:
            raise ConfigError(
                [
                    f"{name}: no finished run in {', '.join(str(f) for f in study_folders)}; "
                    "run `learn controls-first` and `controls-second` first (same --out)"
                ]
            )
    if not any(run_folder(n, study_folders) for n, _, _ in runs(declaration)):
        raise ConfigError(
            [
                "no finished run to read the instruct model from: run "
                "`learn controls-first` first (same --out)"
            ]
        )


def run_pass_at_k(
    out: Path, study_folders: list[Path], declaration: dict, base: Profile | None = None
) -> dict:
    """The third part: each declared policy's `draws` answers per subset problem, and
    pass@k for k = 1..k_max with intervals, each policy also paired with the instruct model."""
    out, base = Path(out), band_study.band_config() if base is None else base
    done = out / "result.json"
    if done.is_file():
        return files.read_json(done)
    require_runs(study_folders, declaration)
    pk = declaration["pass_at_k"]
    examples = small_sums.splits()["test"][: pk["problems"]]
    draws = {"draws": pk["draws"], "seed_base": pk["seed_base"]}
    scored = {
        name: _score_once(
            out / f"{name}.json",
            lambda name=name: policy_of(name, study_folders, base, declaration),
            base,
            examples,
            draws,
        )
        for name in pk["policies"]
    }
    ks = list(range(1, pk["k_max"] + 1))
    rng = np.random.default_rng(declaration["analysis"]["seed"])
    resamples = declaration["analysis"]["resamples"]
    counts = {name: band_reading.counts(s["sample"]) for name, s in scored.items()}
    result = {
        "what": "controls-pass-at-k",
        "declaration": _declared(declaration),
        "curves": {n: pass_at_k.curve(c, ks, rng, resamples) for n, c in counts.items()},
        "gains": {
            n: pass_at_k.paired_curve(counts[INSTRUCT], c, ks, rng, resamples)
            for n, c in counts.items()
            if n != INSTRUCT and INSTRUCT in counts
        },
        "scored": scored,
        "provenance": provenance(base),
    }
    files.save_json(done, result)
    return result


def combined_record(halves: dict[str, dict], declaration: dict) -> dict:
    """`combine` with the declared secondary (the first verifier run: the 15-minute run)."""
    combined = combine(halves, declaration)
    combined["fifteen_minute_run"] = declared_fifteen_minute_run(halves, declaration)
    return combined


def declared_fifteen_minute_run(halves: dict[str, dict], declaration: dict) -> dict:
    """fifteen_minute_run of the declaration's first verifier run, from whichever half
    holds it (the first half holds the instruct model's score)."""
    first_verifier = next(n for n, arm, _ in runs(declaration) if arm == "verifier")
    run = next(h["runs"][first_verifier] for h in halves.values() if first_verifier in h["runs"])
    return fifteen_minute_run(halves[HALVES[0]]["instruct"], run, declaration["analysis"])


def save_recorded(result: dict, what: str, dest=None) -> Path:
    dest = resolve(RECORDED) if dest is None else Path(dest)
    return files.save_json(dest / f"{what}.json", result, overwrite=True)


def export(out: Path, what: str, dest=None) -> Path:
    """data/recorded/controls/<what>.json from a finished part (controls, controls-first,
    controls-second, pass-at-k)."""
    return save_recorded(files.read_json(Path(out) / "result.json"), what, dest)


def recorded(what: str = "controls") -> dict | None:
    """A recorded half, or None while it has not run."""
    path = resolve(RECORDED) / f"{what}.json"
    return files.read_json(path) if path.is_file() else None


def controls_table(declaration: dict, result: dict | None) -> list[list]:
    """Per arm: reward, seeds, per-draw success and its seed spread ("not run" until it ran)."""
    rows = []
    analysed = {a["arm"]: a for a in (result or {}).get("analysis", {}).get("arms", [])}
    for arm, meaning in declaration["arms"].items():
        done = analysed.get(arm)
        shown = (
            [f"{done['per_draw']:.3f}", f"{done['min']:.3f} .. {done['max']:.3f}"]
            if done
            else [NOT_RUN, NOT_RUN]
        )
        rows.append([arm, meaning, ", ".join(str(s) for s in declaration["seeds"][arm]), *shown])
    return rows


def result_line(result: dict) -> str:
    analysis = result["analysis"]
    parts = [
        f"{c['contrast']} {c['difference']:+.3f} [{c['low']:+.3f}, {c['high']:+.3f}]"
        for c in analysis["contrasts"]
    ]
    verdict = (
        "the verifier's reward taught it" if analysis["verifier_taught_it"] else "rule not met"
    )
    return "controls: " + "; ".join(parts) + f" -> {verdict}"
