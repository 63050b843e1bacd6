"""The oracle against ONNX's reference helpers (RNNHelper, GRUHelper, LSTMHelper) in float64.

The helpers implement the ONNX equations in numpy; fed float64 inputs they compute in float64, so
over S <= 4 steps with |outputs| <= 1 their error is a few hundred float64 ulps at most: 1e-12
absolute is generous for them and far tighter than any float32 check. This covers directions,
initial states, biases, peepholes, linear_before_reset and layout on random values.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx.backend.test.case.node.gru import GRUHelper
from onnx.backend.test.case.node.lstm import LSTMHelper
from onnx.backend.test.case.node.rnn import RNNHelper

import oracles

HELPERS = {"RNN": (RNNHelper, 1), "GRU": (GRUHelper, 3), "LSTM": (LSTMHelper, 4)}
CONFIGS = [
    (op, direction, layout, seed)
    for op in HELPERS
    for direction in ("forward", "reverse", "bidirectional")
    for layout, seed in ((0, 1), (1, 2))
]


def _random_problem(op, direction, layout, seed):
    rng = np.random.default_rng(seed)
    gates = HELPERS[op][1]
    S, B, I, H = rng.integers(1, 5), rng.integers(1, 4), rng.integers(1, 5), rng.integers(1, 5)
    D = 2 if direction == "bidirectional" else 1
    x = rng.uniform(-2, 2, (S, B, I))
    h0 = rng.uniform(-1, 1, (D, B, H))
    tensors = {
        "X": x if layout == 0 else x.swapaxes(0, 1).copy(),
        "W": rng.uniform(-1, 1, (D, gates * H, I)),
        "R": rng.uniform(-1, 1, (D, gates * H, H)),
        "B": rng.uniform(-1, 1, (D, 2 * gates * H)),
        "initial_h": h0 if layout == 0 else h0.swapaxes(0, 1).copy(),
    }
    attributes = {"hidden_size": int(H), "direction": direction, "layout": layout}
    if op == "GRU":
        attributes["linear_before_reset"] = int(seed % 2)
    if op == "LSTM":
        c0 = rng.uniform(-1, 1, (D, B, H))
        tensors["initial_c"] = c0 if layout == 0 else c0.swapaxes(0, 1).copy()
        tensors["P"] = rng.uniform(-1, 1, (D, 3 * H))
    return attributes, tensors


@pytest.mark.parametrize("op,direction,layout,seed", CONFIGS)
def test_against_onnx_helper_float64(op, direction, layout, seed):
    attributes, tensors = _random_problem(op, direction, layout, seed)
    helper_params = dict(tensors, direction=direction, layout=layout)
    if op == "GRU":
        helper_params["linear_before_reset"] = attributes["linear_before_reset"]
    expected = HELPERS[op][0](**helper_params).step()
    result = oracles.evaluate(op, attributes, tensors, cache=False)
    assert [r.name for r in result.readings] == ["default"]
    outputs = result.readings[0].outputs
    for name, value in zip(("Y", "Y_h", "Y_c"), expected):
        assert outputs[name].shape == value.shape, name
        np.testing.assert_allclose(outputs[name].hi, value, rtol=0, atol=1e-12, err_msg=name)
