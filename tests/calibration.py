"""Time budgets for tests, derived from how fast this machine is at the moment of the test.

No test may race the clock (docs/architecture.md, "Rules that keep it so"). A test that must give a runtime
a timeout (so that a deliberate hang ends) gives the ones that answer a budget scaled by a
calibration measured just before: :func:`slowdown` times a fixed reference workload (numpy and
pure Python, the mix a worker's call does) and compares it with its time on an idle 2-core
machine, so a loaded machine, whose reference is 3 times slower, gives 3 times the budget.
"""

from __future__ import annotations

import statistics
import time

import numpy as np

#: the reference workload's median time on an idle machine (2 cores, 2026): the calibration's unit
REFERENCE_S = 0.015


def _reference() -> float:
    start = time.perf_counter()
    a = np.linspace(-1.0, 1.0, 64 * 64, dtype=np.float32).reshape(64, 64)
    for _ in range(100):
        a = np.tanh(a @ a.T * 0.01)
    total = 0
    for i in range(300_000):
        total += i % 7
    return time.perf_counter() - start


def slowdown(samples: int = 5) -> float:
    """How many times slower than the idle reference this machine runs now (at least 1): the
    median of ``samples`` runs of the reference workload."""
    return max(1.0, statistics.median(_reference() for _ in range(samples)) / REFERENCE_S)


def budget(idle_seconds: float) -> float:
    """A time budget that is ``idle_seconds`` on an idle machine, scaled by :func:`slowdown`."""
    return idle_seconds * slowdown()


def budget_arg(idle_seconds: float) -> str:
    """:func:`budget` as a command-line value (``--timeout``), rounded up to a whole second."""
    return str(int(budget(idle_seconds)) + 1)
