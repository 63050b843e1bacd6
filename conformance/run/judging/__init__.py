"""Judging a pair: one function for every way a pair runs (:func:`judge`: a plain call, a batch's
program, a plan), over one explicit state (:class:`JudgeState`: the oracle's results, the runs left,
the waiting pairs, the bounds kept) under the run's :class:`Policy`; the configuration a pair ran in
(``configuration``) and the oracle's side (``oracle``)."""

from conformance.run.judging.configuration import effective_of, path_of
from conformance.run.judging.oracle import ORACLE_TIMEOUT, judge_version, oracle_cached, oracle_for
from conformance.run.judging.pair import Judged, Policy, declared, judge, judgement_fields
from conformance.run.judging.state import BOUNDS_KEPT, JudgeState

__all__ = ["BOUNDS_KEPT", "ORACLE_TIMEOUT", "JudgeState", "Judged", "Policy", "declared", "effective_of", "judge",
           "judge_version", "judgement_fields", "oracle_cached", "oracle_for", "path_of"]
