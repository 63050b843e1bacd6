"""The judgement's state over one run: the oracle's results, how many runs of each still wait to be
judged, the pairs waiting for a result, and the narrower-precision bounds kept for reuse. One object,
handed explicitly to what judges (the engine, its batches and its plans)."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

#: the narrower-precision bounds kept for reuse across a case's targets
BOUNDS_KEPT = 256


@dataclass
class JudgeState:
    #: (case index, semantics profile), or a plan's other input's key -> the oracle's Outcome
    oracle: dict = field(default_factory=dict)
    #: runs still to be judged per oracle key: a result is dropped after its last one (production shapes
    #: make each result hundreds of MB: docs/production.md)
    runs_left: Counter = field(default_factory=Counter)
    #: oracle key -> [(target, program, outcome)] of plain pairs that ran before their result came
    waiting: defaultdict = field(default_factory=lambda: defaultdict(list))
    #: (case index, profile, compute, accumulation, rounding, activations, choices) -> oracles.computed_in
    bounds: dict[tuple[Any, ...], Any] = field(default_factory=dict)

    def release(self, okey) -> None:
        """One run of ``okey`` judged: the oracle result goes with the last one."""
        self.runs_left[okey] -= 1
        if self.runs_left[okey] <= 0:
            self.runs_left.pop(okey, None)
            self.oracle.pop(okey, None)

    def bound(self, key, compute):
        """The narrower-precision bound kept under ``key``, computed by ``compute()`` when it is not."""
        if key not in self.bounds:
            if len(self.bounds) >= BOUNDS_KEPT:
                self.bounds.clear()
            self.bounds[key] = compute()
        return self.bounds[key]
