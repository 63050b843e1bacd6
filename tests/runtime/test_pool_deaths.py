"""Who a worker's death is charged to (conformance/isolation/workers.py ``Pool._replace``), with stand-in
workers: no process, no race."""

from __future__ import annotations

from conformance.isolation.jobs import Job
from conformance.isolation.workers import Pool


class _StandIn:
    """A busy worker as the pool sees one, for ``_replace``: killing it does nothing."""

    def __init__(self, job, ahead: bool, started: bool):
        self.job, self.next, self.ahead, self.started = job, None, ahead, started
        self.pgid, self.log = 0, None

    def kill(self):
        pass

    def output(self):
        return ""


def _pool():
    pool = Pool(1)

    class _Quiet:
        def tell(self, *args):
            pass

        def close(self):
            pass
    pool._reaper.close()
    pool._reaper = _Quiet()
    return pool


def test_a_job_sent_ahead_that_never_started_is_not_charged_with_its_workers_death():
    pool = _pool()
    try:
        job = Job("mine", "run", ("ref", b"m", {}), 10.0)
        worker = _StandIn(job, ahead=True, started=False)
        pool._busy.append(worker)
        assert list(pool._replace(worker, "crash", "worker died from signal SIGSEGV")) == []
        assert pool._queue[0] is job and pool._queued[job.binding] == 1  # it runs again, first
        # the same job dying again before it starts is charged: no endless retry
        pool._queue.pop(0)
        pool._queued[job.binding] -= 1
        again = _StandIn(job, ahead=True, started=False)
        pool._busy.append(again)
        [outcome] = pool._replace(again, "crash", "worker died from signal SIGSEGV")
        assert outcome.key == "mine" and outcome.status == "crash"
    finally:
        pool.close()


def test_a_job_that_started_or_was_sent_to_an_idle_worker_is_charged():
    pool = _pool()
    try:
        for ahead, started in ((True, True), (False, False), (False, True)):
            job = Job(("k", ahead, started), "run", ("ref", b"m", {}), 10.0)
            worker = _StandIn(job, ahead=ahead, started=started)
            pool._busy.append(worker)
            [outcome] = pool._replace(worker, "crash", "worker died from signal SIGSEGV")
            assert outcome.key == job.key and outcome.status == "crash"
        assert not pool._queue
    finally:
        pool.close()
