"""The smallest failing case of a cluster, as the fuzzer's reduction finds it.

The cluster's smallest case (fewest tensor elements, then fewest features) is reduced on the
report's target with :func:`conformance.fuzz.reduce.reduce_case`: each removal of the feature table
is kept when the case still gives the cluster's verdict there (a fail against the same bound: the
precision it computes in, where the cluster is judged so) and still has every feature the cluster's
cause names, so the reduction cannot wander off to another divergence. A fuzzer's finding is
already reduced so, and is taken as it is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from conformance.results import Record

import dataclasses
from collections.abc import Callable

import numpy as np

from conformance.case.features import FEATURES
from conformance.case.features import features as features_of
from conformance.fuzz.reduce import reduce_case

#: candidates one reduction may run
BUDGET = 32


def size(case) -> tuple[int, int]:
    """(tensor elements, features): what "smallest" orders by."""
    return (sum(int(np.asarray(a).size) for a in case.tensors.values()), len(features_of(case)))


def keeps(cause_features: list[str]) -> Callable:
    """Whether a candidate still has the features a cluster's cause names (by feature table name)."""
    table = {f.name: f for f in FEATURES if f.present is not None}
    needed = [table[name] for name in cause_features if name in table]

    def check(case) -> bool:
        return all(f.present(case) for f in needed if f.present is not None)
    return check


def same_failure(record: Record, verdict: str, against_declared: bool) -> bool:
    """The candidate's record shows the cluster's failure: its verdict, and where the cluster is
    judged against the precision its pairs compute in, a fail against that precision too."""
    if record.verdict != verdict:
        return False
    if against_declared:
        return (record.declared or {}).get("verdict") == "fail"
    return True


def smallest_case(cases: list, cause_features: list[str], run: Callable, verdict: str, against_declared: bool = False,
                  budget: int = BUDGET):
    """(the reduced case, the removals kept, the records of the reduced case's run). ``run(case)``
    runs a candidate on the report's target and returns its record."""
    start = min(cases, key=size)
    keep = keeps(cause_features)
    seen: dict[str, Record] = {}

    def rename(case):
        return dataclasses.replace(case, id=f"{start.id}~smallest-{case.digest[:8]}")

    def still_fails(candidate) -> bool:
        if not keep(candidate):
            return False
        seen[candidate.digest] = run(candidate)
        return same_failure(seen[candidate.digest], verdict, against_declared)
    reduced = reduce_case(start, still_fails, rename, budget=budget)
    return reduced.case, reduced.removed, seen.get(reduced.case.digest)
