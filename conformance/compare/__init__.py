"""Error metrics (abs, rel, ULP in the output dtype), tolerances with their source, verdicts."""

from conformance.compare.tolerance import (
    DEFAULT_POLICY,
    Tolerance,
    for_case,
    named_policy,
)
from conformance.compare.verdict import FAILING, VERDICTS, Judgement, judge_computed_in, judge_outputs

__all__ = ["DEFAULT_POLICY", "FAILING", "VERDICTS", "Judgement", "Tolerance", "for_case",
           "judge_computed_in", "judge_outputs", "named_policy"]
