"""`family study --backend trl --devices ...`: a study that fills a node.

The study's runs are independent (one arm, one seed, one regime each), so a node with
eight GPUs is used best by eight runs at once, one per GPU, not by one run split eight
ways (the card's 16 rows per step split into whole groups over at most 4 processes).
This module is the scheduler: it starts one worker process per device slot, each a plain
`family run --backend trl` restricted to its slot's devices (CUDA_VISIBLE_DEVICES), and
hands the next pending run to whichever slot frees up first.

A slot is one device ("3") or a declared group of devices ("0+1") for a run that needs
several GPUs under `accelerate launch` (the group size must equal the accelerate file's
num_processes). Finished runs are skipped; an interrupted run resumes from its newest
checkpoint (that is what `family run` does); a worker that dies (kill -9, a crashed
driver, out of memory) has its run put back at the head of the queue, up to --retries
times, and a slot whose workers die twice in a row is retired. A refusal (exit 2: a bad
request, dynamic sampling exhausted) is final: the lock says a failed run is reported,
never rerun. Each worker writes its output to OUT/logs/; the terminal shows one table.

Several nodes: `--shard K/N` takes every N-th pending run starting at K, so N schedulers
on N nodes sharing OUT split the study without talking to each other (scripts/slurm/).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from verifiable_grpo.core import files, interrupts, preregistration, runlock
from verifiable_grpo.core.config import ConfigError
from verifiable_grpo.part2 import adoption, study
from verifiable_grpo.part2 import lock as lock_lib
from verifiable_grpo.part2.trl import backend as trl_backend
from verifiable_grpo.part2.trl import run_config
from verifiable_grpo.part2.trl.study_args import DEFAULT_RETRIES

REFUSED = 2  # `family run`'s exit status for a refusal: final, not retried
RETIRE_AFTER_DEATHS = 2  # consecutive worker deaths on one slot
PORT_BASE = 29600  # accelerate's main_process_port per slot (its default 29500 would clash)
RECORD = "trl-study.json"


@dataclass
class Slot:
    name: str
    devices: list[str]
    index: int
    deaths: int = 0
    retired: bool = False


@dataclass
class Job:
    run: tuple[str, str, int] | None  # (regime, arm, seed); None: the untrained base
    attempts: list[dict] = field(default_factory=list)
    state: str = "queued"

    @property
    def label(self) -> str:
        if self.run is None:
            return "untrained base"
        regime, arm, seed = self.run
        return f"{regime} {arm} seed {seed}"


def _visible_devices(config: dict) -> list[str]:
    """The devices a default study uses: CUDA_VISIBLE_DEVICES, else every CUDA GPU."""
    listed = os.environ.get("CUDA_VISIBLE_DEVICES")
    if listed is not None:
        return [d for d in listed.split(",") if d.strip()]
    if config["device"] != "cuda":
        return []
    import torch

    return [str(i) for i in range(torch.cuda.device_count())] if torch.cuda.is_available() else []


# What CUDA_VISIBLE_DEVICES accepts for one device: an index, or a GPU / MIG UUID.
DEVICE_NAME = re.compile(r"\d{1,4}|(GPU|MIG)-[0-9A-Za-z/-]{1,100}")


def parse_slots(spec: str | None, config: dict, processes: int) -> list[Slot]:
    """Slots from --devices ("0,1,2,3": one run per device; "0+1,2+3": one run per group),
    or by default the visible GPUs in consecutive groups of `processes`."""
    if spec is None:
        visible = _visible_devices(config)
        if not visible:
            raise ConfigError(
                ["--devices: no CUDA GPU is visible; name the devices (e.g. --devices 0,1)"]
            )
        if len(visible) % processes:
            raise ConfigError(
                [
                    f"--devices: {len(visible)} visible GPUs do not split into groups "
                    f"of {processes} (accelerate num_processes); name the groups"
                ]
            )
        spec = ",".join(
            "+".join(visible[i : i + processes]) for i in range(0, len(visible), processes)
        )
    groups = [g.split("+") for g in spec.split(",")]
    flat = [d for g in groups for d in g]
    if not flat or any(not d.strip() for d in flat):
        raise ConfigError([f"--devices {spec!r}: an empty device name"])
    if len(set(flat)) != len(flat):
        raise ConfigError([f"--devices {spec!r}: a device appears twice"])
    strange = [d for d in flat if not DEVICE_NAME.fullmatch(d)]
    if strange:
        raise ConfigError(
            [
                f"--devices {spec!r}: {strange[0]!r} is not a device (a CUDA index such as "
                "3, or a GPU-/MIG- UUID as nvidia-smi -L prints it)"
            ]
        )
    wrong = [g for g in groups if len(g) != processes]
    if wrong:
        raise ConfigError(
            [
                f"--devices: group {'+'.join(wrong[0])} has {len(wrong[0])} device(s) but "
                f"each run uses {processes} process(es) (the accelerate file's "
                "num_processes): make every group that size"
            ]
        )
    return [Slot("+".join(g), g, i) for i, g in enumerate(groups)]


def parse_shard(spec: str | None) -> tuple[int, int]:
    """--shard K/N -> (K, N); None -> (0, 1)."""
    if spec is None:
        return 0, 1
    try:
        k, n = (int(x) for x in spec.split("/"))
    except ValueError:
        k, n = -1, 0
    if n < 1 or not 0 <= k < n:
        raise ConfigError([f"--shard {spec!r}: write K/N with 0 <= K < N (e.g. 0/2)"])
    return k, n


def worker_command(args, run: tuple[str, str, int] | None) -> list[str]:
    """The command one worker runs: `family run` for a run, the base evaluation else."""
    common = ["--config", str(args.trl_config), "--lock", str(args.lock), "--out", str(args.out)]
    if run is None:
        return [sys.executable, "-m", "verifiable_grpo.part2.trl.study", "base", *common]
    regime, arm, seed = run
    line = [sys.executable, "-m", "verifiable_grpo", "family", "run", "--backend", "trl"]
    line += [*common, "--arm", arm, "--seed", str(seed), "--regime", regime]
    if args.accelerate_config:
        line += ["--accelerate-config", str(args.accelerate_config)]
    return line


def worker_env(slot: Slot, slots: int, config: dict) -> dict:
    """The slot's devices; on CPU (simulated devices) a share of the cores each."""
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ",".join(slot.devices)}
    env.pop(runlock.PARENT_ENV, None)
    env["VERIFIABLE_GRPO_MAIN_PORT"] = str(PORT_BASE + slot.index)
    if config["device"] == "cpu":
        threads = str(max(1, (os.cpu_count() or 1) // slots))
        env.update(OMP_NUM_THREADS=threads, MKL_NUM_THREADS=threads)
    return env


def _steps_done(out, run, lock) -> int:
    """Optimizer steps of the newest checkpoint (TRL counts num_iterations per step)."""
    if run is None:
        return 0
    regime, arm, seed = run
    found = [
        int(p.name.split("-")[1])
        for p in (study.run_dir(out, regime, arm, seed) / "checkpoints").glob("checkpoint-*")
    ]
    return max(found, default=0) // lock["regimes"][regime]["updates_per_rollout"]


def _done(out, job: Job) -> bool:
    if job.run is None:
        return (Path(out) / "warmstart-heldout.json").is_file()
    return study.manifest_path(out, *job.run).is_file()


def format_table(jobs: list[Job], out, lock, steps: int, slots: list[Slot]) -> str:
    """One table: every job not finished (state, slot, checkpointed steps, attempts),
    then the counts."""
    rows = [f"{'run':32} {'state':10} {'slot':6} {'steps':>7} {'tries':>5}"]
    for job in jobs:
        if job.state == "finished":
            continue
        slot = job.attempts[-1]["slot"] if job.attempts and job.state == "running" else "-"
        done = f"{_steps_done(out, job.run, lock)}/{steps}" if job.run else "-"
        rows.append(f"{job.label:32} {job.state:10} {slot:6} {done:>7} {len(job.attempts):>5}")
    counts = {s: sum(j.state == s for j in jobs) for s in ("finished", "running", "queued")}
    failed = sum(j.state == "failed" for j in jobs)
    retired = [s.name for s in slots if s.retired]
    rows.append(
        f"{counts['finished']} finished, {counts['running']} running, {counts['queued']} "
        f"queued, {failed} failed" + (f"; retired slots {', '.join(retired)}" if retired else "")
    )
    return "\n".join(rows)


class Scheduler:
    """Runs the jobs over the slots; `run()` returns the study's exit status."""

    def __init__(self, args, jobs: list[Job], slots: list[Slot], config, lock, retries: int):
        self.args, self.jobs, self.slots = args, jobs, slots
        self.config, self.lock, self.retries = config, lock, retries
        self.running: dict[int, tuple[Job, subprocess.Popen]] = {}
        self.logs = Path(args.out) / "logs"
        self.steps = config["budget"]["steps"]

    def _start(self, slot: Slot, job: Job) -> None:
        self.logs.mkdir(parents=True, exist_ok=True)
        name = job.label.replace(" ", "-")
        log = open(self.logs / f"{name}.log", "a", encoding="utf-8")
        line = worker_command(self.args, job.run)
        log.write(f"\n=== attempt {len(job.attempts) + 1} on slot {slot.name}: {line}\n")
        log.flush()
        child = subprocess.Popen(
            line,
            env=worker_env(slot, len(self.slots), self.config),
            stdout=log,
            stderr=subprocess.STDOUT,
            preexec_fn=interrupts.die_with_parent,
            start_new_session=True,
        )
        log.close()
        job.state = "running"
        job.attempts.append({"slot": slot.name, "pid": child.pid, "started": time.time()})
        self.running[slot.index] = (job, child)

    def _finish(self, slot: Slot, job: Job, code: int) -> None:
        job.attempts[-1].update(ended=time.time(), exit_code=code)
        del self.running[slot.index]
        if code == 0 and _done(self.args.out, job):
            job.state, slot.deaths = "finished", 0
        elif code == REFUSED:
            job.state, slot.deaths = "failed", 0
        else:  # a death: the run goes back to the head of the queue, once per retry
            slot.deaths += 1
            slot.retired = slot.deaths >= RETIRE_AFTER_DEATHS
            job.state = "queued" if len(job.attempts) <= self.retries else "failed"
            if job.state == "queued":
                self.jobs.remove(job)
                self.jobs.insert(0, job)

    def _free_slots(self) -> list[Slot]:
        return [s for s in self.slots if not s.retired and s.index not in self.running]

    def step(self) -> bool:
        """Reap finished workers, start queued jobs; True when something changed."""
        changed = False
        for index, (job, child) in list(self.running.items()):
            code = child.poll()
            if code is not None:
                self._finish(self.slots[index], job, code)
                changed = True
        for slot in self._free_slots():
            queued = [j for j in self.jobs if j.state == "queued"]
            if not queued:
                break
            self._start(slot, queued[0])
            changed = True
        return changed

    def run(self, poll_seconds: float = 0.5) -> int:
        last = ""
        try:
            while True:
                if interrupts.requested():  # SIGINT/SIGTERM: the workers save, then stop
                    return self._stop()
                changed = self.step()
                table = format_table(self.jobs, self.args.out, self.lock, self.steps, self.slots)
                if changed and table != last:
                    print(f"--- {time.strftime('%H:%M:%S')}\n{table}", flush=True)
                    last = table
                if not self.running and (
                    not any(j.state == "queued" for j in self.jobs) or not self._free_slots()
                ):
                    break
                time.sleep(poll_seconds)
        except KeyboardInterrupt:  # a second signal: the workers stop at once too
            self._signal_workers()
            raise
        finally:
            self._record()
        return self._verdict()

    def _signal_workers(self) -> None:
        for _job, child in self.running.values():
            child.send_signal(signal.SIGTERM)

    def _stop(self) -> int:
        """Each worker saves after its step in flight (one SIGTERM: they run in their own
        session, so a terminal's Ctrl-C reaches only this process); then the stop is
        reported like any command's."""
        self._signal_workers()
        for slot_index, (job, child) in list(self.running.items()):
            job.attempts[-1].update(ended=time.time(), exit_code=child.wait(), stopped=True)
            job.state = "finished" if _done(self.args.out, job) else "queued"
            del self.running[slot_index]
        interrupts.check("after every worker saved its checkpoint; finished runs are kept")
        return REFUSED

    def _verdict(self) -> int:
        left = [j for j in self.jobs if j.state != "finished"]
        if not left:
            return 0
        print(
            f"error: {len(left)} run(s) not finished ({', '.join(j.label for j in left)}); "
            f"their logs are in {self.logs}; run the same command again to continue",
            file=sys.stderr,
        )
        return REFUSED

    def _record(self) -> None:
        """OUT/trl-study.json: every attempt of every job (slot, pid, times, exit code);
        derived bookkeeping, rewritten by each scheduler (shard)."""
        k, n = parse_shard(getattr(self.args, "shard", None))
        name = RECORD if n == 1 else f"trl-study-shard-{k}-of-{n}.json"
        files.save_json(
            Path(self.args.out) / name,
            {
                "slots": [s.__dict__ for s in self.slots],
                "jobs": [
                    {"run": j.run, "state": j.state, "attempts": j.attempts} for j in self.jobs
                ],
            },
            overwrite=True,
        )


def _checked_slots(args, config) -> list[Slot]:
    processes = (
        run_config.read_process_count(args.accelerate_config) if args.accelerate_config else 1
    )
    return parse_slots(args.devices, config, processes)


def schedule(args, runs: list[tuple[str, str, int]]) -> int:
    """Every requested run not finished yet (and the untrained base), over the slots.
    Everything refusable is refused before the first worker starts."""
    lock, lock_sha = lock_lib.read_lock(args.lock)
    config = run_config.load_run_config(args.trl_config)
    slots = _checked_slots(args, config)
    processes = len(slots[0].devices)
    dry = getattr(args, "dry_run", False)
    for regime, arm, seed in runs:  # a dry run on a CPU machine pretends the GPUs exist
        trl_backend.check_request(
            args.lock,
            args.trl_config,
            lock_lib.LockedRun(arm, seed, regime),
            processes,
            cuda_count=processes if dry else None,
        )
    k, n = parse_shard(getattr(args, "shard", None))
    jobs = ([Job(None)] + [Job(r) for r in runs])[k::n]  # the same split on every node
    jobs = [j for j in jobs if not _done(args.out, j)]
    if dry:
        return _dry_run(args, jobs, slots, config)
    retries = DEFAULT_RETRIES if args.retries is None else args.retries
    now = preregistration.start_stamp(args.exploratory)  # a dirty tree: refused before OUT exists
    out = runlock.usable_folder(args.out)
    holder = out if n == 1 else out / "shards" / f"{k}-of-{n}"
    with runlock.locked(holder, f"family study --backend trl --shard {k}/{n}"):
        study.bind_study_folder(out, lock_sha, str(args.lock))
        stamp = preregistration.stamp_folder(out, args.exploratory, now=now)  # every node checks it
        adoption.refuse_unstamped_runs(out, stamp)
        trl_backend.bind_run_config(out, config)  # before any worker: they only compare
        return Scheduler(args, jobs, slots, config, lock, retries).run()


def _dry_run(args, jobs, slots, config) -> int:
    """What the study would run where (the first wave), and each worker's command."""
    print(f"dry run: {len(jobs)} job(s) over {len(slots)} slot(s) ({config['device']})")
    for i, job in enumerate(jobs):
        slot = slots[i].name if i < len(slots) else "next free"
        line = " ".join(worker_command(args, job.run)[1:])
        print(f"  {job.label:32} slot {slot:9} {line}")
    return 0


def main(argv: list[str]) -> int:
    """`python -m verifiable_grpo.part2.trl.study base --config C --lock L --out O`: the
    untrained base's held-out accuracy, as a worker of the scheduler (on its slot's GPU,
    never in the scheduler, whose CUDA cache would hold memory on a GPU a run uses)."""
    import argparse

    parser = argparse.ArgumentParser(prog="trl_study")
    parser.add_argument("what", choices=["base"])
    for name in ("--config", "--lock", "--out"):
        parser.add_argument(name, required=True)
    args = parser.parse_args(argv)
    record = trl_backend.base_heldout(args.lock, args.config, args.out)
    print(f"untrained base: held-out greedy {record['heldout']['greedy']['ALL']['success_rate']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
