"""The derived tolerance.

This module holds the corpus tier's tests of it (the whole corpus or a run end to end); the others:
tests/unit/test_tolerance.py."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest

import oracles
from conformance.case import load_paths
from conformance.compare import for_case, judge_outputs
from conformance.specs import SPECS, NotExpressible
from tests.conftest import required_runtimes
from tests.unit.test_tolerance import INTERIM

SPEC = "onnx-14"

#: an error above this share of the output's value scale is another function, not rounding
SEMANTIC = 1e-2


# -- the tolerance itself ----------------------------------------------------------------------------


# -- the real runtimes -------------------------------------------------------------------------------

def _runtimes():
    found = {}
    try:
        from conformance.runtimes.onnxruntime import OnnxRuntime
        found["onnxruntime"] = OnnxRuntime()
    except ImportError:
        if "onnxruntime" in required_runtimes():   # tests/conftest.py: a required runtime that is missing fails
            raise
    try:
        from conformance.runtimes.openvino import OpenVINOOnnxFrontend
        # pinned: the derived bound is for arithmetic in the case's dtype, and OpenVINO's default
        # computes in bf16 on some CPUs (tests/runtime/test_effective.py judges that configuration)
        found["openvino"] = OpenVINOOnnxFrontend("CPU", "precision=pinned")
    except ImportError:
        if "openvino" in required_runtimes():
            raise
    return found


RUNTIMES = _runtimes()


@pytest.fixture(scope="module")
def corpus():
    """(case, program, oracle result) for every valid float32/float16 case onnx-14 expresses."""
    cases, _ = load_paths(["cases"])
    spec = SPECS[SPEC]
    out = []
    for case in cases:
        if not case.valid or case.dtype not in ("float32", "float16"):
            continue
        program = spec.translate(case)
        if isinstance(program, NotExpressible):
            continue
        attributes = {k: v for k, v in case.attributes.items() if k != "layout"}
        result = oracles.evaluate(case.op, attributes, case.tensors, profile=spec.semantics,
                                  cache=False)
        out.append((case, program, result))
    return out


def _scale(result, reading_name) -> float:
    reading = next((r for r in result.readings if r.name == reading_name), result.readings[0])
    values = [np.abs(e.hi[~e.unspecified & np.isfinite(e.hi)]) for e in reading.outputs.values()]
    values = np.concatenate([v.ravel() for v in values]) if values else np.zeros(1)
    return float(values.max()) if values.size else 0.0


def _classify(judgement, result) -> str:
    if judgement.verdict != "fail":
        return judgement.verdict
    if judgement.max_abs_err is None:  # a shape or output-count mismatch: no numbers to compare
        return "semantic"
    scale = max(_scale(result, judgement.reading), 1e-3)
    return "semantic" if judgement.max_abs_err > SEMANTIC * scale else "false alarm"


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("runtime", sorted(RUNTIMES) or ["none"])
def test_no_false_alarm_under_the_derived_tolerance(runtime, dtype, corpus, request):
    if runtime == "none":
        pytest.skip("neither onnxruntime nor openvino is installed")
    rt = RUNTIMES[runtime]
    counts = Counter()
    semantic, false_alarms, ratios = [], [], []
    for case, program, result in corpus:
        if case.dtype != dtype:
            continue
        try:
            outputs = rt.run(program.runtime_input(), program.feeds)
        except Exception:  # noqa: BLE001 - a refusal is a verdict of its own, not a tolerance question
            counts["rejected"] += 1
            continue
        derived = judge_outputs(case, program, outputs, result, for_case(case))
        interim = judge_outputs(case, program, outputs, result, for_case(case, INTERIM))
        kind = _classify(derived, result)
        counts[f"derived {derived.verdict}"] += 1
        counts[f"interim {interim.verdict}"] += 1
        if kind == "semantic":
            semantic.append((case.id, derived.max_abs_err, derived.message.splitlines()[0]))
        elif kind == "false alarm":
            false_alarms.append((case.id, derived.message))
        elif derived.verdict == "pass" and derived.worst:
            ratios.append(derived.worst["abs_err"] / derived.worst["bound"]
                          if derived.worst["bound"] > 0 else 0.0)
    line = {"runtime": runtime, "dtype": dtype, "counts": dict(sorted(counts.items())),
            "semantic": [c for c, _, _ in semantic],
            "error_over_bound_at_worst_element": (
                np.quantile(ratios, [0.5, 0.9, 1.0]).round(4).tolist() if ratios else None)}
    print(json.dumps(line))
    request.node.user_properties.append(("classification", line))
    assert not false_alarms, "\n".join(f"{cid}: {msg}" for cid, msg in false_alarms)


@pytest.mark.skipif("onnxruntime" not in RUNTIMES, reason="onnxruntime is not installed")
def test_onnxruntime_float32_errors_sit_well_inside_the_bound(corpus):
    """Not only no false alarm: onnxruntime's float32 errors use a small part of the bound, so
    the bound is not loose enough to hide a real precision bug of the same size."""
    rt = RUNTIMES["onnxruntime"]
    used = []
    for case, program, result in corpus:
        if case.dtype != "float32":
            continue
        try:
            outputs = rt.run(program.runtime_input(), program.feeds)
        except Exception:  # noqa: BLE001, S112 - refused: nothing to compare
            continue
        j = judge_outputs(case, program, outputs, result, for_case(case))
        if j.verdict == "pass" and j.worst and j.worst["abs_err"] > 0:
            used.append(j.worst["abs_err"] / j.worst["bound"])
    assert len(used) > 100
    assert np.median(used) < 0.5 and max(used) <= 1.0
    assert np.median(used) > 1e-3  # ... and the bound is within three decades of reality
