"""Each of the eleven activation functions, through a one-step RNN (W = 1, R = 0: Y = F(x)).

The reference is each ONNX doc formula evaluated here in mpmath at 300 bits; the oracle's hi must
be exactly the float64 nearest to it (it is documented as correctly rounded).
"""

from __future__ import annotations

import mpmath
import numpy as np
import pytest

from tests.unit.oracle.helpers import evaluate, single

POINTS = [-30.0, -2.5, -0.75, -1e-10, 0.0, 1e-10, 0.5, 1.0, 3.0, 40.0]
f32 = lambda v: float(np.float32(v))  # noqa: E731  attributes are FLOAT (32-bit)

mp = mpmath.MPContext()
mp.prec = 300

REFERENCE = {
    "Relu": ({}, lambda x: max(x, 0)),
    "Tanh": ({}, lambda x: (1 - mp.exp(-2 * x)) / (1 + mp.exp(-2 * x))),
    "Sigmoid": ({}, lambda x: 1 / (1 + mp.exp(-x))),
    "Affine": ({"alpha": 0.5, "beta": -0.25}, lambda x: f32(0.5) * x + f32(-0.25)),
    "LeakyRelu": ({"alpha": 0.1}, lambda x: x if x >= 0 else f32(0.1) * x),
    "ThresholdedRelu": ({"alpha": 0.75}, lambda x: x if x >= f32(0.75) else mp.mpf(0)),
    "ScaledTanh": ({"alpha": 1.5, "beta": 0.3}, lambda x: f32(1.5) * mp.tanh(f32(0.3) * x)),
    "HardSigmoid": ({"alpha": 0.3, "beta": 0.6},
                    lambda x: min(max(f32(0.3) * x + f32(0.6), 0), 1)),
    "Elu": ({"alpha": 2.0}, lambda x: x if x >= 0 else f32(2.0) * (mp.exp(x) - 1)),
    "Softsign": ({}, lambda x: x / (1 + abs(x))),
    "Softplus": ({}, lambda x: mp.log(1 + mp.exp(x))),
}
DEFAULTED = {  # parameters left out: the standalone ONNX operators' defaults (float32)
    "LeakyRelu": lambda x: x if x >= 0 else f32(0.01) * x,
    "ThresholdedRelu": lambda x: x if x >= 1 else mp.mpf(0),
    "HardSigmoid": lambda x: min(max(f32(0.2) * x + 0.5, 0), 1),
    "Elu": lambda x: x if x >= 0 else mp.exp(x) - 1,
}


def _through_rnn(name, params):
    attributes = {"hidden_size": 1, "activations": [name]}
    if "alpha" in params:
        attributes["activation_alpha"] = [params["alpha"]]
    if "beta" in params:
        attributes["activation_beta"] = [params["beta"]]
    X = [[[x] for x in POINTS]]  # one step, one batch entry per point
    return evaluate("RNN", attributes, X=X, W=[[[1.0]]], R=[[[0.0]]])


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_activation_is_correctly_rounded(name):
    params, formula = REFERENCE[name]
    result = _through_rnn(name, params)
    expected = [float(formula(mp.mpf(x))) for x in POINTS]
    hi = result.readings[0].outputs["Y_h"].hi[0, :, 0]
    np.testing.assert_array_equal(hi, expected)
    lo = result.readings[0].outputs["Y_h"].lo[0, :, 0]
    np.testing.assert_array_equal(lo, [float(formula(mp.mpf(x)) - e) for x, e in zip(POINTS, hi)])


@pytest.mark.parametrize("name", sorted(DEFAULTED))
def test_activation_defaults(name):
    result = _through_rnn(name, {})
    assert "activation_defaults" in result.ambiguities
    expected = [float(DEFAULTED[name](mp.mpf(x))) for x in POINTS]
    readings = {r.name: r for r in result.readings}
    # ThresholdedRelu with alpha 1.0 meets x = 1.0: the boundary splits it into two readings
    reading = readings.get("tr-ge", readings.get("default"))
    np.testing.assert_array_equal(reading.outputs["Y_h"].hi[0, :, 0], expected)


def test_softplus_and_elu_keep_relative_accuracy_near_cancellation():
    points = [-700.0, -1e-300, -2.0 ** -60]
    for name, formula in (("Softplus", lambda x: mp.log1p(mp.exp(x))),
                          ("Elu", lambda x: mp.expm1(x))):
        attributes = {"hidden_size": 1, "activations": [name]}
        if name == "Elu":
            attributes["activation_alpha"] = [1.0]
        result = evaluate("RNN", attributes, X=[[[x] for x in points]], W=[[[1.0]]], R=[[[0.0]]])
        hi = result.readings[0].outputs["Y_h"].hi[0, :, 0]
        np.testing.assert_array_equal(hi, [float(formula(mp.mpf(x))) for x in points])


def test_thresholded_relu_boundary_readings():
    result = evaluate("RNN", {"hidden_size": 1, "activations": ["ThresholdedRelu"],
                              "activation_alpha": [0.5]},
                      X=[[[0.5], [0.75]]], W=[[[1.0]]], R=[[[0.0]]])
    assert result.ambiguities == ["thresholded_relu_boundary"]
    assert [r.name for r in result.readings] == ["tr-ge", "tr-gt"]
    np.testing.assert_array_equal(result.reading("tr-ge").outputs["Y_h"].hi[0, :, 0], [0.5, 0.75])
    np.testing.assert_array_equal(result.reading("tr-gt").outputs["Y_h"].hi[0, :, 0], [0.0, 0.75])
    assert "x >= alpha" in result.reading("tr-ge").description
    assert "x > alpha" in result.reading("tr-gt").description


def test_thresholded_relu_without_a_tie_is_one_reading():
    result = evaluate("RNN", {"hidden_size": 1, "activations": ["ThresholdedRelu"],
                              "activation_alpha": [0.5]},
                      X=[[[0.25], [0.75]]], W=[[[1.0]]], R=[[[0.0]]])
    assert result.ambiguities == ["thresholded_relu_boundary"]
    assert [r.name for r in result.readings] == ["default"]


def test_thresholded_relu_directml_is_strict():
    result = evaluate("RNN", {"hidden_size": 1, "activations": ["ThresholdedRelu"],
                              "activation_alpha": [0.5]},
                      profile="directml", X=[[[0.5]]], W=[[[1.0]]], R=[[[0.0]]])
    assert result.ambiguities == []
    assert single(result)["Y_h"][0, 0, 0] == 0.0


def test_thresholded_relu_at_zero_alpha_is_no_tie():
    result = evaluate("RNN", {"hidden_size": 1, "activations": ["ThresholdedRelu"],
                              "activation_alpha": [0.0]},
                      X=[[[0.0]]], W=[[[1.0]]], R=[[[0.0]]])
    assert [r.name for r in result.readings] == ["default"]  # x or 0: both are 0


def test_activation_name_case():
    lower = evaluate("GRU", {"hidden_size": 1, "activations": ["sigmoid", "TANH"]},
                     X=[[[0.5]]], W=[[[1.0], [1.0], [1.0]]], R=[[[0.5], [0.5], [0.5]]])
    canonical = evaluate("GRU", {"hidden_size": 1, "activations": ["Sigmoid", "Tanh"]},
                         X=[[[0.5]]], W=[[[1.0], [1.0], [1.0]]], R=[[[0.5], [0.5], [0.5]]])
    assert lower.ambiguities == ["activation_case"]
    assert canonical.ambiguities == []
    np.testing.assert_array_equal(single(lower)["Y_h"], single(canonical)["Y_h"])
