"""The one table of Part III's labs, and the runner of the settings labs (the `lab` verb
itself is lab_command.py).

Every lab is one row of LABS: the module that holds it (under verifiable_grpo.part3), a
one-line description, and its settings class, a frozen dataclass in the lab's folder
(NAME_lab/settings.py) that declares each of its options once: type, range, meaning and
default (core/settings_schema.py). The module's `run_lab(settings)` runs the lab and
returns its metrics; that is the one entry point of every lab. Labs come in two kinds:

- settings labs (synthetic models, seconds to minutes): the settings come from
  configs/part3/NAME.yaml, whose keys are the class's fields, checked before any compute;
  this module writes the one metrics file at the end, with the config's SHA-256;
- model labs (SmolLM2-135M, `command_line=True`): the class's fields are flags of the `lab`
  command; run_lab(out, settings, cache) saves crash checkpoints, continues from them and
  writes its own record; the module's `summary(metrics)` is the line the command prints
  (the runner is part3/model_labs.py).

Adding a lab is one row here, its module and its settings class; a settings lab adds its YAML.
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
from verifiable_grpo.core.settings_schema import from_yaml
from verifiable_grpo.part3.dpo_lab.settings import DPOSettings, SmolLM2DPOSettings
from verifiable_grpo.part3.expert_iteration_lab.settings import ExpertIterationSettings
from verifiable_grpo.part3.fault_tree_lab.settings import FaultTreeSettings
from verifiable_grpo.part3.judge_lab.settings import JudgeSettings
from verifiable_grpo.part3.lora_lab.settings import LoRASettings
from verifiable_grpo.part3.merge_lab.settings import MergingSettings
from verifiable_grpo.part3.reward_lab.settings import RewardModelSettings
from verifiable_grpo.part3.sft_lab.settings import PackingSettings, PastTurnSettings, SFTSettings
from verifiable_grpo.part3.suite_lab.settings import SuiteSettings
from verifiable_grpo.part3.try_this import TryThisSettings


@dataclass(frozen=True)
class Lab:
    module: str  # under verifiable_grpo.part3; defines run_lab
    summary: str  # one line, for --help and the book
    settings: type  # the frozen dataclass run_lab takes: each option declared once
    command_line: bool = False  # a model lab: its settings are flags; else configs/part3 YAML

    @property
    def takes_settings(self) -> bool:
        """Whether the lab reads a settings file (configs/part3/NAME.yaml)."""
        return not self.command_line


LABS = {
    "reward-model": Lab(
        "reward_lab.best_of_n",
        "Lab 3: Bradley-Terry reward model, calibration, best-of-n",
        RewardModelSettings,
    ),
    "dpo": Lab("dpo_lab.dpo", "Lab 4: DPO on a bandit and on the digit policy", DPOSettings),
    "expert-iteration": Lab(
        "expert_iteration_lab.group_relative",
        "Lab 5: expert iteration vs GRPO, substring verifier",
        ExpertIterationSettings,
    ),
    "judge": Lab(
        "judge_lab.judge", "Lab 6: simulated judge with position and length bias", JudgeSettings
    ),
    "fault-tree": Lab(
        "fault_tree_lab.fault_tree", "the fault-tree reward exercise", FaultTreeSettings
    ),
    "merging": Lab(
        "merge_lab.digit_merges",
        "model merging on two fine-tunes of the digit policy",
        MergingSettings,
    ),
    "sft": Lab(
        "sft_lab.masked_sft",
        "Lab 1: full-weight SFT with the assistant-only masked loss",
        SFTSettings,
        command_line=True,
    ),
    "sft-past-turn": Lab(
        "sft_lab.past_turn",
        "Lab 1, Try this: greedy past <|im_end|>, masked vs --no-mask policies",
        PastTurnSettings,
        command_line=True,
    ),
    "lora": Lab(
        "lora_lab.lora",
        "Lab 2: LoRA from scratch, zero-init check, merge",
        LoRASettings,
        command_line=True,
    ),
    "suite": Lab(
        "suite_lab.greedy",
        "Lab 6: the 40-item behavioural suite, paired",
        SuiteSettings,
        command_line=True,
    ),
    "suite-sampled": Lab(
        "suite_lab.sampled",
        "Lab 6, Try this: the suite sampled 5 times per item at temperature 0.7",
        SuiteSettings,
        command_line=True,
    ),
    "suite-families": Lab(
        "suite_lab.families_run",
        "Lab 6, Try this: five failure families of five items, both models",
        SuiteSettings,
        command_line=True,
    ),
    "dpo-smollm2": Lab(
        "dpo_lab.dpo_smollm2",
        "Lab 4, Try this: DPO on SmolLM2-135M-Instruct, 64 on-policy pairs",
        SmolLM2DPOSettings,
        command_line=True,
    ),
    "try-this": Lab(
        "try_this", "the course's Try-this variants of Labs 3 to 6 that fit a CPU", TryThisSettings
    ),
    "sft-packing": Lab(
        "sft_lab.try_this_packing",
        "Lab 1, Try this: padded vs packed conversations on SmolLM2-135M (loss, slots)",
        PackingSettings,
    ),
}
SETTINGS_LABS = tuple(name for name, lab in LABS.items() if lab.takes_settings)
MODEL_LABS = tuple(name for name, lab in LABS.items() if not lab.takes_settings)


def model_settings() -> dict[str, type]:
    """Each model lab's settings class: the `lab` command's flags (settings_schema.add_flags)."""
    return {name: LABS[name].settings for name in MODEL_LABS}


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


def checked_settings(name: str, path: str | Path | None = None) -> tuple[dict, object, Path]:
    """(the settings as the file gives them, the lab's settings object, the file): the file
    (default configs/part3/NAME.yaml) checked against the lab's settings class before any
    compute; ConfigError names the file and the key."""
    _settings_lab(name)
    path = Path(path) if path else repo_root() / "configs" / "part3" / f"{name}.yaml"
    if not path.exists():
        raise ValueError(f"no settings file {path}; create it or pass --settings PATH")
    given, settings = from_yaml(LABS[name].settings, read_yaml(path), str(path))
    return given, settings, path


def load_settings(name: str, path: str | Path | None = None) -> tuple[dict, Path]:
    """The lab's settings as its file gives them (what the record holds and hashes)."""
    given, _, path = checked_settings(name, path)
    return given, path


def run(
    name: str,
    out: str | Path | None = None,
    settings_path=None,
    threads: int = 1,
    command: list[str] | None = None,
) -> Path:
    """Run the lab and write OUT/metrics.json = {metrics, settings, provenance}. The settings,
    OUT (a folder this process alone holds: OUT/.lock) and the threads are checked first."""
    given, settings, path = checked_settings(name, settings_path)
    out = Path(out) if out else repo_root() / "runs" / "part3" / name
    if type(threads) is not int or not 1 <= threads <= MAX_THREADS:
        raise ValueError(f"threads must be an integer in 1..{MAX_THREADS}, got {threads!r}")
    with runlock.locked(out, f"lab {name}"):
        target = out / "metrics.json"
        if target.exists():
            raise ValueError(
                f"{target} exists: evidence is never overwritten; remove it or pass another --out"
            )
        return _run_held(name, (given, settings), path, target, threads, command)


def _run_held(name, settings, path, target, threads, command) -> Path:
    """Run the lab; `settings` is (as the file gave them, the settings object)."""
    given, settings = settings
    import torch  # here, not at the top: `--help` must not load torch

    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        started = time.perf_counter()
        metrics = lab_function(name)(settings)
        wall = time.perf_counter() - started
        record = provenance(command=command)  # records cpu_threads = threads
    finally:
        torch.set_num_threads(previous)  # a caller's process keeps its own setting
    record.update(
        config_path=_relative(path),
        config_sha256=sha256_bytes(canonical_json(given)),
        wall_seconds=round(wall, 3),
        lab=name,
    )
    save_json(target, {"lab": name, "settings": given, "metrics": metrics, "provenance": record})
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
