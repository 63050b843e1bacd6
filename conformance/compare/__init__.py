"""Error metrics (abs, rel, ULP in the output dtype), tolerances with their source, verdicts."""

from conformance.compare.tolerance import (
    DEFAULT_POLICY,
    Tolerance,
    for_case,
    named_policy,
)
from conformance.compare.verdict import Judgement, judge_computed_in, judge_outputs
from conformance.compare.verdicts import FAILING, SEVERITY, VERDICTS, Verdict, severity

__all__ = ["DEFAULT_POLICY", "FAILING", "SEVERITY", "VERDICTS", "Judgement", "Tolerance", "Verdict", "for_case",
           "severity",
           "judge_computed_in", "judge_outputs", "named_policy"]
