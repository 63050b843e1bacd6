"""A kernel's tanh and sigmoid as measured through the op, in the precision model's terms
(oracles/precision/measured.py), the model widened to them and capped (arithmetic.with_activations), and
the declared judgement's bound of a stack of layers (oracles/stack.py ``stack_bounds``)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import oracles
from oracles import precision
from oracles.precision import measured

GRID = np.arange(-4096, 4097) / 1024.0


def _off_by(ulps: np.ndarray, exact: np.ndarray) -> np.ndarray:
    return (exact + ulps * np.spacing(np.abs(exact).astype(np.float32))).astype(np.float32)


def test_a_correctly_rounded_function_needs_nothing_beyond_the_models_rounding():
    for name in ("Tanh", "Sigmoid"):
        exact = measured.exact(name, GRID)
        found = measured.summary(name, GRID, exact.astype(np.float32))
        assert found["k"] == 0.0 and found["ulps"] <= 0.5 + 1e-9


def test_an_error_of_n_ulps_needs_k_between_n_over_2_and_n():
    """k ulps as the model counts them admit 2k·u relative; an ulp at f is between u·|f| and 2u·|f|."""
    exact = measured.exact("Tanh", GRID)
    for n in (10.0, 125.0, 2000.0):
        got = _off_by(np.full(GRID.shape, n), exact)
        k = measured.needed("Tanh", GRID, got)
        away = np.abs(exact) > 0.5   # where n ulps pass the absolute floor near 0 (4·u)
        assert np.all(k[away] >= n / 2 - 1) and np.all(k[away] <= n + 1), (n, k[away].min(), k[away].max())


def test_the_needed_k_is_exactly_what_makes_the_model_cover_each_point():
    rng = np.random.default_rng(1)
    exact = measured.exact("Sigmoid", GRID)
    got = _off_by(rng.uniform(-40, 40, GRID.shape), exact)
    k = measured.needed("Sigmoid", GRID, got)
    ar = precision.arithmetic("float32")
    fn = precision.functions.Fn
    err = np.abs(got - exact)
    wide = precision.with_activations(ar, {"Sigmoid": float(k.max()) * 1.001})
    assert np.all(fn("Sigmoid", [], [], False, wide)(GRID, np.zeros_like(GRID))[1] >= err)
    tight = precision.with_activations(ar, {"Sigmoid": float(k.max()) * 0.97})
    assert not np.all(fn("Sigmoid", [], [], False, tight)(GRID, np.zeros_like(GRID))[1] >= err) or k.max() <= 4


def test_a_bf16_kernels_rounding_is_its_own_not_the_activations():
    x = np.arange(-128, 129) / 32.0
    got = measured.exact("Tanh", x).astype(ml_dtypes.bfloat16).astype(np.float64)
    found = measured.summary("Tanh", x, got, "bfloat16")
    assert found["k"] == 0.0 and found["ulps"] <= 0.5
    worse = (measured.exact("Tanh", x) * (1 + 2.0 ** -7)).astype(ml_dtypes.bfloat16).astype(np.float64)
    assert measured.summary("Tanh", x, worse, "bfloat16")["k"] > 1000


def test_the_model_is_widened_to_the_measurement_never_narrowed_and_capped_at_the_ceiling():
    ar = precision.arithmetic("float32")
    assert precision.with_activations(ar, {"Tanh": 1.0}).tanh_lib == ar.tanh_lib        # never below ACT_ULPS
    wide = precision.with_activations(ar, {"Tanh": 125.0, "Sigmoid": 4.1})
    assert wide.tanh_lib == pytest.approx(ar.tanh_lib * 125 / 4) and wide.sigmoid_rel > ar.sigmoid_rel
    capped = precision.with_activations(ar, {"Tanh": 83886.0})
    assert capped.tanh_lib == pytest.approx(2 * precision.ACT_ULPS_CEILING * ar.u)
    assert capped.parameters()["measured_act_ulps"]["Tanh"] == precision.ACT_ULPS_CEILING
    bf16 = precision.with_activations(precision.kernel("bfloat16"), {"Tanh": 100.0})
    assert bf16.wide.tanh_lib == pytest.approx(2 * 100 * 2.0 ** -24)            # computed in float32
    assert precision.with_activations(ar, None) is ar


def _rnn(seed=0, S=5, B=3, I=4, H=3):
    rng = np.random.default_rng(seed)
    return {"hidden_size": H}, {"X": rng.uniform(-2, 2, (S, B, I)).astype(np.float32),
                                "W": rng.uniform(-1, 1, (1, H, I)).astype(np.float32),
                                "R": rng.uniform(-1, 1, (1, H, H)).astype(np.float32)}


def test_a_measured_tanh_widens_the_declared_bound_of_a_float32_kernel():
    attrs, tensors = _rnn()
    base, _ = oracles.computed_in("RNN", attrs, tensors, "onnx", {}, "float32")
    wide, model = oracles.computed_in("RNN", attrs, tensors, "onnx", {}, "float32", act_ulps={"Tanh": 125.0})
    assert np.all(wide["Y"] > base["Y"]) and model["measured_act_ulps"]["Tanh"] == 125.0
    same, _ = oracles.computed_in("RNN", attrs, tensors, "onnx", {}, "float32", act_ulps={"Tanh": 2.0})
    assert np.array_equal(same["Y"], base["Y"])     # within the model's own: nothing changes


def _stack(layers=2, bidirectional=True, seed=3):
    rng = np.random.default_rng(seed)
    S, B, I, H = 4, 2, 3, 3
    D = 2 if bidirectional else 1
    tensors = {"X": rng.uniform(-1, 1, (S, B, I)).astype(np.float32),
               "initial_h": rng.uniform(-1, 1, (layers * D, B, H)).astype(np.float32)}
    for layer in range(layers):
        suffix = "" if layer == 0 else f"_l{layer}"
        width = I if layer == 0 else D * H
        tensors[f"W{suffix}"] = rng.uniform(-1, 1, (D, 3 * H, width)).astype(np.float32)
        tensors[f"R{suffix}"] = rng.uniform(-1, 1, (D, 3 * H, H)).astype(np.float32)
        tensors[f"B{suffix}"] = rng.uniform(-1, 1, (D, 6 * H)).astype(np.float32)
    attrs = {"hidden_size": H, "num_layers": layers, "linear_before_reset": 1,
             "direction": "bidirectional" if bidirectional else "forward"}
    return attrs, tensors


def test_a_stack_of_layers_has_a_declared_bound_that_the_oracles_own_matches_in_its_type():
    """computed_in for num_layers > 1 (it raised "input 'B_l1' is not an input of GRU" before): in the
    model's own type and accuracy it is the oracle's own bound; TF32 widens it; every layer's states."""
    attrs, tensors = _stack()
    res = oracles.evaluate("GRU", attrs, tensors, profile="torch")
    own = res.readings[0].outputs
    same, model = oracles.computed_in("GRU", attrs, tensors, "torch", {}, "float32")
    for name in ("Y", "Y_h"):
        assert same[name].shape == own[name].bound.shape
        np.testing.assert_allclose(same[name], own[name].bound, rtol=1e-6)
    assert model["layers"] == 2
    tf32, model = oracles.computed_in("GRU", attrs, tensors, "torch", {}, "tfloat32")
    assert np.all(tf32["Y"] > same["Y"]) and model["kernel"] == precision.KERNEL_MODEL
    act, _ = oracles.computed_in("GRU", attrs, tensors, "torch", {}, "tfloat32", act_ulps={"Tanh": 125.0})
    assert np.all(act["Y"] >= tf32["Y"]) and np.any(act["Y"] > tf32["Y"])
