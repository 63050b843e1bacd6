"""The precision certificate, correct rounding, and exact input conversion."""

from __future__ import annotations

import math

import ml_dtypes
import mpmath
import numpy as np
import pytest

import oracles
from tests.unit.oracle.helpers import evaluate

mp = mpmath.MPContext()


def _lstm_problem(seed=0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    S, B, I, H = 4, 2, 3, 3
    tensors = {
        "X": rng.uniform(-2, 2, (S, B, I)).astype(dtype),
        "W": rng.uniform(-1, 1, (2, 4 * H, I)).astype(dtype),
        "R": rng.uniform(-1, 1, (2, 4 * H, H)).astype(dtype),
        "B": rng.uniform(-1, 1, (2, 8 * H)).astype(dtype),
        "P": rng.uniform(-1, 1, (2, 3 * H)).astype(dtype),
        "sequence_lens": np.array([4, 2], dtype=np.int32),
    }
    return {"hidden_size": H, "direction": "bidirectional"}, tensors


def _relative_bits(a, b):
    """-log2 |a - b| / |b| over the elements (None where unspecified)."""
    worst = math.inf
    for x, y in zip(a.ravel(), b.ravel()):
        if y is None:
            assert x is None
            continue
        if x != y:
            worst = min(worst, -float(mp.log(abs(x - y) / abs(y), 2)))
    return worst


def test_128_bits_agree_with_256_bits():
    attributes, tensors = _lstm_problem()
    low = oracles.evaluate_mp("LSTM", attributes, tensors, prec=128)
    high = oracles.evaluate_mp("LSTM", attributes, tensors, prec=256)
    for name in low:
        assert _relative_bits(low[name], high[name]) > 120, name


def test_certificate_matches_a_direct_comparison():
    attributes, tensors = _lstm_problem(1)
    result = oracles.evaluate("LSTM", attributes, tensors, cache=False)
    cert = result.certificate
    assert (cert["prec"], cert["check_prec"]) == (128, 192)
    low = oracles.evaluate_mp("LSTM", attributes, tensors, prec=128)
    high = oracles.evaluate_mp("LSTM", attributes, tensors, prec=192)
    bits = min(_relative_bits(low[n], high[n]) for n in low)
    assert cert["agree_bits"] == pytest.approx(min(bits, 128), abs=0.01)
    diff = max(float(abs(x - y)) for n in low for x, y in zip(low[n].ravel(), high[n].ravel())
               if y is not None)
    assert cert["max_abs_diff"] == pytest.approx(diff, rel=1e-9)
    assert 110 < cert["agree_bits"] <= 128


def test_check_prec_is_configurable():
    attributes, tensors = _lstm_problem(2)
    result = oracles.evaluate("LSTM", attributes, tensors, prec=96, check_prec=256, cache=False)
    assert (result.certificate["prec"], result.certificate["check_prec"]) == (96, 256)
    assert 80 < result.certificate["agree_bits"] <= 96


def test_exact_case_certifies_full_precision():
    result = evaluate("RNN", {"hidden_size": 1, "activations": ["Relu"]},
                      X=[[[0.5]], [[0.25]]], W=[[[3.0]]], R=[[[-0.5]]])
    assert result.certificate["agree_bits"] == 128.0
    assert result.certificate["max_abs_diff"] == 0.0


def test_hi_is_correctly_rounded_and_lo_is_the_remainder():
    attributes, tensors = _lstm_problem(3, dtype=np.float64)
    result = oracles.evaluate("LSTM", attributes, tensors, cache=False)
    exact = oracles.evaluate_mp("LSTM", attributes, tensors, prec=600)
    for name, expected in result.readings[0].outputs.items():
        for hi, lo, value, unspecified in zip(expected.hi.ravel(), expected.lo.ravel(),
                                              exact[name].ravel(), expected.unspecified.ravel()):
            if unspecified:
                assert value is None and math.isnan(hi)
                continue
            assert hi == float(value)
            assert lo == float(value - mp.mpf(hi))


def test_cancellation_still_certifies():
    """h2 = tanh(X1 + h1) with X1 = -fl64(tanh(0.75)): the pre-activation is ~1e-17, the rounding
    residue of tanh(0.75) in float64. float64 arithmetic gets it wrong; the oracle at 128 bits keeps
    ~70 bits and says so."""
    t = math.tanh(0.75)
    result = evaluate("RNN", {"hidden_size": 1}, X=[[[0.75]], [[-t]]], W=[[[1.0]]], R=[[[1.0]]])
    with mp.workprec(1000):
        exact = mp.tanh(mp.tanh(mp.mpf(0.75)) - mp.mpf(t))
    y = result.readings[0].outputs["Y_h"].hi[0, 0, 0]
    assert y == float(exact)
    assert y > 1e-18
    assert 60 < result.certificate["agree_bits"] < 100  # ~78: 128 bits less the ~55 cancelled
    assert math.tanh(math.tanh(0.75) - t) == 0.0  # float64 loses the value entirely


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16, np.float32, np.float64])
def test_inputs_are_read_exactly(dtype):
    x = np.array([[[0.1]]], dtype=dtype)
    tensors = {"X": x, "W": np.ones((1, 1, 1), dtype), "R": np.zeros((1, 1, 1), dtype)}
    result = oracles.evaluate("RNN", {"hidden_size": 1, "activations": ["Affine"],
                                      "activation_alpha": [1.0], "activation_beta": [0.0]},
                              tensors, cache=False)
    assert result.readings[0].outputs["Y_h"].hi[0, 0, 0] == float(x[0, 0, 0])
    assert result.readings[0].outputs["Y_h"].lo[0, 0, 0] == 0.0
