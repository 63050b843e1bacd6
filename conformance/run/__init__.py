"""Orchestration: cases × targets, worker processes, timeouts, the results store.

The names below are imported when first used (PEP 562), not with the package: a worker process, a
discovery process and the reaper import ``conformance.run.serve`` or ``conformance.run.processes``
only, and must not pay for the engine, the specs and the oracle they never use (docs/startup.md).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from conformance.run.engine import Engine, Options, RunSummary, repro
    from conformance.run.results import MemoryStore, ResultStore, read_results
    from conformance.run.select import SelectError, compile_expression
    from conformance.run.workers import Job, Outcome, Pool

#: each public name and the module that defines it
_WHERE = {
    "Engine": "engine", "Options": "engine", "RunSummary": "engine", "repro": "engine",
    "MemoryStore": "results", "ResultStore": "results", "read_results": "results",
    "SelectError": "select", "compile_expression": "select",
    "Job": "workers", "Outcome": "workers", "Pool": "workers",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = ["Engine", "Job", "MemoryStore", "Options", "Outcome", "Pool", "ResultStore", "RunSummary", "SelectError",
           "compile_expression", "read_results", "repro"]
