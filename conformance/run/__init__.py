"""Orchestration: cases × targets, worker processes, timeouts, the results store."""

from conformance.run.engine import Engine, Options, RunSummary, repro
from conformance.run.results import MemoryStore, ResultStore, read_results
from conformance.run.select import SelectError, compile_expression
from conformance.run.workers import Job, Outcome, Pool

__all__ = ["Engine", "Job", "MemoryStore", "Options", "Outcome", "Pool", "ResultStore", "RunSummary", "SelectError",
           "compile_expression", "read_results", "repro"]
