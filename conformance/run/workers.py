"""Worker processes: each job runs in a child process, so a crash or a hang costs one verdict.

A worker imports a runtime once and serves many jobs. When a job segfaults, the worker dies: the
job becomes a ``crash`` and a fresh worker takes its place. When a job outlives its timeout, the
worker is killed: the job becomes a ``timeout``.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import time
import traceback
from collections import deque
from dataclasses import dataclass, field
from multiprocessing.connection import wait

_CTX = mp.get_context("spawn")
BUILD_TIMEOUT = 300.0  # seconds to import and construct a runtime in a fresh worker


@dataclass
class Job:
    key: object                 # caller's handle, returned with the outcome
    kind: str                   # "run" (a runtime on a program) or "call" (a function)
    payload: tuple
    timeout: float


@dataclass
class Outcome:
    key: object
    status: str                 # ok | error | crash | timeout
    value: object = None        # ok: the return value
    error: str = ""             # error: "Type: message"; crash: the signal; timeout: the limit
    detail: str = ""            # a traceback tail
    elapsed: float = 0.0        # seconds inside the worker (ok / error)
    effective: dict = field(default_factory=dict)  # run/probe: the runtime's effective() after the call
    describe: dict = field(default_factory=dict)   # probe: the runtime's describe()


def _serve(conn) -> None:
    """Worker loop: receive (kind, payload), answer (status, value, error, detail, elapsed,
    effective, describe)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    runtimes = {}
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        kind, payload = msg
        start = time.perf_counter()
        runtime = None
        try:
            if kind in ("run", "probe"):
                ref, model, feeds = payload
                runtime = runtimes.get(ref)
                if runtime is None:
                    runtime = runtimes[ref] = ref.build()
                conn.send(("started", None, "", "", 0.0, {}, {}))  # the timeout counts from here
                start = time.perf_counter()
                value = [_as_array(x) for x in runtime.run(model, feeds)]
            else:
                func, args = payload
                value = func(*args)
            elapsed = time.perf_counter() - start
            conn.send(("ok", value, "", "", elapsed, _effective(runtime), _describe(runtime, kind)))
        except Exception as exc:  # the runtime's refusal, reported as its text
            tb = traceback.format_exc(limit=6)
            conn.send(("error", None, f"{type(exc).__name__}: {exc}", tb[-2000:], time.perf_counter() - start,
                       _effective(runtime), _describe(runtime, kind)))


def _effective(runtime) -> dict:
    """The runtime's own account of the configuration its last call ran in (``effective()``, an
    optional part of the runtime contract); a method that fails says so instead."""
    method = getattr(runtime, "effective", None)
    if not callable(method):
        return {}
    try:
        return _plain(method())
    except Exception as exc:  # noqa: BLE001 - a broken report costs the report, not the verdict
        return {"error": f"effective() failed: {type(exc).__name__}: {exc}"[:300]}


def _describe(runtime, kind: str) -> dict:
    method = getattr(runtime, "describe", None)
    if kind != "probe" or not callable(method):
        return {}
    try:
        return _plain(method())
    except Exception as exc:  # noqa: BLE001
        return {"error": f"describe() failed: {type(exc).__name__}: {exc}"[:300]}


def _plain(value) -> dict:
    """A runtime's report as plain JSON-able data (str, numbers, bools, lists, dicts)."""
    if not isinstance(value, dict):
        return {"error": f"expected a dict, got {type(value).__name__}"}

    def clean(v):
        if isinstance(v, (bool, int, float)) or v is None:
            return v
        if isinstance(v, dict):
            return {str(k): clean(x) for k, x in v.items()}
        if isinstance(v, (list, tuple, set)):
            return [clean(x) for x in v]
        return str(v)[:200]
    return clean(value)


def _as_array(x):
    import numpy as np
    return np.asarray(x)


class _Worker:
    def __init__(self):
        self.conn, child = _CTX.Pipe()
        self.proc = _CTX.Process(target=_serve, args=(child,), daemon=True)
        self.proc.start()
        child.close()
        self.job: Job | None = None
        self.deadline = 0.0

    def send(self, job: Job) -> None:
        self.job = job
        # building a runtime (its imports) may take a while on a busy machine: it gets its own,
        # generous limit; the job's timeout starts when the worker says the call has started
        self.deadline = time.monotonic() + job.timeout + (BUILD_TIMEOUT if job.kind in ("run", "probe") else 0)
        self.conn.send((job.kind, job.payload))

    def kill(self) -> None:
        try:
            self.proc.kill()
        except (OSError, ValueError):
            pass
        self.proc.join(timeout=5)
        self.conn.close()

    def stop(self) -> None:
        try:
            self.conn.send(None)
        except (OSError, BrokenPipeError):
            pass
        self.proc.join(timeout=2)
        if self.proc.is_alive():
            self.kill()


@dataclass
class Pool:
    """``jobs`` worker processes fed from a FIFO queue; :meth:`outcomes` yields as jobs finish."""

    jobs: int = 1
    _queue: deque = field(default_factory=deque)
    _workers: list = field(default_factory=list)

    def __post_init__(self):
        self._workers = [_Worker() for _ in range(max(1, self.jobs))]

    def submit(self, job: Job) -> None:
        self._queue.append(job)

    def _next_job(self, source):
        if self._queue:
            return self._queue.popleft()
        if source is not None:
            return next(source, None)
        return None

    def outcomes(self, source=None):
        """Yield Outcomes until no job is queued, running or left in `source` (an iterator of
        Jobs, pulled only when a worker is idle, so the caller's preparation overlaps the work)."""
        source = iter(source) if source is not None else None
        while True:
            for w in self._workers:
                if w.job is None:
                    job = self._next_job(source)
                    if job is None:
                        source = None
                        break
                    w.send(job)
            running = [w for w in self._workers if w.job]
            if not running:
                if self._queue or source is not None:
                    continue
                return
            now = time.monotonic()
            wait_for = max(0.0, min(w.deadline for w in running) - now)
            ready = wait([w.conn for w in running] + [w.proc.sentinel for w in running], timeout=wait_for)
            for i, w in enumerate(self._workers):
                if w.job is None:
                    continue
                if w.conn in ready:
                    try:
                        status, value, error, detail, elapsed, effective, describe = w.conn.recv()
                    except (EOFError, OSError):
                        yield self._replace(i, "crash", self._crash_text(w))
                        continue
                    if status == "started":  # the runtime is built: the call's own timeout starts
                        w.deadline = time.monotonic() + w.job.timeout
                        continue
                    job, w.job = w.job, None
                    yield Outcome(job.key, status, value, error, detail, elapsed, effective, describe)
                elif w.proc.sentinel in ready or not w.proc.is_alive():
                    yield self._replace(i, "crash", self._crash_text(w))
                elif time.monotonic() >= w.deadline:
                    yield self._replace(i, "timeout", f"no answer within {w.job.timeout:g} s; worker killed")

    def _crash_text(self, w: _Worker) -> str:
        w.proc.join(timeout=5)
        code = w.proc.exitcode
        if code is not None and code < 0:
            try:
                return f"worker died from signal {signal.Signals(-code).name}"
            except ValueError:
                return f"worker died from signal {-code}"
        return f"worker exited with status {code}"

    def _replace(self, i: int, status: str, text: str) -> Outcome:
        w = self._workers[i]
        job = w.job
        w.kill()
        self._workers[i] = _Worker()
        return Outcome(job.key, status, error=text)

    def close(self) -> None:
        for w in self._workers:
            if w.job is not None:
                w.kill()
            else:
                w.stop()
        self._workers = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def cpu_count() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
