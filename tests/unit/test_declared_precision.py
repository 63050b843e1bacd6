"""The judgement of a target that computes in a narrower precision than its model's type (the record's
``declared``).

This module holds the unit tier's tests of it (no runtime, no process); the others:
tests/corpus/test_declared_precision.py, tests/runtime/test_declared_precision.py."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

import oracles
from conformance.run.engine import effective_of
from conformance.runtimes.effective import summary, target_precision
from oracles import precision


def _problem(seed=0, op="GRU", dtype=np.float32, **attrs):
    from oracles.problem import build_problem
    from oracles.profiles import get_profile
    rng = np.random.default_rng(seed)
    G = {"RNN": 1, "GRU": 3, "LSTM": 4}[op]
    H, I, S, B = 3, 4, 5, 2
    D = 2 if attrs.get("direction") == "bidirectional" else 1
    t = {"X": rng.uniform(-1, 1, (S, B, I)), "W": rng.uniform(-1, 1, (D, G * H, I)),
         "R": rng.uniform(-1, 1, (D, G * H, H)), "B": rng.uniform(-1, 1, (D, 2 * G * H)),
         "initial_h": rng.uniform(-1, 1, (D, B, H))}
    t = {k: v.astype(dtype) for k, v in t.items()}
    profile = get_profile("onnx")
    attrs = {"hidden_size": H, **attrs}
    return build_problem(op, attrs, t, profile), {p: pt.choices[0].value for p, pt in profile.points.items()}, attrs, t


def test_a_kernel_computes_activations_wide_and_rounds_them_once():
    from oracles.precision.functions import Fn
    k, dtype = precision.kernel("bfloat16", "float32"), precision.arithmetic("bfloat16", "float32", True)
    x, e = np.array([[[3.0, 0.2]]]), np.zeros((1, 1, 2))
    f = np.tanh(x)
    wide = Fn("Tanh", [None], [None], False, k)(x, e)[1]
    narrow = Fn("Tanh", [None], [None], False, dtype)(x, e)[1]
    assert np.all(wide <= k.u_el * np.abs(f) + 16 * 2.0 ** -24)  # one bf16 rounding, and float32's own
    assert np.all(narrow >= 4 * wide)                     # the dtype's own: 4 bf16 ulps and more
    assert k.parameters()["kernel"] == precision.KERNEL_MODEL
    assert "activations computed in float32" in k.parameters()["scheme"]


def test_tf32_rounds_only_the_matrix_products_operands():
    k = precision.kernel("tfloat32")
    assert k.u_gemm == 2.0 ** -11 and k.u_in == 0 and k.u_el == 2.0 ** -24 and k.wide is None
    problem, values, _, _ = _problem()
    tf, _ = precision.bound(problem, values, "tfloat32")
    f32, _ = precision.bound(problem, values)
    bf, _ = precision.bound(problem, values, "bfloat16", "float32")
    assert np.all(tf["Y"] > f32["Y"]) and np.all(tf["Y"] < bf["Y"])


def test_the_statistical_scale_and_the_inputs_offset_come_with_the_bound():
    _, _, attrs, t = _problem(1)
    found = oracles.computed_in("GRU", attrs, t, "onnx", {}, "bfloat16", "float32")
    bounds, model = found  # unpacks as before
    assert model["statistical"]["model"] == "probabilistic-v2" and model["statistical"]["samples"] >= 16
    for name in bounds:
        assert np.all(found.sigma[name] > 0) and np.all(found.offset[name] >= 0)
        assert np.all(found.sigma[name] < bounds[name])
    # rounding that is not to nearest is biased: no statistical scale, the rigorous bound alone
    faithful = oracles.computed_in("GRU", attrs, t, "onnx", {}, "bfloat16", "float32", "faithful")
    assert faithful.sigma is None and "statistical" not in faithful.model
    # inputs a kernel holds exactly have no rounding offset
    exact = {k: v.astype(np.float32).astype(np.float64) for k, v in t.items()}
    exact = {k: np.round(v * 8) / 8 for k, v in exact.items()}
    exact = {k: v.astype(np.float32) for k, v in exact.items()}
    assert all(np.all(o == 0) for o in oracles.computed_in("GRU", attrs, exact, "onnx", {}, "bfloat16",
                                                             "float32").offset.values())


def test_one_walker_carries_the_bound_and_the_tangents_along_the_same_trajectory():
    for op, attrs in (("GRU", {"linear_before_reset": 1}), ("LSTM", {"direction": "bidirectional"}),
                      ("RNN", {"direction": "reverse"})):
        problem, values, _, _ = _problem(2, op, **attrs)
        traj, _ = precision.trajectory(problem, values)
        tangents = precision.sigma(problem, values, samples=32)
        for name in traj:
            np.testing.assert_allclose(tangents["values"][name], traj[name], rtol=1e-12, atol=1e-15)


def test_the_model_before_kernel_v1_stays_selectable_for_comparison():
    _, _, attrs, t = _problem(3)
    new = oracles.computed_in("GRU", attrs, t, "onnx", {}, "bfloat16", "float32")
    old = oracles.computed_in("GRU", attrs, t, "onnx", {}, "bfloat16", "float32", kernel=False)
    assert old.sigma is None and "kernel" not in old.model and "kernel" in new.model
    assert all(np.all(new.bounds[n] < old.bounds[n]) for n in new.bounds)


def _target(declared=None, measured=None):
    configuration = {"declared": declared or {}, "measured": measured or {}}
    return SimpleNamespace(precision=target_precision(configuration), configuration=configuration,
                           config="default")


def test_a_probe_reading_narrower_than_the_declaration_is_shown_not_used():
    case = SimpleNamespace(dtype="float32")
    target = _target({"precision": "bf16"}, {"precision": "1-bit significand", "bits": 1, "rounding": "nearest",
                                             "flushes_subnormals": False, "denormals_are_zero": False})
    assert target.precision == "bf16"
    found = effective_of(case, target, {})
    assert found["precision"] == "bf16" and found["rounding"] == "nearest"
    assert "1-bit significand" in found["probe"]
    assert "judged as declared" in summary(target.configuration)


def test_a_significand_no_precision_has_is_a_finding_not_a_precision():
    case = SimpleNamespace(dtype="float32")
    target = _target(None, {"precision": "1-bit significand", "bits": 1, "rounding": "nearest",
                            "flushes_subnormals": False, "denormals_are_zero": False})
    assert target.precision == ""
    assert effective_of(case, target, {})["precision"] == "f32"  # judged as its model's type
    assert "a finding, not a precision" in summary(target.configuration)


def test_rounding_is_to_nearest_unless_the_runtime_declares_otherwise():
    case = SimpleNamespace(dtype="float32")
    measured = {"precision": "bf16", "bits": 8, "rounding": "faithful", "flushes_subnormals": False,
                "denormals_are_zero": False}
    target = _target({"precision": "bf16"}, measured)
    found = effective_of(case, target, {})
    assert found["rounding"] == "nearest" and "not to nearest" in found["probe"]
    assert effective_of(case, target, {"precision": "bf16", "rounding": "faithful"})["rounding"] == "faithful"
    # a probe that reads a known precision where nothing is declared sets what the target is judged at
    assert _target(None, dict(measured, rounding="nearest")).precision == "bf16"
