"""The examiner: runs one drawn case on the campaign's targets through the Engine (the corpus's
oracle and tolerance, one warm worker Pool for the whole campaign) and returns its records."""

from __future__ import annotations

import dataclasses
import shutil
import time
from collections import OrderedDict
from pathlib import Path

import numpy as np

from conformance.results import Record, records_of
from conformance.run import Engine, MemoryStore, Options, Pool
from conformance.runtimes.forms import asked, compose


def execution(case) -> str:
    """The execution form a drawn case runs in besides the plain one (conformance/fuzz/strategies.py);
    ``default`` for a case not drawn with one (the corpus, a regression file)."""
    return str((case.params or {}).get("execution", "default"))


def converter(case) -> str:
    """The converter a drawn case runs through besides the plain targets (conformance/fuzz/strategies.py);
    ``none`` for a case not drawn with one."""
    return str((case.params or {}).get("converter", "none"))


def runs_in(target, case) -> bool:
    """Whether ``target`` examines ``case``: a plain target always, a target in an execution form only
    when the case was drawn with that form, a converter target only when drawn with its converter."""
    if getattr(target, "converter", "") and target.family != converter(case):
        return False
    form = asked(target.config)
    return not form or compose("default", form) == execution(case)


def _key(case) -> tuple:
    return (case.digest, execution(case), converter(case))


class Examiner:
    """Runs one case on every target through the Engine, on a warm pool; remembers recent results
    by case content, so a replay (shrinking, the final report) sees the same verdicts."""

    def __init__(self, targets, pool: Pool, workdir: Path, timeout: float, prec: int = 128, gate=None,
                 tolerance: str | None = None, memory: int = 4096, deadline: float | None = None):
        self.targets = list(targets)
        self.pool = pool
        self.workdir = Path(workdir)
        self.options = Options(out_dir=self.workdir, jobs=pool.jobs, timeout=timeout, prec=prec,
                               write_programs=False, tolerance=tolerance)
        self.gate = gate
        self.memory = memory
        self.deadline = deadline   # no runtime call may outlast it: its timeout shrinks to what is left
        self.cache: OrderedDict = OrderedDict()
        self.runs = 0
        self.busy_s = 0.0

    def seen(self, case) -> bool:
        return _key(case) in self.cache

    def examine(self, case, targets=None) -> list[Record]:
        """The records of ``case`` on every plain target and on the targets of the execution form it was
        drawn with (or on ``targets``, a subset: not remembered)."""
        key = _key(case)
        subset = targets is not None
        if not subset and key in self.cache:
            self.cache.move_to_end(key)
            return self.cache[key]
        store = MemoryStore(self.workdir)
        start = time.perf_counter()
        options = self.options
        if self.deadline is not None:
            left = max(1.0, self.deadline - time.monotonic())
            options = dataclasses.replace(options, timeout=min(options.timeout, left))
        with np.errstate(all="ignore"):   # judging a wild output is not a warning, it is a verdict
            chosen = targets if subset else [t for t in self.targets if runs_in(t, case)]
            Engine([case], chosen, store, options, gate=self.gate).run(self.pool)
        self.busy_s += time.perf_counter() - start
        self.runs += 1
        shutil.rmtree(self.workdir / "programs", ignore_errors=True)
        records = records_of(store.records)   # the engine's lines, as Records
        if subset:
            return records
        self.cache[key] = records
        if len(self.cache) > self.memory:
            self.cache.popitem(last=False)
        return records
