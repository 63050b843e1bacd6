"""What the shipped expectations say onnxruntime does differently (expectations/onnxruntime.yaml):
tests that use onnxruntime as a second opinion skip those cases, with the entry's reason, instead
of keeping a list of their own."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from conformance.case.features import features
from conformance.gate import Expectations
from conformance.results import Record

ORT_EXPECTATIONS = Path(__file__).parent.parent / "expectations" / "onnxruntime.yaml"


@cache
def _ort() -> Expectations:
    return Expectations.load([ORT_EXPECTATIONS])


def ort_known_divergence(case, spec: str = "onnx-14") -> str | None:
    """The reason of the expectation that covers onnxruntime failing or refusing ``case``, or None."""
    for verdict in ("fail", "rejected"):
        record = {"case": case.id, "target": f"onnxruntime-0/CPU@{spec}", "verdict": verdict,
                  "features": sorted(features(case))}
        entry = _ort().match(Record.from_dict(record))
        if entry is not None:
            return entry.reason
    return None
