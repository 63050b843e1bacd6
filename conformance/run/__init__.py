"""Orchestration: cases × targets, the engine, the ablation, the run session.

The worker processes and their pool are :mod:`conformance.isolation`, the record and results.jsonl
:mod:`conformance.results`; this package names the few of theirs a caller of the engine needs.
The names below are imported when first used (PEP 562), not with the package: a worker process, a
discovery process and the reaper import ``conformance.isolation.serve`` or
``conformance.isolation.processes`` only, and must not pay for the engine, the specs and the oracle
they never use (docs/startup.md).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from conformance.isolation.jobs import Job, Outcome
    from conformance.isolation.workers import Pool
    from conformance.results import MemoryStore, ResultStore, read_results
    from conformance.run.engine import Engine, Options, RunSummary, repro
    from conformance.run.select import SelectError, compile_expression

#: each public name and the module that defines it
_WHERE = {
    "Engine": "conformance.run.engine", "Options": "conformance.run.engine", "RunSummary": "conformance.run.engine",
    "repro": "conformance.run.engine",
    "MemoryStore": "conformance.results", "ResultStore": "conformance.results", "read_results": "conformance.results",
    "SelectError": "conformance.run.select", "compile_expression": "conformance.run.select",
    "Job": "conformance.isolation.jobs", "Outcome": "conformance.isolation.jobs",
    "Pool": "conformance.isolation.workers",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = ["Engine", "Job", "MemoryStore", "Options", "Outcome", "Pool", "ResultStore", "RunSummary", "SelectError",
           "compile_expression", "read_results", "repro"]
