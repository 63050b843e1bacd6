"""Feature-level reduction of a shrunk finding: take its features away one at a time, keeping each
removal after which the finding persists, so the case written carries only the features whose
removal makes the failure go away (its *cause*).

Hypothesis shrinks draws, not meanings: a shrunk case can keep a clip, a bias or an unused
activation name that its failure does not need, because no shorter draw sequence drops it while
still failing. The removals are the feature table's (:data:`conformance.case.features.REDUCTIONS`): the
ablation's plus a few that reach the defaults the strategies cannot shrink to in one step (a bidirectional
case to its reverse pass, full sequence lengths and zero peepholes to absent inputs). Each removal
is checked by running the reduced case on the finding's targets only.
"""

from __future__ import annotations

import dataclasses

from conformance.case.features import REDUCTIONS
from conformance.case.model import Case


@dataclasses.dataclass
class Reduction:
    case: Case                 # the reduced case (the input case when nothing could be removed)
    removed: list[str]         # names of the removals kept
    tried: int                 # cases run


def reduce_case(case, still_fails, rename, budget: int = 32, out_of_time=lambda: False) -> Reduction:
    """Remove features greedily while ``still_fails(candidate)`` holds; ``rename`` gives a reduced
    case its id. At most ``budget`` candidates are run, and none once ``out_of_time()``: what is
    left unreduced stays."""
    current, removed, tried = case, [], 0
    progress = True
    while progress and tried < budget:
        progress = False
        for reduction in REDUCTIONS:
            if tried >= budget or out_of_time():
                progress = False
                break
            try:
                if not reduction.present(current):
                    continue
                candidate = rename(reduction.remove(current))
            except Exception:  # noqa: BLE001 - a removal that does not apply to this case is not tried
                continue
            if candidate.digest == current.digest:
                continue
            tried += 1
            if still_fails(candidate):
                current, progress = candidate, True
                removed.append(reduction.name)
    return Reduction(current, removed, tried)
