"""Worker processes: each job runs in a child process, so a crash, a hang or a runaway costs one
verdict, and no runtime can touch another runtime's verdicts.

**Bindings.** Every worker is bound for its whole life to one *binding*: one runtime configuration
(a :class:`~conformance.runtimes.base.RuntimeRef`), or the oracle. A runtime's code therefore never
shares an interpreter with another runtime's code, nor with the oracle; and the comparison runs in
the main process, which imports no runtime at all (discovery runs in throwaway processes too:
:func:`conformance.isolation.processes.isolated`). A runtime that patches numpy, changes the working
directory or sets environment variables can only corrupt its own verdicts. ``jobs`` bounds how many
workers *run* at once; idle workers of other bindings stay warm while they hold less than a quarter
of the machine's memory together (and number at most ``KEEP_ALIVE``), the least recently used
retired first, so a run over many runtimes pays each runtime's import once, not at every switch.

**Sent ahead.** When every worker slot is busy, each busy worker is also sent its next job of the
same binding (a message small enough for the pipe's buffer, once the worker has read its current
one), so it starts that job the moment it answers instead of waiting for the pool to take the
answer. What a call printed travels with its answer (the worker reads its own output first), so
a job sent ahead never takes another's output; a job sent ahead to a worker that then dies or is
killed is queued again, first, and runs elsewhere, uncharged.

**Process trees.** Every worker starts its own session (``setsid``), so it leads a process group
holding whatever a runtime starts. The pool ends a worker by killing that whole group. On Linux a
worker also dies with its parent (``PR_SET_PDEATHSIG``), and a *reaper* process, in its own
session, waits on a pipe from the main process: when the main process dies by any means (even
SIGKILL) the pipe closes and the reaper kills every worker group it was told of. A process a
runtime deliberately detaches (its own ``setsid`` or a double fork) escapes the group: see
docs/isolation.md.

**Limits.** A job's timeout counts from the call, after the runtime is built (which has its own,
generous limit). A worker whose resident memory, with its descendants', passes the memory limit is
killed: the job becomes ``crash`` with "memory limit". Memory is read from ``/proc`` (Linux); where
there is none, only the timeout bounds a runaway.
"""

from __future__ import annotations

import os
import signal
import tempfile
import time
from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from multiprocessing.connection import wait
from multiprocessing.reduction import ForkingPickler

from conformance.isolation.jobs import Job, Outcome, late_verdict
from conformance.isolation.processes import (
    _CTX,
    BUILD_TIMEOUT,
    RUNTIME_KINDS,
    _kill_group,
    _Reaper,
    _total_memory,
    default_memory_limit,
    resident_bytes,
)
from conformance.isolation.serve import _serve, printed
from conformance.isolation.soundness import Canary

#: the largest job message sent ahead to a busy worker (a pipe's buffer holds it without blocking)
AHEAD_BYTES = 32 << 10
KEEP_ALIVE = 64        # the most workers (of distinct bindings) kept warm, idle ones included


IDLE_SHARE = 4         # idle workers may hold together up to 1/IDLE_SHARE of the machine's memory


POLL_S = 0.25          # how often memory is read while jobs run


class _Worker:
    def __init__(self, binding, log: str | None = None, canary: Canary | None = None):
        self.binding = binding
        self.log = log
        self.conn, child = _CTX.Pipe()
        self.proc = _CTX.Process(target=_serve, args=(child, binding, log, canary), daemon=True)
        self.proc.start()
        child.close()
        assert self.proc.pid is not None  # a started process has its pid
        self.pgid: int = self.proc.pid  # the worker leads its own group (setsid in _serve)
        self.job: Job | None = None
        self.next: Job | None = None  # sent ahead: the worker starts it as soon as it answers ``job``
        self.started = False          # the worker said it started ``job`` (so it has read it from the pipe)
        self.ahead = False            # ``job`` was sent ahead (the worker was built before it came)
        self.deadline = 0.0

    def output(self) -> str:
        """What the worker printed and has not sent with an answer (a worker that died or was
        killed mid-call), and forget it."""
        return printed(self.log)

    def send(self, job: Job) -> None:
        self.job, self.ahead = job, False
        # building a runtime (its imports) may take a while on a busy machine: it gets its own,
        # generous limit; the job's timeout starts when the worker says the call has started
        self.deadline = time.monotonic() + job.timeout + (BUILD_TIMEOUT if job.kind in RUNTIME_KINDS else 0)
        self.started = False
        self.conn.send((job.kind, job.payload))

    def send_ahead(self, job: Job) -> bool:
        """Send ``job`` while the worker is busy, so that it starts it the moment it answers its
        current one, without waiting for the pool to take that answer. Only a job whose message
        fits in the pipe's buffer is sent ahead, and only to a worker that ``takes_ahead``: the send
        must not block on a busy worker."""
        if not self.takes_ahead:
            return False
        data = ForkingPickler.dumps((job.kind, job.payload))
        if len(data) > AHEAD_BYTES:
            return False
        try:
            self.conn.send_bytes(data)
        except OSError:  # the worker died meanwhile: the pool notices it as a crash of its current job
            return False
        self.next = job
        return True

    @property
    def takes_ahead(self) -> bool:
        """Whether a job may be sent ahead: none is yet, and the worker has read its current job
        (it said it started it; only a runtime's jobs say so)."""
        return self.next is None and self.started

    def advance(self) -> None:
        """The answer to ``job`` is in: the job sent ahead, if any, is the one running now (its
        limit starts again when the worker says it has started)."""
        self.job, self.next, self.started, self.ahead = self.next, None, False, self.next is not None
        if self.job is not None:
            self.deadline = time.monotonic() + self.job.timeout + BUILD_TIMEOUT

    def kill(self) -> None:
        _kill_group(self.pgid)
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
        self.kill()  # and whatever the runtime left running in its group


@dataclass
class Pool:
    """Up to ``jobs`` workers running at once, each bound to one runtime configuration or to the
    oracle; :meth:`outcomes` yields as jobs finish. ``memory_limit``: bytes a worker (with its
    descendants) may hold (default: :func:`default_memory_limit`; 0: no limit)."""

    jobs: int = 1
    memory_limit: int | None = None
    lookahead: int = 0
    _queue: list = field(default_factory=list)
    _queued: Counter = field(default_factory=Counter)  # binding -> its jobs in _queue (no scan to learn it)
    _busy: list = field(default_factory=list)
    _idle: OrderedDict = field(default_factory=OrderedDict)  # worker -> None, least recently used first

    def __post_init__(self):
        self.jobs = max(1, self.jobs)
        if self.memory_limit is None:
            self.memory_limit = default_memory_limit(self.jobs)
        self.lookahead = self.lookahead or 64 * self.jobs + 256
        self._reaper = _Reaper()
        self._closed = False
        self._polled = 0.0
        self._logs = tempfile.TemporaryDirectory(prefix="conformance-workers-")
        self._spawned = 0
        self.sent_ahead = 0   # jobs sent to a busy worker ahead of its answer (_send_ahead)
        self._retried: dict[int, Job] = {}  # jobs sent ahead to a worker that died before starting them (held)
        self._idle_budget = (_total_memory() or 8 << 30) // IDLE_SHARE
        #: binding -> the call its probe made (conformance/isolation/soundness.py): every worker of that
        #: binding started later runs it again after a refusal, to tell whether it is still sound
        self._canaries: dict = {}
        self.retired_unsound = 0  # workers retired because a call left them unsound

    def submit(self, job: Job) -> None:
        """Queue a job; may be called while :meth:`outcomes` is being iterated (a batched pair run
        again alone), and it is then run before that iteration ends."""
        self._enqueue(job)

    def _enqueue(self, job: Job) -> None:
        self._queue.append(job)
        self._queued[job.binding] += 1

    # which job runs next, and where ---------------------------------------------------------------
    def _fill(self, source) -> object:
        """Pull from ``source`` while the look-ahead has room, starting each job at once where a
        worker is free, so that the caller's preparation of the next jobs (translation, a batch
        filling up) overlaps the workers' calls; returns the source or None when spent. It returns
        early when a busy worker has answered, so that the answer is taken (and the worker given its
        next job) at once rather than after the whole look-ahead is prepared."""
        while source is not None and len(self._queue) < self.lookahead:
            job = next(source, None)
            if job is None:
                return None
            self._enqueue(job)
            if len(self._busy) < self.jobs:
                self._start_next()
            elif wait([w.conn for w in self._busy], timeout=0):
                break
        return source

    def _pick(self):
        """(job index, idle worker or None) for the next job to start, preferring a job whose
        binding has a warm idle worker; None when nothing can start."""
        if not self._queue or len(self._busy) >= self.jobs:
            return None
        if not self._idle:   # nothing warm: the first job starts in a new worker (no scan of the queue)
            return 0, None
        idle = {}
        for w in self._idle:
            if self._queued[w.binding]:
                idle.setdefault(w.binding, w)
        if not idle:         # no warm worker has a queued job: the first job starts in a new worker
            return 0, None
        for i, job in enumerate(self._queue):
            w = idle.get(job.binding)
            if w is not None:
                return i, w
        return 0, None

    def _start_next(self) -> bool:
        picked = self._pick()
        if picked is None:
            return False
        i, worker = picked
        job = self._queue.pop(i)
        self._queued[job.binding] -= 1
        if worker is None:
            worker = self._spawn(job.binding)
        else:
            del self._idle[worker]
        self._busy.append(worker)
        try:
            worker.send(job)
        except (OSError, BrokenPipeError):
            pass  # a worker that died while idle: noticed by outcomes() as a crash of this job
        return True

    def _send_ahead(self) -> None:
        """With every worker slot taken, give each busy worker that has none its next job of the
        same binding (the first queued), so no worker waits for the pool between two calls."""
        if len(self._busy) < self.jobs or not self._queue:
            return
        for w in self._busy:
            if not w.takes_ahead or not self._queued[w.binding]:
                continue
            i = next(i for i, job in enumerate(self._queue) if job.binding == w.binding)
            if w.send_ahead(self._queue[i]):
                job = self._queue.pop(i)
                self._queued[job.binding] -= 1
                self.sent_ahead += 1

    def _spawn(self, binding) -> _Worker:
        while self._idle and (len(self._idle) + len(self._busy) >= max(self.jobs, KEEP_ALIVE)
                              or self._idle_bytes() > self._idle_budget):
            old, _ = self._idle.popitem(last=False)
            self._retire(old)
        self._spawned += 1
        w = _Worker(binding, os.path.join(self._logs.name, f"worker-{self._spawned}.log"), self._canaries.get(binding))
        self._reaper.tell("add", w.pgid)
        return w

    def _idle_bytes(self) -> int:
        """What the idle workers hold together (0 where it cannot be read)."""
        return sum(resident_bytes(w.proc.pid) or 0 for w in self._idle)

    def _retire(self, w: _Worker) -> None:
        w.stop()
        self._reaper.tell("remove", w.pgid)

    def _finish(self, w: _Worker) -> None:
        self._busy.remove(w)
        w.job = None
        self._idle[w] = None

    # the loop --------------------------------------------------------------------------------------
    def outcomes(self, source=None):
        """Yield Outcomes until no job is queued, running or left in `source` (an iterator of
        Jobs, pulled ahead only as far as the look-ahead, so the caller's preparation overlaps the
        work)."""
        source = iter(source) if source is not None else None
        while True:
            source = self._fill(source)
            while self._start_next():
                pass
            self._send_ahead()
            if not self._busy:
                if self._queue or source is not None:
                    continue
                return
            now = time.monotonic()
            wait_for = max(0.0, min(w.deadline for w in self._busy) - now)
            if self.memory_limit:
                wait_for = min(wait_for, POLL_S)
            ready = wait([w.conn for w in self._busy] + [w.proc.sentinel for w in self._busy], timeout=wait_for)
            polling = self.memory_limit and time.monotonic() - self._polled >= POLL_S
            for w in list(self._busy):
                if w.conn in ready:
                    try:
                        status, value, error, detail, elapsed, effective, describe, again, made, *said = w.conn.recv()
                    except Exception:  # noqa: BLE001 - EOF, or an answer that does not unpickle
                        yield from self._replace(w, "crash", self._crash_text(w))
                        continue
                    if status == "started":  # the runtime is built: the call's own timeout starts
                        w.deadline = time.monotonic() + w.job.timeout
                        w.started = True
                        self._send_ahead()
                        continue
                    job = w.job
                    if status == "unsound":  # the call left the worker unable to compute: retired
                        self.retired_unsound += 1
                        yield from self._replace(w, "crash", error, Outcome(job.key, "crash", None, error, detail,
                                                 elapsed, effective, describe, said[0] if said else "", unsound=True))
                        continue
                    if status == "ok" and job.kind == "probe" and job.binding not in self._canaries:
                        self._canaries[job.binding] = Canary.of(job.payload[1], job.payload[2], value)
                    if w.next is not None:
                        w.advance()
                    else:
                        self._finish(w)
                    while self._start_next():  # the next job runs while the caller handles this outcome
                        pass
                    self._send_ahead()
                    yield Outcome(job.key, status, value, error, detail, elapsed, effective, describe,
                                  said[0] if said else "", again, artefacts=made)
                elif w.proc.sentinel in ready or not w.proc.is_alive():
                    yield from self._replace(w, "crash", self._crash_text(w))
                else:
                    late = time.monotonic() >= w.deadline
                    held = resident_bytes(w.proc.pid) if self.memory_limit and (late or polling) else None
                    verdict = late_verdict(held, self.memory_limit, w.job.timeout, late)
                    if verdict is not None:
                        yield from self._replace(w, *verdict)
            if polling:
                self._polled = time.monotonic()

    def _crash_text(self, w: _Worker) -> str:
        w.proc.join(timeout=5)
        code = w.proc.exitcode
        if code is not None and code < 0:
            try:
                return f"worker died from signal {signal.Signals(-code).name}"
            except ValueError:
                return f"worker died from signal {-code}"
        return f"worker exited with status {code}"

    def _replace(self, w: _Worker, status: str, text: str, outcome: Outcome | None = None):
        """The busy worker ``w`` killed and forgotten; its job's Outcome (``status``, or ``outcome``
        where the worker answered before it was retired), yielded. A job sent ahead that the worker
        had not started when it died (it died between answering its previous job and starting this
        one: a runtime's late crash, at exit or in a destructor) is not charged: it runs again,
        first, once (``_retried``)."""
        job = w.job
        assert job is not None  # only a busy worker is replaced
        w.kill()
        self._reaper.tell("remove", w.pgid)
        self._busy.remove(w)
        if w.next is not None:  # sent ahead, never started: it runs elsewhere, first
            self._queue.insert(0, w.next)
            self._queued[w.next.binding] += 1
            w.next = None
        output = w.output()
        if w.log:
            try:
                os.unlink(w.log)
            except OSError:
                pass
        if status == "crash" and w.ahead and not w.started and id(job) not in self._retried:
            self._retried[id(job)] = job
            self._queue.insert(0, job)
            self._queued[job.binding] += 1
            return
        if outcome is not None:
            outcome.output = outcome.output or output
            yield outcome
            return
        yield Outcome(job.key, status, error=text, output=output)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for w in self._busy:
            w.kill()
        for w in self._idle:
            w.stop()
        self._busy, self._idle = [], OrderedDict()
        self._reaper.close()
        self._logs.cleanup()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
