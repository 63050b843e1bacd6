"""Small cases whose answer is computed here by hand with plain float64 math.

Inputs are exactly representable, so each expected value is a short formula of math.tanh/exp;
they are compared with the oracle's correctly rounded hi to 1e-14 relative (the float64 formulas
themselves carry a few ulps of error).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.unit.oracle.helpers import evaluate, single

REL = 1e-14


def sigmoid(x):
    return 1.0 / (1.0 + math.exp(-x))


def close(actual, expected):
    assert np.asarray(actual, dtype=float) == pytest.approx(np.asarray(expected, dtype=float),
                                                            rel=REL, abs=1e-300)


# -- RNN ------------------------------------------------------------------------------------------

def test_rnn_one_step_all_inputs():
    # Ht = tanh(Xt*Wi + Ht-1*Ri + Wbi + Rbi)
    out = single(evaluate("RNN", {"hidden_size": 1}, X=[[[0.5]]], W=[[[1.0]]], R=[[[0.5]]],
                          B=[[0.25, -0.125]], initial_h=[[[1.0]]]))
    close(out["Y"], [[[[math.tanh(0.5 + 0.5 + 0.25 - 0.125)]]]])
    close(out["Y_h"], [[[math.tanh(1.125)]]])


def test_rnn_absent_optional_inputs_are_zero():
    out = single(evaluate("RNN", {"hidden_size": 2}, X=[[[0.5]]], W=[[[1.0], [-2.0]]],
                          R=[[[3.0, 3.0], [3.0, 3.0]]]))
    close(out["Y_h"], [[[math.tanh(0.5), math.tanh(-1.0)]]])


def test_rnn_two_steps_recurrence():
    out = single(evaluate("RNN", {"hidden_size": 1}, X=[[[1.0]], [[2.0]]], W=[[[0.5]]],
                          R=[[[0.25]]]))
    h0 = math.tanh(0.5)
    h1 = math.tanh(1.0 + 0.25 * h0)
    close(out["Y"][:, 0, 0, 0], [h0, h1])
    close(out["Y_h"], [[[h1]]])


def test_rnn_reverse_walks_from_the_end():
    out = single(evaluate("RNN", {"hidden_size": 1, "direction": "reverse"},
                          X=[[[1.0]], [[2.0]]], W=[[[0.5]]], R=[[[0.25]]]))
    at1 = math.tanh(1.0)  # t = 1 first, from the zero state
    at0 = math.tanh(0.5 + 0.25 * at1)
    close(out["Y"][:, 0, 0, 0], [at0, at1])
    close(out["Y_h"], [[[at0]]])  # the reverse direction ends at t = 0


def test_rnn_bidirectional_stacks_forward_first():
    out = single(evaluate("RNN", {"hidden_size": 1, "direction": "bidirectional"},
                          X=[[[1.0]], [[2.0]]], W=[[[0.5]], [[-1.0]]], R=[[[0.25]], [[0.5]]],
                          initial_h=[[[0.0]], [[1.0]]]))
    f0 = math.tanh(0.5)
    f1 = math.tanh(1.0 + 0.25 * f0)
    r1 = math.tanh(-2.0 + 0.5 * 1.0)
    r0 = math.tanh(-1.0 + 0.5 * r1)
    assert out["Y"].shape == (2, 2, 1, 1)
    close(out["Y"][:, 0, 0, 0], [f0, f1])
    close(out["Y"][:, 1, 0, 0], [r0, r1])
    close(out["Y_h"][:, 0, 0], [f1, r0])


def test_sequence_lens_partial_and_zero():
    result = evaluate("RNN", {"hidden_size": 1, "direction": "bidirectional"},
                      X=[[[1.0], [4.0]], [[2.0], [8.0]], [[3.0], [16.0]]],
                      W=[[[0.5]], [[0.25]]], R=[[[0.5]], [[-0.5]]],
                      initial_h=[[[0.0], [0.0]], [[0.125], [0.125]]], sequence_lens=[2, 0])
    assert [r.name for r in result.readings] == ["default"]
    assert result.ambiguities == ["sequence_lens"]
    Y, Y_h = result.readings[0].outputs["Y"], result.readings[0].outputs["Y_h"]
    f0 = math.tanh(0.5)
    f1 = math.tanh(1.0 + 0.5 * f0)
    r1 = math.tanh(0.25 * 2.0 - 0.5 * 0.125)  # reverse starts at t = len - 1 = 1
    r0 = math.tanh(0.25 * 1.0 - 0.5 * r1)
    close(Y.hi[:2, 0, 0, 0], [f0, f1])
    close(Y.hi[:2, 1, 0, 0], [r0, r1])
    close(Y_h.hi[:, 0, 0], [f1, r0])
    expected_unspecified = np.zeros((3, 2, 2, 1), dtype=bool)
    expected_unspecified[2, :, 0] = True  # past the length 2
    expected_unspecified[:, :, 1] = True  # the empty sequence
    np.testing.assert_array_equal(Y.unspecified, expected_unspecified)
    assert np.isnan(Y.hi[Y.unspecified]).all()
    np.testing.assert_array_equal(Y_h.unspecified[:, :, 0], [[False, True], [False, True]])
    assert set(Y.reasons) == {"sequence_lens.beyond_length"}
    assert set(Y_h.reasons) == {"sequence_lens.zero_length"}
    assert "sequence_lens" in Y.reasons["sequence_lens.beyond_length"]


def test_sequence_lens_full_length_is_not_an_ambiguity():
    result = evaluate("RNN", {"hidden_size": 1}, X=[[[1.0]], [[2.0]]], W=[[[0.5]]],
                      R=[[[0.25]]], sequence_lens=[2])
    assert result.ambiguities == []
    assert not result.readings[0].outputs["Y"].unspecified.any()


def test_clip_bounds_the_activation_input():
    out = single(evaluate("RNN", {"hidden_size": 2, "clip": 1.0}, X=[[[3.0]]],
                          W=[[[1.0], [-0.25]]], R=[[[0.0, 0.0], [0.0, 0.0]]]))
    close(out["Y_h"], [[[math.tanh(1.0), math.tanh(-0.75)]]])


def test_clip_zero_clamps_in_onnx_and_is_off_in_openvino():
    case = dict(X=[[[0.5]]], W=[[[1.0]]], R=[[[0.0]]])
    close(single(evaluate("RNN", {"hidden_size": 1, "clip": 0.0}, **case))["Y_h"], [[[0.0]]])
    result = evaluate("RNN", {"hidden_size": 1, "clip": 0.0}, profile="openvino", **case)
    close(single(result)["Y_h"], [[[math.tanh(0.5)]]])
    assert any("clip=0" in note for note in result.notes)


# -- GRU ------------------------------------------------------------------------------------------

GRU_CASE = dict(
    X=[[[1.0]]],
    W=[[[0.5], [-1.0], [2.0]]],  # z, r, h
    R=[[[0.25], [0.5], [-0.75]]],
    B=[[0.125, 0.25, -0.5, 0.0625, -0.125, 0.375]],  # Wbz Wbr Wbh Rbz Rbr Rbh
    initial_h=[[[0.5]]],
)


def _gru_by_hand(linear_before_reset):
    h = 0.5
    z = sigmoid(0.5 + 0.25 * h + 0.125 + 0.0625)
    r = sigmoid(-1.0 + 0.5 * h + 0.25 - 0.125)
    if linear_before_reset:
        hidden = math.tanh(2.0 + r * (-0.75 * h + 0.375) - 0.5)
    else:
        hidden = math.tanh(2.0 + (r * h) * -0.75 + 0.375 - 0.5)
    return (1 - z) * hidden + z * h


@pytest.mark.parametrize("linear_before_reset", [0, 1])
def test_gru_linear_before_reset(linear_before_reset):
    out = single(evaluate("GRU", {"hidden_size": 1, "linear_before_reset": linear_before_reset},
                          **GRU_CASE))
    close(out["Y_h"], [[[_gru_by_hand(linear_before_reset)]]])


def test_gru_linear_before_reset_readings_differ_here():
    assert abs(_gru_by_hand(0) - _gru_by_hand(1)) > 1e-3


def test_gru_custom_activations():
    out = single(evaluate("GRU", {"hidden_size": 1, "activations": ["HardSigmoid", "Softsign"]},
                          **GRU_CASE))
    h = 0.5
    hs = lambda x: min(max(float(np.float32(0.2)) * x + 0.5, 0.0), 1.0)  # noqa: E731
    z = hs(0.5 + 0.25 * h + 0.125 + 0.0625)
    r = hs(-1.0 + 0.5 * h + 0.25 - 0.125)
    pre = 2.0 + (r * h) * -0.75 + 0.375 - 0.5
    close(out["Y_h"], [[[(1 - z) * (pre / (1 + abs(pre))) + z * h]]])


# -- LSTM -----------------------------------------------------------------------------------------

LSTM_CASE = dict(
    X=[[[1.0]]],
    W=[[[0.5], [-0.25], [1.5], [0.75]]],  # i, o, f, c
    R=[[[0.125], [0.25], [-0.5], [1.0]]],
    B=[[0.0625, 0.125, -0.25, 0.5, 0.0, 0.0, 0.0, -0.125]],
    initial_h=[[[0.5]]],
    initial_c=[[[-1.5]]],
)


def _lstm_by_hand(P=(0.0, 0.0, 0.0), coupling=None, peephole_new_cell=True, clip=None,
                  clip_h=False):
    pi, po, pf = P
    h, c = 0.5, -1.5
    cl = (lambda v: v) if clip is None else (lambda v: min(max(v, -clip), clip))
    i = sigmoid(cl(0.5 + 0.125 * h + pi * c + 0.0625))
    f = sigmoid(cl(1.5 - 0.5 * h + pf * c - 0.25))
    if coupling == "f=1-i":
        f = 1 - i
    elif coupling == "i=1-f":
        i = 1 - f
    g = math.tanh(cl(0.75 + 1.0 * h + 0.5 - 0.125))
    C = f * c + i * g
    o = sigmoid(cl(-0.25 + 0.25 * h + po * (C if peephole_new_cell else c) + 0.125))
    H = o * math.tanh(cl(C) if clip_h else C)
    return H, C


def test_lstm_gate_order_iofc():
    out = single(evaluate("LSTM", {"hidden_size": 1}, **LSTM_CASE))
    H, C = _lstm_by_hand()
    close(out["Y_h"], [[[H]]])
    close(out["Y_c"], [[[C]]])
    close(out["Y"], [[[[H]]]])


def test_lstm_peepholes_use_ct_for_the_output_gate():
    P = (0.5, -2.0, 0.25)  # order i, o, f
    out = single(evaluate("LSTM", {"hidden_size": 1}, P=[list(P)], **LSTM_CASE))
    H, C = _lstm_by_hand(P)
    close(out["Y_h"], [[[H]]])
    close(out["Y_c"], [[[C]]])
    assert abs(H - _lstm_by_hand(P, peephole_new_cell=False)[0]) > 1e-3


def test_lstm_input_forget_readings():
    P = (0.5, -2.0, 0.25)
    result = evaluate("LSTM", {"hidden_size": 1, "input_forget": 1}, P=[list(P)], **LSTM_CASE)
    assert result.ambiguities == ["input_forget"]
    assert [r.name for r in result.readings] == ["f=1-i", "i=1-f"]
    for reading in result.readings:
        H, C = _lstm_by_hand(P, coupling=reading.name)
        close(reading.outputs["Y_h"].hi, [[[H]]])
        close(reading.outputs["Y_c"].hi, [[[C]]])
        assert reading.choices == {"input_forget": reading.name}
    # the coupled gate's own peephole is unused: Pf does not matter under f=1-i, Pi under i=1-f
    other = evaluate("LSTM", {"hidden_size": 1, "input_forget": 1}, P=[[0.5, -2.0, 7.0]],
                     **LSTM_CASE)
    np.testing.assert_array_equal(other.reading("f=1-i").outputs["Y_h"].hi,
                                  result.reading("f=1-i").outputs["Y_h"].hi)
    assert other.reading("i=1-f").outputs["Y_h"].hi != result.reading("i=1-f").outputs["Y_h"].hi


def test_lstm_input_forget_per_profile():
    case = dict(P=[[0.5, -2.0, 0.25]], **LSTM_CASE)
    for profile, name in (("directml", "f=1-i"), ("openvino", "i=1-f")):
        result = evaluate("LSTM", {"hidden_size": 1, "input_forget": 1}, profile=profile, **case)
        assert "input_forget" not in result.ambiguities
        H, _ = _lstm_by_hand((0.5, -2.0, 0.25), coupling=name)
        if profile == "openvino":
            close(single(result)["Y_h"], [[[H]]])
        else:  # DirectML's older doc puts Ct-1 in the output peephole: two readings
            assert [r.name for r in result.readings] == ["po-ct", "po-ct1"]
            close(result.reading("po-ct").outputs["Y_h"].hi, [[[H]]])
            H1, _ = _lstm_by_hand((0.5, -2.0, 0.25), coupling=name, peephole_new_cell=False)
            close(result.reading("po-ct1").outputs["Y_h"].hi, [[[H1]]])


def test_lstm_clip_h_readings():
    result = evaluate("LSTM", {"hidden_size": 1, "clip": 0.5}, **LSTM_CASE)
    assert result.ambiguities == ["clip_h"]
    assert [r.name for r in result.readings] == ["noclip-h", "clip-h"]
    for reading, clip_h in zip(result.readings, (False, True)):
        H, C = _lstm_by_hand(clip=0.5, clip_h=clip_h)
        close(reading.outputs["Y_h"].hi, [[[H]]])
        close(reading.outputs["Y_c"].hi, [[[C]]])  # Ct itself is never clipped


def test_lstm_clip_h_collapses_when_the_cell_stays_inside():
    result = evaluate("LSTM", {"hidden_size": 1, "clip": 8.0}, **LSTM_CASE)
    assert result.ambiguities == ["clip_h"]
    assert [r.name for r in result.readings] == ["default"]
    assert "give the same outputs" in result.readings[0].description


def test_lstm_initial_c_absent_is_zero():
    case = dict(LSTM_CASE)
    del case["initial_c"]
    with_zero = dict(LSTM_CASE, initial_c=[[[0.0]]])
    np.testing.assert_array_equal(single(evaluate("LSTM", {"hidden_size": 1}, **case))["Y_c"],
                                  single(evaluate("LSTM", {"hidden_size": 1}, **with_zero))["Y_c"])


# -- layout ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("op,gates", [("RNN", 1), ("GRU", 3), ("LSTM", 4)])
def test_layout_1_is_the_transposed_layout_0(op, gates):
    rng = np.random.default_rng(5)
    S, B, I, H, D = 3, 2, 2, 2, 2
    x = rng.uniform(-1, 1, (S, B, I))
    h0 = rng.uniform(-1, 1, (D, B, H))
    common = dict(W=rng.uniform(-1, 1, (D, gates * H, I)), R=rng.uniform(-1, 1, (D, gates * H, H)),
                  sequence_lens=[3, 1])
    attributes = {"hidden_size": H, "direction": "bidirectional"}
    zero = evaluate(op, dict(attributes, layout=0), X=x, initial_h=h0, **common)
    one = evaluate(op, dict(attributes, layout=1), X=x.swapaxes(0, 1), initial_h=h0.swapaxes(0, 1),
                   **common)
    y0, y1 = zero.readings[0].outputs, one.readings[0].outputs
    assert y1["Y"].shape == (B, S, D, H)
    np.testing.assert_array_equal(y1["Y"].hi, y0["Y"].hi.transpose(2, 0, 1, 3))
    np.testing.assert_array_equal(y1["Y"].unspecified, y0["Y"].unspecified.transpose(2, 0, 1, 3))
    for name in y0:
        if name != "Y":
            assert y1[name].shape == (B, D, H)
            np.testing.assert_array_equal(y1[name].hi, y0[name].hi.transpose(1, 0, 2))
