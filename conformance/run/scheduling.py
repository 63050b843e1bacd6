"""What the engine lends the pairs it schedules apart, its batches (conformance/run/batches.py) and its
plans (conformance/run/planned.py): the run's cases and call timeout, its program files, and the steps
they hand pairs back through. An explicit list, so that neither reaches into the engine."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from conformance.run.programs import Programs


@dataclass
class Scheduling:
    cases: list
    timeout: float                  # seconds one runtime call may take
    programs: Programs              # the run's program folders and artefacts
    #: the oracle's job for (key, case, profile), or None where its disk cache holds the result
    oracle_job: Callable[..., Any]
    #: a pair's own job: (case index, program, target[, repeat]) -> Job
    run_job: Callable[..., Any]
    #: a judged pair: (outcome, case index, target, program, Judged) -> recorded, or run again alone first
    settle: Callable[..., None]
    #: a pair recorded without a judgement (a plan that cannot be built): (case, target, program, verdict, message)
    record: Callable[..., None]
    #: seconds a runtime call took, charged to its target's runtime
    spent: Callable[..., None]
    #: an outcome handed back to the engine as though it came from the pool (a batch's pair)
    receive: Callable[..., None]
    #: a job queued on the run's pool while its outcomes are being taken
    submit: Callable[..., None]
