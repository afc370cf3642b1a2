"""Pipeline stages side by side: a few worker processes, each stage started as soon as the
stages it reads are finished (`run --workers N`).

Why processes: on a small model one torch process keeps about one core busy even with two
threads, and two threads of one process need both cores to be free at once (another job on
the machine stalls both). Two one-thread processes each keep their own core.

What decides the numbers is each stage's own thread count (the profile's `threads`), never
the number of workers: a stage computes the same bits alone or beside another one. A stage
asking for more threads than one (the warm start) runs alone.

Order: of the ready stages, the one heading the longest remaining chain of work (by the
stages' rough costs) starts first, so the long GRPO chain is not left for last; a stage
that runs alone starts before any other ready one.

Stops: the workers sit in their own process group, so a terminal's Ctrl-C reaches the
parent only, which passes the signal on once: each running stage finishes its step, saves
and stops, as it would alone. A second signal is passed on too (stop at once). A worker
whose parent died (kill -9) exits within a second instead of running on unattended.
"""

from __future__ import annotations

import concurrent.futures as futures
import multiprocessing
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass

from verifiable_grpo.core import interrupts, runlock


class WorkerDied(RuntimeError):
    """A worker process ended without finishing its stage (kill -9, out of memory)."""


def _worker_start(parent: int) -> None:
    os.environ["TQDM_DISABLE"] = "1"  # one progress bar: the parent's
    os.setpgrp()
    runlock.exit_with_parent(parent)


def remaining_work(
    order: list[str], needs: dict[str, set[str]], cost: dict[str, float]
) -> dict[str, float]:
    """For each stage: its cost plus the costliest chain of stages that wait on it."""
    after: dict[str, list[str]] = {name: [] for name in order}
    for name in order:
        for need in needs[name]:
            if need in after:
                after[need].append(name)
    rank: dict[str, float] = {}
    for name in reversed(order):  # a stage only waits on earlier ones
        rank[name] = cost[name] + max((rank[n] for n in after[name]), default=0.0)
    return rank


def _signal_workers(pool, number: int) -> None:
    for process in list(getattr(pool, "_processes", {}).values()):
        try:
            os.kill(process.pid, number)
        except ProcessLookupError:
            pass


def _collect(
    ended, running: dict, end, done: set[str], broken: list[str], errors: list[BaseException]
) -> None:
    """Write the marker of each stage that ended well; note a dead worker or an error."""
    for future in ended:
        name, token = running.pop(future)
        try:
            seconds = future.result()
            end(name, token, seconds)
            done.add(name)
        except futures.process.BrokenProcessPool:
            broken.append(name)
        except BaseException as err:  # a stage's error or stop ends the run
            errors.append(err)


def _raise_what_ended_the_run(broken: list[str], errors: list[BaseException]) -> None:
    """A dead worker first, then a stage's failure, then a requested stop."""
    if broken:
        raise WorkerDied(
            f"a worker process died (killed, or out of memory) while stages "
            f"{', '.join(sorted(broken))} ran; the pool stopped them all. Run the same command "
            "again: each unfinished stage continues from its crash checkpoint"
        )
    if errors:
        stops = [e for e in errors if isinstance(e, interrupts.StopRequested)]
        failures = [e for e in errors if not isinstance(e, interrupts.StopRequested)]
        raise (failures or stops)[0]


def _check_needs_exist(order: list[str], needs: dict[str, set[str]], pending: list[str]) -> None:
    unknown = {n: needs[n] - set(order) for n in pending if needs[n] - set(order)}
    if unknown:
        raise ValueError(f"stages need stages that do not exist: {unknown}")


@dataclass(frozen=True)
class StageGraph:
    """The stages to run: their `order`, the stages each one reads (`needs`), each one's
    torch threads (None: every core) and rough `cost` (which chain to start first)."""

    order: list[str]
    needs: dict[str, set[str]]
    threads: dict[str, int | None]
    cost: dict[str, float]


@dataclass(frozen=True)
class StageHooks:
    """What the caller does around each stage: start(name) -> a token, or None when the
    stage turned out finished already (its marker written); task(name) -> (function, args)
    run in a worker, returning its seconds; end(name, token, seconds) writes the marker;
    progress(running names, finished count) after each round of starts."""

    start: Callable[[str], object]
    end: Callable[[str, object, float], None]
    task: Callable[[str], tuple]
    progress: Callable[[list[str], int], None] | None = None


@dataclass(frozen=True)
class _Board:
    """The run's bookkeeping, updated in place: stages not yet started, stages done, and
    the futures in flight with their (name, token)."""

    pending: list[str]
    done: set[str]
    running: dict


def _start_ready(
    ready: list[str], pool, board: _Board, width: Callable[[str], int], workers: int, hooks
) -> None:
    """Start the ready stages (in the order given) that fit beside the running ones. A
    stage wider than one thread goes first and alone: while it waits for the workers to
    drain, no narrow stage jumps ahead of it."""
    running = board.running
    busy = sum(width(name) for name, _ in running.values())
    for name in ready:
        if running and (busy + width(name) > workers or len(running) >= workers):
            if width(name) > 1:
                break
            continue
        board.pending.remove(name)
        token = hooks.start(name)
        if token is None:  # had finished: adopted
            board.done.add(name)
            continue
        function, args = hooks.task(name)
        running[pool.submit(function, *args)] = (name, token)
        busy += width(name)


def run_side_by_side(
    graph: StageGraph, finished: set[str], workers: int, hooks: StageHooks
) -> None:
    """Run every stage of `graph.order` not in `finished`, at most `workers` at a time.

    The first error (or stop) ends the run once the stages in flight have ended; their
    markers are written.
    """
    order, needs, threads = graph.order, graph.needs, graph.threads
    cost, end, progress = graph.cost, hooks.end, hooks.progress
    rank = remaining_work(order, needs, cost)
    pending = [n for n in order if n not in finished]
    done = set(finished)
    _check_needs_exist(order, needs, pending)
    cores = os.cpu_count() or 1

    def width(name):
        return threads[name] or cores  # None: torch's default, every core

    pool = futures.ProcessPoolExecutor(
        max_workers=workers,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_worker_start,
        initargs=(os.getpid(),),
    )
    running: dict[futures.Future, tuple[str, object]] = {}
    board = _Board(pending, done, running)
    errors: list[BaseException] = []
    forwarded = None
    broken: list[str] = []  # stages whose worker died (the pool then stops them all)
    try:
        while True:
            if not (interrupts.requested() or errors or broken):
                ready = sorted(
                    (n for n in pending if needs[n] <= done),
                    key=lambda n: (width(n) <= 1, -rank[n], order.index(n)),
                )
                _start_ready(ready, pool, board, width, workers, hooks)
                if progress is not None:
                    progress(sorted(n for n, _ in running.values()), len(done))
            if not running:
                if pending and not (interrupts.requested() or errors or broken):
                    if any(needs[n] <= done for n in pending):
                        continue  # an adopted stage made others ready
                    raise RuntimeError(f"stages that can never start: {pending}")
                break
            ended, _ = futures.wait(running, timeout=0.5, return_when=futures.FIRST_COMPLETED)
            if interrupts.requested() and forwarded is None:
                forwarded = getattr(signal, interrupts.requested())
                _signal_workers(pool, forwarded)
            _collect(ended, running, end, done, broken, errors)
    except KeyboardInterrupt:
        _signal_workers(pool, signal.SIGINT)  # second signal: the workers stop at once
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    _raise_what_ended_the_run(broken, errors)
    interrupts.check("between stages")
