"""OUT/report.md from a run folder's evidence, and a small exportable summary of it.

The report only reads files the other stages wrote (results, resume verdicts, checkpoint
sizes, timings); it computes nothing that could differ from them.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from verifiable_grpo.core import record_folders
from verifiable_grpo.core.config import (
    config_hash,
    load_config,
    provenance,
    read_json,
    repo_root,
    save_json,
    sha256_file,
)
from verifiable_grpo.core.config_schema import Profile
from verifiable_grpo.core.runfolder import SFT_BRANCHES, exercise_group_size, order_policies
from verifiable_grpo.evaluation.evaluate import POPULATIONS

REFERENCE = "data/recorded/reference-r001.json"


def _pct(value) -> str:
    return "n/a" if value is None else f"{100 * value:.1f} %"


def _table(header: list[str], rows: list[list]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return lines + [""]


def _read_optional(path: Path):
    return read_json(path) if path.is_file() else None


def collect(out_dir) -> dict:
    """Everything the report shows, read from OUT (missing parts are None)."""
    out = Path(out_dir)
    main = _read_optional(out / "results.json")
    exercise = _read_optional(out / "exercise" / "results.json")
    policies = {}
    for source in (main, exercise):
        if source:
            policies.update(source["policies"])
    resume = {
        p.stem.removeprefix("resume-"): read_json(p) for p in sorted(out.glob("resume-*.json"))
    }
    checkpoints = out / "checkpoints"
    sizes = (
        {p.name: p.stat().st_size for p in sorted(checkpoints.glob("*")) if p.is_file()}
        if checkpoints.is_dir()
        else {}
    )
    grpo = {}
    trained = (
        {
            p.name.removesuffix("-continuous.json")
            for p in (out / "learning").glob("*-continuous.json")
        }
        if (out / "learning").is_dir()
        else set()
    )
    for branch in [b for b in order_policies(trained) if b not in SFT_BRANCHES]:
        record = _read_optional(out / "learning" / f"{branch}-continuous.json")
        if record and record.get("history"):
            history = record["history"]
            grpo[branch] = {
                "iterations": len(history),
                "updates": record["updates"],
                "first_reward": history[0]["mean_reward"],
                "last_reward": history[-1]["mean_reward"],
                "zero_variance_fraction": sum(h["zero_variance_fraction"] for h in history)
                / len(history),
                "last_exact_kl": history[-1]["mean_exact_kl"],
            }
    return {
        "out": str(out),
        "main": main,
        "grpo": grpo,
        "exercise": exercise,
        "policies": policies,
        "resume": resume,
        "state_sizes": sizes,
        "timings": _read_optional(out / "timings.json"),
        "group_size": _read_optional(out / "exercise" / "group-size.json"),
    }


def _run_lines(evidence: dict, config: Profile | None) -> list[str]:
    """Which profile and folder; commit, config, data and device of the evidence."""
    lines = []
    source = evidence["main"] or evidence["exercise"]
    if config is not None:
        lines += [f"Profile `{config.profile}`, run folder `{evidence['out']}`.", ""]
    if source:
        prov = source["provenance"]
        lines += [
            f"Git commit `{prov['git_commit']}`, config SHA-256 `{prov['config_sha256'][:16]}...`, "
            f"dataset SHA-256 `{source['dataset_sha256'][:16]}...`, device {prov['device']}.",
            "",
        ]
    return lines


def _success_lines(policies: dict) -> list[str]:
    """Greedy pass@1 and per-draw success per policy and population."""
    first = next(iter(policies.values()))
    problems = first["greedy_pass_at_1"]["ALL"]["problems"]
    draws = first["draws_per_problem"]
    lines = [
        "## Success on the test problems",
        "",
        f"{problems} test problems, one greedy response each (greedy pass@1) and "
        f"{draws} sampled draws each (per-draw success over all "
        f"{problems * draws} draws; not best-of-{draws}). Invalid outputs count as "
        "wrong.",
        "",
    ]
    header = (
        ["policy"] + [f"greedy {p}" for p in POPULATIONS] + [f"per-draw {p}" for p in POPULATIONS]
    )
    rows = []
    for name in order_policies(policies):
        if name in policies:
            entry = policies[name]
            rows.append(
                [name]
                + [
                    f"{_pct(entry[k][p]['success_rate'])} ({entry[k][p]['correct']}/"
                    f"{entry[k][p]['responses']})"
                    for k in ("greedy_pass_at_1", "per_draw_success")
                    for p in POPULATIONS
                ]
            )
    lines += _table(header, rows)
    short = [name for name in order_policies(policies) if exercise_group_size(name)]
    if short:
        lines += [
            f"{' and '.join(short)} are the exercise's short branches (see below), "
            "not the main GRPO run.",
            "",
        ]
    return lines


def _validity_lines(policies: dict) -> list[str]:
    """Valid JSON, answers without EOS, length and generation time per policy and kind."""
    lines = ["## Validity, stops and cost", ""]
    rows = []
    for name in order_policies(policies):
        if name not in policies:
            continue
        for key, label in (("greedy_pass_at_1", "greedy"), ("per_draw_success", "sampled")):
            m = policies[name][key]["ALL"]
            rows.append(
                [
                    name,
                    label,
                    m["responses"],
                    f"{m['valid_json']} ({_pct(m['json_validity'])})",
                    m["without_eos"],
                    f"{m['mean_response_tokens']:.2f}",
                    f"{m['generation_seconds']:.1f}",
                ]
            )
    lines += _table(
        [
            "policy",
            "kind",
            "responses",
            "valid JSON",
            "without EOS",
            "mean response tokens",
            "generation s",
        ],
        rows,
    )
    peaks = {n: policies[n]["generation"]["peak_cuda_memory_bytes"] for n in policies}
    if any(v is not None for v in peaks.values()):
        lines += [
            "Peak CUDA memory during generation: "
            + ", ".join(f"{n} {v / 2**20:.0f} MiB" for n, v in peaks.items() if v is not None),
            "",
        ]
    return lines


def _policy_lines(evidence: dict) -> list[str]:
    """Success per policy and population; validity, stops and cost of the answers."""
    policies = evidence["policies"]
    if not policies:
        return []
    return _success_lines(policies) + _validity_lines(policies)


def _training_lines(evidence: dict) -> list[str]:
    """GRPO's histories at a glance, the resume verdicts and the state sizes."""
    lines = []
    if evidence["grpo"]:
        lines += [
            "## GRPO training at a glance",
            "",
            "From the continuous runs' histories: reward of the sampled groups, fraction "
            "of groups whose rewards were all equal (no reward gradient), exact KL to the "
            "reference at the last update.",
            "",
        ]
        rows = [
            [
                b,
                g["iterations"],
                g["updates"],
                f"{g['first_reward']:.3f}",
                f"{g['last_reward']:.3f}",
                f"{g['zero_variance_fraction']:.2f}",
                f"{g['last_exact_kl']:.2e}",
            ]
            for b, g in evidence["grpo"].items()
        ]
        lines += _table(
            [
                "branch",
                "iterations",
                "updates",
                "mean reward (first it.)",
                "mean reward (last it.)",
                "zero-variance groups",
                "exact KL (last)",
            ],
            rows,
        )
    if evidence["resume"]:
        lines += [
            "## Exact resume",
            "",
            "Continuous run vs interrupted-then-resumed run, whole saved state compared bit "
            "for bit (times excluded).",
            "",
        ]
        ordered = [(b, evidence["resume"][b]) for b in order_policies(evidence["resume"])]
        rows = [
            [
                b,
                "identical" if r["equal"] else f"DIFFERENT: {len(r['differences'])} fields",
                f"{r['resume']['bytes']:,}",
            ]
            for b, r in ordered
        ]
        lines += _table(["branch", "verdict", "resumed state bytes (gzip 1)"], rows)
    if evidence["state_sizes"]:
        lines += ["## State sizes", ""]
        lines += _table(
            ["file", "bytes"], [[n, f"{b:,}"] for n, b in evidence["state_sizes"].items()]
        )
    return lines


def _exercise_and_time_lines(evidence: dict) -> list[str]:
    """The group-size exercise's budgets and the wall time by stage."""
    lines = []
    summary = evidence["group_size"]
    if summary:
        lines += ["## Group-size exercise", ""]
        rows = [
            [b, n["updates"], n["prompts"], n["rollouts"], f"{n['seconds']:.1f}"]
            for b, n in summary["budgets"].items()
        ]
        lines += _table(
            ["branch", "updates", "prompt presentations", "rollouts", "training s"], rows
        )
        lines += [
            summary["limitation"],
            "",
            "Main artifacts and the verifier were unchanged after the exercise (SHA-256).",
            "",
        ]
    timings = evidence["timings"]
    if timings:
        lines += ["## Wall time by stage", ""]
        lines += _table(
            ["stage group", "seconds"],
            [[g, f"{s:.1f}"] for g, s in timings["groups"].items()]
            + [["total", f"{timings['total_seconds']:.1f}"]],
        )
        lines += _table(
            ["stage", "seconds"], [[name, f"{s:.1f}"] for name, s in timings["stages"].items()]
        )
    return lines


def _reference_lines(policies: dict) -> list[str]:
    """The specification's published figures, for scale (not measured here)."""
    lines = []
    reference = repo_root() / REFERENCE
    if reference.is_file() and policies:
        ref = read_json(reference)
        lines += [
            "## The specification's published figures (not measured by this project)",
            "",
            f"Source: {ref['attribution']['source']}. Shown for scale only; other model, "
            "other machine.",
            "",
        ]
        rows = [
            [
                n,
                _pct(m["greedy_pass_at_1"]["success_rate"]),
                _pct(m["empirical_per_draw_success"]["success_rate"]),
            ]
            for n, m in ref["metrics"].items()
        ]
        lines += _table(["policy", "greedy pass@1 (ALL)", "per-draw (ALL)"], rows)
    return lines


def render(evidence: dict, config: Profile | None = None) -> str:
    lines = ["# Run report", ""] + _run_lines(evidence, config) + _policy_lines(evidence)
    lines += _training_lines(evidence) + _exercise_and_time_lines(evidence)
    lines += _reference_lines(evidence["policies"])
    return "\n".join(lines).rstrip() + "\n"


def write_report(config: Profile, out_dir) -> Path:
    """Write OUT/report.md (refuses to replace an existing one)."""
    path = Path(out_dir) / "report.md"
    if path.exists():
        raise FileExistsError(f"{path} exists; remove it to write the report again")
    path.write_text(render(collect(out_dir), config), encoding="utf-8")
    return path


# --------------------------------------------------------------------------- export
TRIMMED_KEYS = ("history", "telemetry")  # repeated in the continuous record of the same branch
EXPORTED_POLICIES = ("warmstart", "grpo")


def _learning_records(out: Path, dest: Path) -> dict[str, str]:
    """Continuous records in full (histories, telemetry); interrupt/resume records without
    their per-iteration lists, which repeat the continuous run's."""
    copied = {}
    folder = out / "learning"
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        name = f"learning/{path.name}"
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if path.stem.endswith("-continuous"):
            shutil.copyfile(path, target)
        else:
            record = read_json(path)
            trimmed = [k for k in TRIMMED_KEYS if k in record]
            save_json(
                target,
                {k: v for k, v in record.items() if k not in trimmed}
                | {"trimmed_for_export": trimmed},
            )
        copied[name] = sha256_file(target)
    return copied


def export_recorded(out_dir, dest, config: Profile | None = None) -> Path:
    """Copy a small summary of a finished run into `dest` (data/recorded/<profile>/):
    results, exercise summary, learning histories and GRPO telemetry, resume verdicts, state
    sizes, timings, the report and provenance.json. No checkpoint, no inference file."""
    out, dest = Path(out_dir), Path(dest)
    if dest.is_dir() and any(dest.iterdir()):
        raise FileExistsError(f"{dest} is not empty; recorded summaries are never overwritten")
    # a summary is never replaced: no entry makes a non-empty folder one to replace
    record_folders.check_destination(dest, record_folders.RecordKind("", frozenset(), ""), [out])
    if not (out / "results.json").is_file():
        raise FileNotFoundError(f"{out / 'results.json'} is missing: evaluate before exporting")
    copies = {
        "results.json": out / "results.json",
        "report.md": out / "report.md",
        "timings.json": out / "timings.json",
        "exercise/results.json": out / "exercise" / "results.json",
        "exercise/group-size.json": out / "exercise" / "group-size.json",
        "exercise/protected.json": out / "exercise" / "protected.json",
    }
    copies.update({p.name: p for p in sorted(out.glob("resume-*.json"))})
    # Two policies (a few MB each) so chapters can sample from the models whose results
    # they show, and the scored draws so the evaluation chapter can recompute its contrasts.
    for policy in EXPORTED_POLICIES:
        copies[f"policies/{policy}.safetensors"] = (
            out / "checkpoints" / f"{policy}-resume.safetensors"
        )
    for path in sorted((out / "scores").glob("*.json")):  # sample and greedy: per-item pairing
        copies[f"scores/{path.name}"] = path
    results = read_json(out / "results.json")
    if config is not None and results["provenance"]["config_sha256"] != config_hash(config):
        raise ValueError(
            f"{out} was run with another configuration than "
            f"{config.get('_path')}; export with the run's own profile"
        )
    dest.mkdir(parents=True, exist_ok=True)
    copied = _learning_records(out, dest)
    for name, source in copies.items():
        if source.is_file():
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
            copied[name] = sha256_file(target)
    evidence = collect(out)
    save_json(dest / "state-sizes.json", evidence["state_sizes"])
    timings = evidence["timings"] or {}
    save_json(
        dest / "provenance.json",
        {
            "exported_from": str(out),
            "command": " ".join(sys.argv),
            "run_provenance": results["provenance"],
            "export_provenance": provenance(config),
            "dataset_sha256": results["dataset_sha256"],
            "config": {k: v for k, v in (config or {}).items() if not k.startswith("_")},
            "wall_time_seconds": timings.get("total_seconds"),
            "files": copied,
        },
    )
    return dest


def command_report(args) -> int:
    config = load_config(args.config)
    path = Path(args.out) / "report.md"
    if not Path(args.out).is_dir():
        raise FileNotFoundError(
            f"no run folder {args.out}: run `python -m verifiable_grpo run --config "
            f"{args.config} --out {args.out}` first"
        )
    if path.exists():
        print(f"report kept: {path} exists (remove it to write it again)")
    else:
        print(f"report written: {write_report(config, args.out)}")
    export = getattr(args, "export", None)
    if export:
        target = (
            Path(export)
            if export != "default"
            else (repo_root() / "data" / "recorded" / config.profile)
        )
        export_recorded(args.out, target, config)
        print(f"summary exported to {target}")
    return 0
