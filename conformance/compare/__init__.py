"""Error metrics (abs, rel, ULP in the output dtype), tolerances with their source, verdicts."""

from conformance.compare.tolerance import Tolerance, for_case
from conformance.compare.verdict import FAILING, VERDICTS, Judgement, judge_outputs

__all__ = ["FAILING", "VERDICTS", "Judgement", "Tolerance", "for_case", "judge_outputs"]
