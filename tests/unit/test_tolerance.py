"""The derived tolerance: what it is made of, how verdicts state it, and that the real runtimes
raise no false alarm under it.

The runtime half runs every float32 and float16 case of the corpus (onnx-14) on onnxruntime CPU
and on OpenVINO CPU reading the ONNX model with its precision pinned, in process, and judges each result under the
derived tolerance (the default) and under the interim policy. A failure is either a *semantic divergence*
— the runtime computes another function: its worst error is more than 1% of the output's value
scale (peepholes or input_forget ignored, another ThresholdedRelu default, a layout it gets wrong)
— or a *false alarm*: a precision-sized error the derived bound should have admitted. There must
be none of the second kind. The classification is printed (pytest -s) for the report.

This module holds the unit tier's tests of it (no runtime, no process); the others:
tests/corpus/test_tolerance.py."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import oracles
from conformance.compare import for_case, judge_outputs
from conformance.compare.tolerance import DEFAULT_POLICY, named_policy, policies

INTERIM = "interim-dtype-v1"


def _case(dtype="float32", tolerance=None):
    return SimpleNamespace(dtype=dtype, tolerance=tolerance)


def test_the_default_is_the_derived_bound():
    tol = for_case(_case())
    assert DEFAULT_POLICY == "derived" and tol.kind == "derived" and tol.derived
    table = policies()["derived"]
    assert tol.factor == table["factor"] == 2 and tol.floor_ulps == table["floor_ulps"] == 2
    assert table["why"].strip() and "first-order" in table["why"]


def test_a_case_override_wins_and_names_its_source():
    tol = for_case(_case(tolerance={"abs": 1e-3, "rel": 0.0, "source": "ONNX node test"}))
    assert tol.kind == "override" and tol.source == "ONNX node test"
    assert tol.allowed(np.array([5.0])) == pytest.approx([1e-3])


def test_the_interim_policy_stays_selectable_by_name():
    tol = for_case(_case("float16"), INTERIM)
    assert (tol.kind, tol.name, tol.abs, tol.rel) == ("policy", INTERIM, 8e-3, 3.2e-2)
    with pytest.raises(KeyError, match="not in policies.yaml"):
        named_policy("no-such-policy", "float32")


def test_derived_allows_twice_the_bound_and_at_least_two_ulps():
    tol = named_policy("derived", "float32")
    exact = np.array([1.0, 1.0, 0.0])
    bound = np.array([1e-6, 1e-9, 0.0])
    allowed = tol.allowed(exact, bound, "float32")
    ulp1 = 2.0 ** -23
    assert allowed == pytest.approx([2e-6, 2 * ulp1, 2 * 2.0 ** -149])
    with pytest.raises(ValueError, match="needs the oracle's bound"):
        tol.allowed(exact)


def _lstm_result(dtype=np.float32):
    rng = np.random.default_rng(3)
    t = {"X": rng.uniform(-1, 1, (4, 2, 3)).astype(dtype),
         "W": rng.uniform(-1, 1, (1, 12, 3)).astype(dtype),
         "R": rng.uniform(-1, 1, (1, 12, 3)).astype(dtype),
         "B": rng.uniform(-1, 1, (1, 24)).astype(dtype)}
    return oracles.evaluate("LSTM", {"hidden_size": 3}, t, cache=False)


def test_resolving_states_the_model_in_the_source():
    res = _lstm_result()
    tol = named_policy("derived", "float32").resolve(res, _case())
    assert tol.source.startswith("derived: float32 u=2^-24, accumulation float32, dot length 8 "
                                 "(input_size 3 + hidden_size 3 + 2 biases), 4 steps, "
                                 "activations ≤ 4 ulp, first-order running error bound × 2, "
                                 "floor 2 ulp, flushed subnormals: at least 9 smallest normals; "
                                 "model running-error-v1")
    assert tol.model == "running-error-v1" and tol.flush_terms == 9
    # a CPU that treats subnormal inputs as zero may drop each of the 8 terms' subnormal parts
    tiny = float(np.finfo(np.float32).tiny)
    allowed = tol.allowed(np.array([3.0e-38]), np.array([1e-45]), "float32")
    assert allowed[0] == pytest.approx(9 * tiny)
    record = tol.to_json()
    assert record["kind"] == "derived" and record["source"] == tol.source
    assert "abs" not in record and record["factor"] == 2


def test_without_a_bound_the_derived_tolerance_falls_back_and_says_so():
    res = _lstm_result()
    for reading in res.readings:
        for exp in reading.outputs.values():
            exp.bound = None
    tol = named_policy("derived", "float32").resolve(res, _case())
    assert tol.kind == "policy" and tol.name == INTERIM and "fallback" in tol.source


class _Program:
    """The canonical outputs as they are: enough of a Program for judge_outputs."""

    def __init__(self, names):
        self.outputs = [(n, n) for n in names]

    @staticmethod
    def to_canonical(name, array):
        return array


def _judge(res, outputs, dtype="float32", policy=None):
    case = SimpleNamespace(dtype=dtype, tolerance=None, tensors={}, direction="forward",
                           shape={"seq_length": 4})
    names = list(res.readings[0].outputs)
    return judge_outputs(case, _Program(names), outputs, res, for_case(case, policy))


def test_a_pass_states_the_bound_the_error_and_their_ratio_at_the_worst_element():
    res = _lstm_result()
    exp = res.readings[0].outputs
    outputs = [exp[n].hi.astype(np.float32) for n in exp]
    j = _judge(res, outputs)
    assert j.verdict == "pass"
    assert "within tolerance derived: float32 u=2^-24, accumulation float32" in j.message
    assert "worst element" in j.message and "× its bound" in j.message
    assert "× the allowed" in j.message
    w = j.worst
    assert j.tolerance["kind"] == "derived" and j.tolerance["source"].startswith("derived: ")
    assert j.tolerance["worst_bound"] == w["bound"] and j.tolerance["worst_allowed"] == w["allowed"]
    assert j.tolerance["worst_error_over_bound"] == pytest.approx(w["abs_err"] / w["bound"])


def test_a_fail_is_located_and_states_bound_error_ratio_and_source():
    res = _lstm_result()
    exp = res.readings[0].outputs
    outputs = [exp[n].hi.astype(np.float32) for n in exp]
    outputs[1] = outputs[1].copy()
    outputs[1][0, 1, 2] += np.float32(1e-4)  # Y_h[0,1,2]: far beyond rounding
    j = _judge(res, outputs)
    assert j.verdict == "fail"
    first = j.message.splitlines()[0]
    assert first.startswith("Y") and "but should be within" in first
    assert "× the bound" in j.message and "× the allowed" in j.message
    assert "tolerance derived: float32" in j.message and "model running-error-v1" in j.message
    assert "bound × 2, floor 2 ulp" in j.message
    assert j.tolerance["worst_bound"] > 0


def test_the_same_result_under_the_interim_policy_names_it():
    res = _lstm_result()
    exp = res.readings[0].outputs
    j = _judge(res, [exp[n].hi.astype(np.float32) for n in exp], policy=INTERIM)
    assert j.verdict == "pass" and f"({INTERIM})" in j.message
    assert j.tolerance["kind"] == "policy" and j.tolerance["name"] == INTERIM
