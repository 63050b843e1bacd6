"""The worker's side of a Dask cluster: ``conformance worker`` (docs/architecture.md, "Past one machine").

A *conformance worker* is a plain Dask worker started with :class:`ServicePlugin`. The targets
present on its machine are found and measured there (discovery and the arithmetic probe run where
the target lives) before it joins, and it advertises each as a Dask worker resource
(:func:`conformance.cluster.client.resources_for`), so the scheduler sends a pair only to a worker
that has its target. Every Job it is sent runs in the suite's own worker-process isolation: a
:class:`Service` of ``jobs`` runner threads, each owning a local :class:`~conformance.isolation.workers.Pool`,
so a runtime that crashes or hangs costs one verdict, never the Dask worker. The Job travels
whole (its kind and payload are the Pool's business, not this module's) and its Outcome comes
back, stamped with the machine that produced it (``effective.host``/``effective.worker``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import queue
import signal
import socket
import threading

from conformance.isolation.jobs import Job, Outcome
from conformance.isolation.processes import ORACLE, default_memory_limit
from conformance.isolation.workers import Pool

#: the name the plugin is registered under on a Dask worker
PLUGIN = "conformance"


class Service:
    """``jobs`` runner threads, each with its own local Pool (one job at a time each). The threads
    are the service's own, long-lived, so the worker processes they start (which die with the
    thread that started them, PR_SET_PDEATHSIG) outlive any Dask executor thread."""

    def __init__(self, jobs: int, memory_limit: int | None = None):
        self.jobs = max(1, jobs)
        self.memory_limit = default_memory_limit(self.jobs) if memory_limit is None else memory_limit
        self._inbox: queue.Queue = queue.Queue()
        self._threads = [threading.Thread(target=self._loop, name=f"conformance-runner-{i}", daemon=True)
                         for i in range(self.jobs)]
        for t in self._threads:
            t.start()

    def run(self, job: Job) -> Outcome:
        """The job's Outcome, from the first free runner (blocks until it is done)."""
        done: concurrent.futures.Future = concurrent.futures.Future()
        self._inbox.put((job, done))
        return done.result()

    def _loop(self) -> None:
        with Pool(1, memory_limit=self.memory_limit) as pool:
            while True:
                item = self._inbox.get()
                if item is None:
                    return
                job, done = item
                try:
                    done.set_result(list(pool.outcomes([job]))[-1])
                except BaseException as exc:  # noqa: BLE001 - the caller's to see
                    done.set_exception(exc)

    def close(self) -> None:
        for _ in self._threads:
            self._inbox.put(None)
        for t in self._threads:
            t.join(timeout=10)


try:
    from distributed.diagnostics.plugin import WorkerPlugin as _WorkerPlugin
except ImportError:  # the cluster extra is absent: the class below is then never registered
    _WorkerPlugin = object  # type: ignore[assignment,misc]


class ServicePlugin(_WorkerPlugin):  # type: ignore[valid-type,misc]
    """What makes a Dask worker a conformance worker: its targets (found and measured on its
    machine), and the :class:`Service` that runs the jobs sent to it."""

    name = PLUGIN

    def __init__(self, targets: list, skipped: list, jobs: int, memory_limit: int | None = None):
        self.targets = list(targets)
        self.skipped = list(skipped)
        self.jobs = max(1, jobs)
        self.memory_limit = memory_limit
        self.service: Service | None = None
        self.worker_name = ""
        self.address = ""
        self.hostname = socket.gethostname()

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k != "service"} | {"service": None}

    def setup(self, worker) -> None:
        self.hostname = socket.gethostname()
        self.address = str(worker.address)
        self.worker_name = str(worker.name if worker.name is not None else worker.address)
        self.service = Service(self.jobs, self.memory_limit)

    def teardown(self, worker) -> None:
        if self.service is not None:
            self.service.close()
            self.service = None

    def info(self) -> dict:
        from conformance.runtimes.effective import host
        service = self.service
        return {"name": self.worker_name, "address": self.address, "host": self.hostname, "pid": os.getpid(),
                "facts": host(), "jobs": self.jobs, "memory_limit": service.memory_limit if service else None,
                "targets": self.targets, "skipped": self.skipped}


def _plugin() -> ServicePlugin:
    from distributed import get_worker
    plugin = get_worker().plugins.get(PLUGIN)
    if not isinstance(plugin, ServicePlugin) or plugin.service is None:
        raise RuntimeError("this Dask worker was not started by `conformance worker` (no conformance service)")
    return plugin


# -- what the client runs on the workers -------------------------------------------------------------

def run_job(job: Job) -> Outcome:
    """A Dask task: one Job run in this worker's Service; its Outcome, with the machine that ran
    a runtime's job in its ``effective`` (the record's ``effective.host`` and ``.worker``)."""
    plugin = _plugin()
    assert plugin.service is not None  # _plugin checked it
    outcome = plugin.service.run(job)
    if job.binding != ORACLE:
        outcome.effective = dict(outcome.effective or {}, host=plugin.hostname, worker=plugin.worker_name)
    return outcome


def worker_info(dask_worker=None) -> dict | None:
    """``client.run`` on every worker: a conformance worker's name, host, slots and targets; None
    for a Dask worker without the plugin."""
    plugin = dask_worker.plugins.get(PLUGIN) if dask_worker is not None else None
    return plugin.info() if isinstance(plugin, ServicePlugin) else None


# -- `conformance worker` ------------------------------------------------------------------------------

def serve(scheduler: str, plugin: ServicePlugin, resources: dict, name: str | None = None,
          host: str | None = None) -> None:
    """A Dask worker joined to ``scheduler`` with ``plugin`` and ``resources``, until the
    scheduler goes or SIGTERM/SIGINT ends it (its worker processes with it)."""
    from distributed import Worker

    async def main() -> None:
        worker = Worker(scheduler, nthreads=plugin.jobs, resources=resources, plugins=(plugin,), name=name,
                        memory_limit=0, dashboard=False, host=host)
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            try:
                loop.add_signal_handler(sig, lambda: asyncio.ensure_future(worker.close()))
            except (NotImplementedError, RuntimeError):  # not the main thread, or Windows
                pass
        await worker
        await worker.finished()

    asyncio.run(main())

