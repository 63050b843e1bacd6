"""The client's side of a Dask cluster: ``conformance run/fuzz --cluster ADDRESS|local``.

The cluster's workers are ``conformance worker`` processes (:mod:`conformance.cluster.worker`),
each advertising the targets of its machine as Dask resources, named here, in one place
(:func:`resource_of`). :class:`ClusterPool` has the local :class:`~conformance.isolation.workers.Pool`'s
interface (``outcomes(source)``, ``submit(job)`` during the iteration, ``jobs``, ``close()``), so
the Engine, the ablation and the fuzzer's examiner drive a cluster unchanged, and this process stays
the only writer of results.jsonl. Each Job travels whole to a worker that has its target (its
binding's resource) and runs there in that machine's worker processes; its Outcome comes back.

A worker that dies loses only its in-flight jobs: the scheduler queues them again once
(``allowed-failures`` = 1), and a job that loses its worker a second time is a ``crash``. A job
whose target no worker holds any more waits :data:`WAIT_S` for one to join, then is a ``crash``.
Scheduling is Dask's; nothing here decides which worker runs what.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import logging
import queue
import re
import time
import uuid
from dataclasses import dataclass, field

import click

from conformance.isolation.jobs import Job, Outcome
from conformance.isolation.processes import ORACLE
from conformance.runtimes.base import RuntimeRef

#: the resource every conformance worker holds (one unit per slot): the oracle's jobs need it
ORACLE_RESOURCE = "conformance-oracle"
#: times the scheduler may lose the worker of a job before the job is a crash (1: queued again once)
ALLOWED_FAILURES = 1
#: seconds a job may wait for a worker holding its target, when none is left, before it is a crash
WAIT_S = 120.0
#: how often the waiting jobs' targets are checked against the workers present
CHECK_S = 5.0


class ClusterError(click.ClickException):
    """The cluster cannot be reached or was lost; exit status 2, with the reason."""

    exit_code = 2


def resource_of(target) -> str:
    """The Dask resource name of a target's runtime configuration (its id without the spec:
    ``onnxruntime-1.32.0/CPU``), the one place it is derived: letters, digits, ``_.-`` and a
    digest of the id, so every id (``precision=default→bf16`` too) names one valid resource."""
    label = target.name.without_spec
    readable = re.sub(r"[^A-Za-z0-9_.-]+", "_", label).strip("_.")[:80]
    return f"rt-{readable}-{hashlib.sha1(label.encode()).hexdigest()[:8]}"


def resources_for(targets, slots: int) -> dict[str, float]:
    """The resources a worker with ``slots`` job slots advertises for ``targets``."""
    out = {resource_of(t): float(slots) for t in targets}
    out[ORACLE_RESOURCE] = float(slots)
    return out


@dataclass(frozen=True)
class ClusterRef(RuntimeRef):
    """A RuntimeRef that also names the resource of its target's runtime configuration: two
    machines with the same adapter but another runtime version (or another measured precision)
    are two bindings, each sent only to the workers that have it. It builds like a RuntimeRef."""

    resource: str = ""


def clustered(target):
    """``target`` as the client drives it: its ref names its resource."""
    ref = target.ref
    return dataclasses.replace(target, ref=ClusterRef(ref.path, ref.kwargs, ref.cwd, resource=resource_of(target)))


# -- the pool ------------------------------------------------------------------------------------------

@dataclass
class ClusterPool:
    """The Pool interface over a Dask client: jobs go to the workers whose resources match."""

    client: object
    jobs: int = 1                              # the cluster's job slots (the workers' together)
    memory_limit: int | None = None            # a worker process's limit, as the workers report it
    lookahead: int = 0
    wait_s: float = WAIT_S
    _queue: list = field(default_factory=list)

    def __post_init__(self):
        self.lookahead = self.lookahead or 4 * self.jobs + 64
        self._flight: dict = {}                # dask key -> (future, job)
        self._done: queue.Queue = queue.Queue()
        self._tokens = itertools.count()
        self._run = uuid.uuid4().hex[:8]
        self._missing: dict[str, float] = {}   # resource -> since when no worker holds it

    def submit(self, job: Job) -> None:
        """Queue a job; may be called while :meth:`outcomes` is iterated (it is run before it ends)."""
        self._queue.append(job)

    def _resource(self, job: Job) -> str:
        binding = job.binding
        if binding == ORACLE:
            return ORACLE_RESOURCE
        return getattr(binding, "resource", "") or ""

    def _send(self, job: Job) -> Outcome | None:
        from conformance.cluster.worker import run_job
        resource = self._resource(job)
        if not resource:
            return Outcome(job.key, "crash", error=f"no worker of the cluster is known to have {job.binding!r}")
        token = f"{job.kind}-{self._run}-{next(self._tokens)}"
        # the job travels whole, under a token: its key (the caller's handle) stays here
        fut = self.client.submit(run_job, dataclasses.replace(job, key=token), key=token,  # type: ignore[attr-defined]
                                 resources={resource: 1}, pure=False)
        self._flight[token] = (fut, job)
        fut.add_done_callback(self._done.put)
        return None

    def outcomes(self, source=None):
        """Yield Outcomes until no job is queued, in flight or left in ``source`` (pulled ahead
        only as far as the look-ahead)."""
        source = iter(source) if source is not None else None
        while True:
            while len(self._flight) < self.lookahead and (self._queue or source is not None):
                if self._queue:
                    job = self._queue.pop(0)
                else:
                    job = next(source, None)  # type: ignore[arg-type]
                    if job is None:
                        source = None
                        continue
                refused = self._send(job)
                if refused is not None:
                    yield refused
            if not self._flight:
                if self._queue or source is not None:
                    continue
                return
            try:
                fut = self._done.get(timeout=CHECK_S)
            except queue.Empty:
                yield from self._stranded()
                continue
            if fut.key not in self._flight:
                continue
            if fut.status in ("pending", "lost"):  # its result was lost with its worker: computed again
                fut.add_done_callback(self._done.put)
                continue
            _, job = self._flight.pop(fut.key)
            yield self._outcome(fut, job)

    def _outcome(self, fut, job: Job) -> Outcome:
        from distributed import KilledWorker
        try:
            if fut.status == "finished":
                outcome = fut.result()
                outcome.key = job.key
                return outcome
            if fut.status == "cancelled":
                if getattr(self.client, "status", "running") not in ("running", "connecting"):
                    raise ClusterError(f"the connection to the cluster's scheduler was lost "
                                       f"({getattr(self.client, 'status', '?')}); what was recorded stays valid: "
                                       f"run the same command again to resume")
                return Outcome(job.key, "crash", error="the cluster cancelled the job")
            exc = fut.exception()
            if isinstance(exc, KilledWorker):
                return Outcome(job.key, "crash", error=f"the cluster lost the worker running it "
                                                       f"{ALLOWED_FAILURES + 1} times (KilledWorker)")
            return Outcome(job.key, "crash", error=f"the cluster failed the job: {type(exc).__name__}: {exc}"[:500])
        finally:
            fut.release()

    def _stranded(self):
        """Crash outcomes for the jobs whose target no worker has held for ``wait_s``."""
        info = self.client.scheduler_info(n_workers=-1)  # type: ignore[attr-defined]
        held = {name for w in info.get("workers", {}).values() for name in (w.get("resources") or {})}
        now = time.monotonic()
        wanted = {self._resource(job) for _, job in self._flight.values()}
        self._missing = {r: self._missing.get(r, now) for r in wanted if r not in held}
        expired = {r for r, since in self._missing.items() if now - since >= self.wait_s}
        for token, (fut, job) in list(self._flight.items()):
            if self._resource(job) in expired:
                del self._flight[token]
                fut.cancel()
                fut.release()
                yield Outcome(job.key, "crash", error=f"no worker of the cluster holds its target "
                                                      f"({self._resource(job)}) any more; waited {self.wait_s:g} s")

    def close(self) -> None:
        for fut, _ in self._flight.values():
            fut.cancel()
        self._flight.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# -- the cluster -----------------------------------------------------------------------------------------

@dataclass
class Cluster:
    """A connected Dask client, the conformance workers it found and their targets (one per id,
    its ref naming its resource, its configuration naming the workers that hold it)."""

    client: object
    workers: list                   # worker_info() of each conformance worker
    targets: list
    skipped: list
    address: str
    local: object = None            # the LocalCluster this process started, if any

    @property
    def slots(self) -> int:
        return sum(int(w["jobs"]) for w in self.workers) or 1

    def pool(self, wait_s: float = WAIT_S) -> ClusterPool:
        limits = [w["memory_limit"] for w in self.workers if w.get("memory_limit")]
        return ClusterPool(self.client, jobs=self.slots, memory_limit=min(limits) if limits else None, wait_s=wait_s)

    def describe(self) -> dict:
        """run.json's ``cluster``: the scheduler, and each worker's machine and targets."""
        return {"scheduler": self.address,
                "workers": [{"name": w["name"], "address": w["address"], "host": w["host"], "facts": w["facts"],
                             "jobs": w["jobs"], "targets": sorted(t.id for t in w["targets"])} for w in self.workers]}

    def close(self) -> None:
        try:
            self.client.close()  # type: ignore[attr-defined]
        finally:
            if self.local is not None:
                self.local.close()  # type: ignore[attr-defined]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def gather(workers: list) -> tuple[list, list]:
    """(targets, skipped) of the conformance workers: each target id once, as the client drives
    it (:func:`clustered`), its ``configuration.workers`` naming the machines that hold it."""
    by_id: dict[str, object] = {}
    where: dict[str, list] = {}
    skipped: dict[str, object] = {}
    for w in workers:
        for t in w["targets"]:
            by_id.setdefault(t.id, t)
            where.setdefault(t.id, []).append({"host": w["host"], "worker": w["name"]})
        for s in w["skipped"]:
            skipped.setdefault(s.runtime, s)
    present = {t.runtime for t in by_id.values()}  # type: ignore[attr-defined]
    targets = [dataclasses.replace(clustered(t), configuration=dict(t.configuration, workers=where[t.id]))  # type: ignore[attr-defined]
               for t in by_id.values()]
    return targets, [s for name, s in skipped.items() if name not in present]


def _allowed_failures(n: int):
    def apply(dask_scheduler=None):  # a closure: pickled by value, the scheduler imports nothing of ours
        dask_scheduler.allowed_failures = n
    return apply


def connect(address: str, workers: int = 1, timeout: float = 120.0, local=None) -> Cluster:
    """A Cluster on the scheduler at ``address`` once ``workers`` conformance workers have joined
    (within ``timeout`` s)."""
    from distributed import Client

    from conformance.cluster.worker import worker_info
    try:
        client = Client(address, timeout=timeout, set_as_default=False)
    except (OSError, TimeoutError) as exc:
        if local is not None:
            local.close()
        raise ClusterError(f"--cluster {address}: cannot reach the scheduler: {exc}") from exc
    try:
        client.run_on_scheduler(_allowed_failures(ALLOWED_FAILURES))
        deadline = time.monotonic() + timeout
        while True:
            found = [i for i in client.run(worker_info).values() if i]
            if len(found) >= workers or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        if not found:
            raise ClusterError(f"--cluster {address}: no conformance worker joined within {timeout:g} s "
                               f"(start them with `conformance worker --scheduler {address}`)")
        targets, skipped = gather(found)
    except BaseException:
        client.close()
        if local is not None:
            local.close()
        raise
    return Cluster(client, found, targets, skipped, address, local)


def start_local(targets: list, skipped: list, workers: int, jobs: int, memory_limit: int | None = None) -> Cluster:
    """``--cluster local``: a LocalCluster of ``workers`` conformance workers on this machine,
    each with ``jobs`` slots and the given (already found and measured) targets."""
    import dask
    from distributed import LocalCluster

    from conformance.cluster.worker import ServicePlugin
    plugin = ServicePlugin(targets, skipped, jobs, memory_limit)
    # a Nanny's worker process starts the suite's worker processes: it may not be a daemon
    with dask.config.set({"distributed.worker.daemon": False,
                          "distributed.scheduler.allowed-failures": ALLOWED_FAILURES}):
        local = LocalCluster(n_workers=workers, threads_per_worker=jobs, processes=True, host="127.0.0.1",
                             dashboard_address=":0", memory_limit=0, silence_logs=logging.ERROR,
                             resources=resources_for(targets, jobs), plugins=[plugin])
    return connect(local.scheduler_address, workers=workers, local=local)


def select(cluster: Cluster, spec_filter=(), runtimes=(), devices=(), configs=()) -> list:
    """The cluster's targets narrowed by --spec, --runtime, --device and --config, as
    :func:`conformance.selection.select_targets` narrows this machine's."""
    from conformance.selection import narrow, specs_by_format
    specs = {name for names in specs_by_format(spec_filter).values() for name in names}
    kept, warnings = narrow([t for t in cluster.targets if t.spec in specs], runtimes, devices, configs,
                            cluster.skipped)
    for w in warnings:
        click.echo(f"warning: {w}", err=True)
    return kept


def open_cluster(address: str, workers: int | None, jobs: int, memory_limit, spec_filter, plugins, runtimes,
                 devices, use_entry_points: bool, configs, measure_timeout: float | None = None,
                 measure: bool = True) -> Cluster:
    """The cluster of ``--cluster ADDRESS`` (or ``local``) with its targets selected. For ``local``,
    this machine's targets are found (and, with ``measure``, measured) here, once, and given to every
    local worker; elsewhere each worker found and measured its own."""
    if address == "local":
        from conformance.isolation.workers import Pool
        from conformance.run.probe import PROBE_TIMEOUT, measured
        from conformance.selection import select_targets
        targets, skipped, _ = select_targets(spec_filter, plugins, runtimes, devices, use_entry_points, configs)
        if measure:  # (a fuzz shard measures its targets itself)
            with Pool(jobs, memory_limit=memory_limit) as pool:
                targets = measured(targets, pool, timeout=measure_timeout or PROBE_TIMEOUT)
        cluster = start_local(targets, skipped, workers or 2, jobs, memory_limit)
    else:
        if plugins:
            raise click.UsageError("--runtime-plugin loads a plugin on this machine; on a cluster, load it on the "
                                   "workers: conformance worker --runtime-plugin MOD:ATTR")
        cluster = connect(address, workers=workers or 1)
    try:
        cluster.targets = select(cluster, spec_filter, runtimes, devices, configs)
    except BaseException:
        cluster.close()
        raise
    return cluster
