"""The one table of Part III's labs, and the runner of the settings labs (the `lab` verb
itself is lab_command.py).

Every lab is one row of LABS: the module that holds it (under verifiable_grpo.part3) and a
one-line description. The module's `run_lab(...)` runs the lab and returns its metrics;
that is the one entry point of every lab. Labs come in two kinds:

- settings labs (synthetic models, seconds to minutes): run_lab's keyword arguments come
  from configs/part3/NAME.yaml, checked against part3/lab_settings.py before any compute;
  this module writes the one metrics file at the end, with the config's SHA-256;
- model labs (SmolLM2-135M, `options` set): run_lab(out, cache, **options) takes the
  command-line options the row names, saves crash checkpoints, continues from them and
  writes its own record; the module's `summary(metrics)` is the line the command prints
  (the runner is part3/model_labs.py).

Adding a lab is one row here and its module; a settings lab adds its YAML and its schema.
"""

from __future__ import annotations

import importlib
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from verifiable_grpo.core import runlock
from verifiable_grpo.core.argument_types import MAX_THREADS
from verifiable_grpo.core.config import (
    canonical_json,
    provenance,
    read_json,
    read_yaml,
    repo_root,
    save_json,
    sha256_bytes,
)


@dataclass(frozen=True)
class Lab:
    module: str  # under verifiable_grpo.part3; defines run_lab
    summary: str  # one line, for --help and the book
    options: tuple[str, ...] | None = None  # a model lab's command-line options; None: YAML

    @property
    def takes_settings(self) -> bool:
        return self.options is None


# The options a model lab may take besides --out: what `lab` refuses for a settings lab.
MODEL_OPTIONS = (
    "full",
    "no_mask",
    "no_row_init",
    "steps",
    "letters",
    "row_delta",
    "rank",
    "alpha",
    "targets",
    "policy",
    "cache",
)

LABS = {
    "reward-model": Lab(
        "reward_lab.best_of_n", "Lab 3: Bradley-Terry reward model, calibration, best-of-n"
    ),
    "dpo": Lab("dpo_lab.dpo", "Lab 4: DPO on a bandit and on the digit policy"),
    "expert-iteration": Lab(
        "expert_iteration_lab.group_relative", "Lab 5: expert iteration vs GRPO, substring verifier"
    ),
    "judge": Lab("judge_lab.judge", "Lab 6: simulated judge with position and length bias"),
    "fault-tree": Lab("fault_tree_lab.fault_tree", "the fault-tree reward exercise"),
    "merging": Lab("merge_lab.digit_merges", "model merging on two fine-tunes of the digit policy"),
    "sft": Lab(
        "sft_lab.masked_sft",
        "Lab 1: full-weight SFT with the assistant-only masked loss",
        options=("full", "no_mask", "no_row_init", "steps", "letters"),
    ),
    "sft-past-turn": Lab(
        "sft_lab.past_turn",
        "Lab 1, Try this: greedy past <|im_end|>, masked vs --no-mask policies",
        options=(),
    ),
    "lora": Lab(
        "lora_lab.lora",
        "Lab 2: LoRA from scratch, zero-init check, merge",
        options=("no_row_init", "rank", "alpha", "targets", "row_delta"),
    ),
    "suite": Lab(
        "suite_lab.greedy", "Lab 6: the 40-item behavioural suite, paired", options=("policy",)
    ),
    "suite-sampled": Lab(
        "suite_lab.sampled",
        "Lab 6, Try this: the suite sampled 5 times per item at temperature 0.7",
        options=("policy",),
    ),
    "suite-families": Lab(
        "suite_lab.families_run",
        "Lab 6, Try this: five failure families of five items, both models",
        options=("policy",),
    ),
    "dpo-smollm2": Lab(
        "dpo_lab.dpo_smollm2",
        "Lab 4, Try this: DPO on SmolLM2-135M-Instruct, 64 on-policy pairs",
        options=("policy",),
    ),
    "try-this": Lab("try_this", "the course's Try-this variants of Labs 3 to 6 that fit a CPU"),
    "sft-packing": Lab(
        "sft_lab.try_this_packing",
        "Lab 1, Try this: padded vs packed conversations on SmolLM2-135M (loss, slots)",
    ),
}
SETTINGS_LABS = tuple(name for name, lab in LABS.items() if lab.takes_settings)
MODEL_LABS = tuple(name for name, lab in LABS.items() if not lab.takes_settings)


def lab_module(name: str):
    """The module holding lab `name` (imported now: this may load torch)."""
    if name not in LABS:
        raise ValueError(f"unknown lab {name!r}; choose one of {sorted(LABS)}")
    return importlib.import_module(f"verifiable_grpo.part3.{LABS[name].module}")


def lab_function(name: str):
    """Lab `name`'s entry point, its module's run_lab."""
    return lab_module(name).run_lab


def _settings_lab(name: str) -> None:
    if name not in LABS:
        raise ValueError(f"unknown lab {name!r}; choose one of {sorted(LABS)}")
    if not LABS[name].takes_settings:
        raise ValueError(
            f"lab {name} takes its options on the command line, not a settings "
            f"file; its records are read with part3.smollm2.records"
        )


RECORDED = Path("data/recorded/part3")


def load_settings(name: str, path: str | Path | None = None) -> tuple[dict, Path]:
    """The lab's settings (default configs/part3/NAME.yaml), checked against its schema
    (part3/lab_settings.py) before any compute; ConfigError names the file and the key."""
    from verifiable_grpo.part3 import lab_settings

    _settings_lab(name)
    path = Path(path) if path else repo_root() / "configs" / "part3" / f"{name}.yaml"
    if not path.exists():
        raise ValueError(f"no settings file {path}; create it or pass --settings PATH")
    return lab_settings.check(name, read_yaml(path), str(path)), path


def run(
    name: str,
    out: str | Path | None = None,
    settings_path=None,
    threads: int = 1,
    command: list[str] | None = None,
) -> Path:
    """Run the lab and write OUT/metrics.json = {metrics, settings, provenance}. The settings,
    OUT (a folder this process alone holds: OUT/.lock) and the threads are checked first."""
    settings, path = load_settings(name, settings_path)
    out = Path(out) if out else repo_root() / "runs" / "part3" / name
    if type(threads) is not int or not 1 <= threads <= MAX_THREADS:
        raise ValueError(f"threads must be an integer in 1..{MAX_THREADS}, got {threads!r}")
    with runlock.locked(out, f"lab {name}"):
        target = out / "metrics.json"
        if target.exists():
            raise ValueError(
                f"{target} exists: evidence is never overwritten; remove it or pass another --out"
            )
        return _run_held(name, settings, path, target, threads, command)


def _run_held(name, settings, path, target, threads, command) -> Path:
    import torch  # here, not at the top: `--help` must not load torch

    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        started = time.perf_counter()
        metrics = lab_function(name)(**settings)
        wall = time.perf_counter() - started
        record = provenance(command=command)  # records cpu_threads = threads
    finally:
        torch.set_num_threads(previous)  # a caller's process keeps its own setting
    record.update(
        config_path=_relative(path),
        config_sha256=sha256_bytes(canonical_json(settings)),
        wall_seconds=round(wall, 3),
        lab=name,
    )
    save_json(target, {"lab": name, "settings": settings, "metrics": metrics, "provenance": record})
    return target


def _relative(path: Path) -> str:
    try:
        return path.resolve().relative_to(repo_root()).as_posix()
    except ValueError:
        return str(path)


def export(name: str, source: str | Path | None = None, dest: str | Path | None = None) -> Path:
    """Copy a finished run's metrics.json to data/recorded/part3/NAME.json (refuses to
    overwrite a recorded file)."""
    source = Path(source) if source else repo_root() / "runs" / "part3" / name / "metrics.json"
    dest = Path(dest) if dest else repo_root() / RECORDED / f"{name}.json"
    if not source.is_file():
        raise ValueError(
            f"no metrics at {source}: run `python -m verifiable_grpo lab {name}` first"
        )
    if read_json(source).get("lab") != name:
        raise ValueError(f"{source} records another lab than {name!r}")
    if dest.exists():
        raise ValueError(f"{dest} exists: recorded evidence is never overwritten")
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, dest)
    return dest


def recorded(name: str) -> dict:
    """The recorded metrics of a settings lab (what the chapters display)."""
    _settings_lab(name)
    path = repo_root() / RECORDED / f"{name}.json"
    if not path.is_file():
        raise ValueError(
            f"no recorded results at {path}: run the lab, then "
            f"`python -m verifiable_grpo lab {name} --export`"
        )
    return read_json(path)


def record_line(name: str) -> str:
    """The reader's line on where a chapter's numbers come from: the lab's command and how
    long the recorded run took (the commit, versions and threads stay in the record and
    the book's provenance appendix)."""
    record = recorded(name)["provenance"]
    wall = record["wall_seconds"]
    took = f"{wall:.1f} s" if wall >= 0.1 else "under 0.1 s"
    return (
        f"recorded with `python -m verifiable_grpo lab {name} --export` on a "
        f"{record['device'].upper()} in {took}"
    )


def provenance_line(name: str) -> str:
    """One line naming where a chapter's recorded numbers come from."""
    record = recorded(name)["provenance"]
    return (
        f"recorded by `{record['command']}` at commit {str(record['git_commit'])[:10]}, "
        f"torch {record['packages'].get('torch')}, {record['cpu_threads']} thread(s), "
        f"{record['device']}, {record['wall_seconds']:.1f} s"
    )
