"""±Inf and NaN inputs: IEEE 754 semantics at every operation of the documented formulas.

Hand-computed cases for every op (a cell is the same op with S = 1): an infinity through tanh and
sigmoid gates with the exact finite recurrence after it, NaN poisoning exactly its batch row from
its step on, 0 x Inf and Inf - Inf in a dot product, an infinite initial state, inputs past
sequence_lens that are never read; the points IEEE leaves open as readings or as unspecified
elements with reasons; the cache; both precisions; and the classes and bounds against the simulated
correct implementations of test_precision_model.py. Expected finite values come from mpmath at 200
bits, so the oracle's correctly rounded hi must equal them exactly.

This module holds the unit tier's tests of it (no runtime, no process); the others:
tests/corpus/oracle/test_nonfinite.py."""

from __future__ import annotations

import mpmath
import numpy as np
import pytest

import oracles
from tests.unit.oracle.helpers import evaluate

INF, NAN = np.inf, np.nan
VANISHING = "ieee754.vanishing_factor"
DISAGREES = "ieee754.model_disagrees"


@pytest.fixture(autouse=True)
def bits_200():
    """Hand computations at 200 bits (the oracle keeps no global mpmath state; other tests may)."""
    with mpmath.workprec(200):
        yield


def tanh(x):
    return mpmath.tanh(mpmath.mpf(x))


def sigmoid(x):
    return 1 / (1 + mpmath.exp(-mpmath.mpf(x)))


def d(value) -> float:
    """The float64 nearest an mpmath value (mp.prec = 200: correctly rounded)."""
    return float(value)


def names(result):
    return sorted(r.name for r in result.readings)


def check_nonfinite_bounds(result):
    """Specified ±Inf/NaN elements carry bound 0; specified finite ones a bound that is not NaN;
    unspecified ones NaN (hi and bound)."""
    for reading in result.readings:
        for name, e in reading.outputs.items():
            spec = ~e.unspecified
            assert not np.isnan(e.bound[spec]).any(), (reading.name, name)
            assert np.all(e.bound[spec & ~np.isfinite(e.hi)] == 0), (reading.name, name)
            assert np.all(e.lo[spec & ~np.isfinite(e.hi)] == 0), (reading.name, name)
            assert np.isnan(e.hi[e.unspecified]).all() and np.isnan(e.bound[e.unspecified]).all()


# -- an infinity saturates tanh and sigmoid; the recurrence goes on finite and exact ---------------

@pytest.mark.parametrize("sign", [1, -1])
def test_rnn_inf_in_x_saturates_tanh_then_runs_finite(sign):
    # Ht = tanh(Xt + 0.5 Ht-1): t0 finite, t1 = ±Inf, t2 finite again
    result = evaluate("RNN", {"hidden_size": 1}, X=[[[0.5]], [[sign * INF]], [[0.25]]],
                      W=[[[1.0]]], R=[[[0.5]]])
    assert result.ambiguities == ["tanh_at_infinity"]
    other = "tanh-nan-pos" if sign > 0 else "tanh-nan-neg"
    assert names(result) == sorted(["tanh-limit", other])
    y = result.reading("tanh-limit").outputs["Y"]
    h0 = tanh(0.5)
    h2 = tanh(0.25 + 0.5 * sign)
    assert list(y.hi[:, 0, 0, 0]) == [d(h0), float(sign), d(h2)]
    assert not y.unspecified.any() and y.bound[1, 0, 0, 0] > 0 and np.isfinite(y.bound).all()
    assert result.reading("tanh-limit").outputs["Y_h"].hi[0, 0, 0] == d(h2)
    nan = result.reading(other).outputs
    assert nan["Y"].hi[0, 0, 0, 0] == d(h0)
    assert np.isnan(nan["Y"].hi[1:]).all() and not nan["Y"].unspecified.any()
    assert np.isnan(nan["Y_h"].hi).all() and np.all(nan["Y_h"].bound == 0)
    check_nonfinite_bounds(result)
    assert result.certificate["agree_bits"] >= 120


def test_gru_inf_in_x_through_sigmoid_and_tanh_gates():
    # t1: X = +Inf with Wz = -1, Wr = 1, Wh = 1: z = sigmoid(-Inf) = 0, r = 1, h~ = tanh(+Inf) = 1,
    # H1 = (1 - 0)·1 + 0·H0 = 1; t0 and t2 finite
    W, R, B = [[[-1.0], [1.0], [1.0]]], [[[0.5], [0.25], [-0.5]]], [[0.1, 0.2, 0.3, 0, 0, 0]]
    result = evaluate("GRU", {"hidden_size": 1}, X=[[[0.5]], [[INF]], [[-0.75]]], W=W, R=R, B=B,
                      initial_h=[[[0.25]]])
    assert set(result.ambiguities) == {"tanh_at_infinity", "sigmoid_at_infinity"}
    limit = result.reading("tanh-limit+sigmoid-limit").outputs

    def step(x, h):
        z = sigmoid(-x + 0.5 * h + 0.1)
        r = sigmoid(x + 0.25 * h + 0.2)
        hh = tanh(x + (r * h) * -0.5 + 0.3)
        return (1 - z) * hh + z * h

    h0 = step(mpmath.mpf(0.5), mpmath.mpf(0.25))
    h1 = mpmath.mpf(1)
    h2 = step(mpmath.mpf(-0.75), h1)
    assert list(limit["Y"].hi[:, 0, 0, 0]) == [d(h0), 1.0, d(h2)]
    assert limit["Y_h"].hi[0, 0, 0] == d(h2) and not limit["Y"].unspecified.any()
    for reading in result.readings:  # every other reading: NaN from t1 on, specified
        if reading.name != "tanh-limit+sigmoid-limit":
            assert np.isnan(reading.outputs["Y"].hi[1:]).all(), reading.name
    check_nonfinite_bounds(result)


def test_lstm_inf_in_x_saturates_every_gate():
    # t0: X = +Inf, W = (i 1, o 1, f -1, c 1): i = o = 1, f = 0, c~ = 1: C = 0·C0 + 1 = 1,
    # H = 1·tanh(1); t1 finite. C0 finite, so f = 0 times it is 0, not NaN.
    W = [[[1.0], [1.0], [-1.0], [1.0]]]
    R = [[[0.5], [-0.25], [0.125], [0.75]]]
    result = evaluate("LSTM", {"hidden_size": 1}, X=[[[INF]], [[0.5]]], W=W, R=R,
                      initial_h=[[[0.5]]], initial_c=[[[-0.5]]])
    limit = result.reading("tanh-limit+sigmoid-limit").outputs
    c1, h1 = mpmath.mpf(1), tanh(1)
    x = mpmath.mpf(0.5)
    i, o, f = sigmoid(x + 0.5 * h1), sigmoid(x - 0.25 * h1), sigmoid(-x + 0.125 * h1)
    c2 = f * c1 + i * tanh(x + 0.75 * h1)
    h2 = o * tanh(c2)
    assert list(limit["Y"].hi[:, 0, 0, 0]) == [d(h1), d(h2)]
    assert limit["Y_c"].hi[0, 0, 0] == d(c2)
    assert not any(e.unspecified.any() for e in limit.values())
    check_nonfinite_bounds(result)


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
def test_the_cell_form_is_the_op_with_one_step(op):
    G = {"RNN": 1, "GRU": 3, "LSTM": 4}[op]
    result = evaluate(op, {"hidden_size": 1}, X=[[[NAN]]], W=[[[1.0]] * G], R=[[[0.5]] * G])
    assert names(result) == ["default"] and result.ambiguities == []
    for e in result.readings[0].outputs.values():
        assert np.isnan(e.hi).all() and not e.unspecified.any() and np.all(e.bound == 0)


# -- NaN poisons its row from its step on, nothing else --------------------------------------------

@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
def test_nan_at_step_1_of_3_poisons_exactly_its_row(op):
    G = {"RNN": 1, "GRU": 3, "LSTM": 4}[op]
    rng = np.random.default_rng(3)
    X = rng.uniform(-1, 1, (3, 2, 2))
    X[1, 0, 1] = NAN
    tensors = {"X": X, "W": rng.uniform(-1, 1, (2, 2 * G, 2)),
               "R": rng.uniform(-1, 1, (2, 2 * G, 2)), "B": rng.uniform(-1, 1, (2, 4 * G))}
    result = evaluate(op, {"hidden_size": 2, "direction": "bidirectional"}, **tensors)
    assert names(result) == ["default"] and result.ambiguities == []
    out = result.readings[0].outputs
    nan = np.zeros((3, 2, 2, 2), dtype=bool)
    nan[1:, 0, 0] = True   # forward, batch 0: t = 1, 2
    nan[:2, 1, 0] = True   # reverse, batch 0: t = 1, 0 (it reads t = 2 first)
    np.testing.assert_array_equal(np.isnan(out["Y"].hi), nan)
    assert not out["Y"].unspecified.any()
    states = np.array([[True, False], [True, False]])[..., None].repeat(2, axis=-1)
    for name in out:
        if name != "Y":
            np.testing.assert_array_equal(np.isnan(out[name].hi), states)
    # the finite elements are what the same case gives with that row changed: unaffected
    clean = dict(tensors, X=np.where(np.isnan(X), 0.0, X))
    clean_out = evaluate(op, {"hidden_size": 2, "direction": "bidirectional"},
                         **clean).readings[0].outputs
    for name in out:  # batch 1, every step and direction
        np.testing.assert_array_equal(out[name].hi[..., 1, :], clean_out[name].hi[..., 1, :])
    np.testing.assert_array_equal(out["Y"].hi[0, 0, 0], clean_out["Y"].hi[0, 0, 0])
    np.testing.assert_array_equal(out["Y"].hi[2, 1, 0], clean_out["Y"].hi[2, 1, 0])
    check_nonfinite_bounds(result)


# -- dot products ------------------------------------------------------------------------------------

def test_zero_times_inf_in_a_dot_is_nan_and_inf_times_nonzero_saturates():
    X = [[[INF, 1.0]]]
    nan = evaluate("RNN", {"hidden_size": 1}, X=X, W=[[[0.0, 1.0]]], R=[[[0.5]]])
    assert names(nan) == ["default"] and np.isnan(nan.readings[0].outputs["Y_h"].hi).all()
    sat = evaluate("RNN", {"hidden_size": 1}, X=X, W=[[[-2.0, 1.0]]], R=[[[0.5]]])
    assert sat.reading("tanh-limit").outputs["Y_h"].hi[0, 0, 0] == -1.0


def test_plus_and_minus_inf_in_one_dot_are_nan():
    X = [[[INF, -INF]]]
    nan = evaluate("RNN", {"hidden_size": 1}, X=X, W=[[[1.0, 1.0]]], R=[[[0.5]]])
    assert np.isnan(nan.readings[0].outputs["Y_h"].hi).all() and nan.ambiguities == []
    same = evaluate("RNN", {"hidden_size": 1}, X=X, W=[[[1.0, -1.0]]], R=[[[0.5]]])
    assert same.reading("tanh-limit").outputs["Y_h"].hi[0, 0, 0] == 1.0   # Inf + Inf


def test_inf_in_initial_h():
    # unit 0: 0.5·Inf + 0·1 = Inf -> tanh 1; unit 1: 0·Inf + 0.5·1 = NaN (0 x Inf in the dot)
    result = evaluate("RNN", {"hidden_size": 2}, X=[[[0.25]]], W=[[[1.0], [1.0]]],
                      R=[[[0.5, 0.0], [0.0, 0.5]]], initial_h=[[[INF, 1.0]]])
    y = result.reading("tanh-limit").outputs["Y_h"].hi[0, 0]
    assert y[0] == 1.0 and np.isnan(y[1])


def test_gru_inf_in_initial_h_carried_by_a_closed_update_gate():
    # z = sigmoid(0.5 + Inf) = 1, h~ = tanh(0.5 + (1·Inf)·1) = 1: H = 0·1 + 1·Inf = Inf, certain
    # (1 - z = 0 meets the finite h~); under sigmoid-nan-pos, z = NaN: NaN
    result = evaluate("GRU", {"hidden_size": 1}, X=[[[1.0]]], W=[[[0.5]] * 3], R=[[[1.0]] * 3],
                      initial_h=[[[INF]]])
    y = result.reading("tanh-limit+sigmoid-limit").outputs["Y_h"]
    assert y.hi[0, 0, 0] == INF and not y.unspecified.any() and y.bound[0, 0, 0] == 0
    assert np.isnan(result.reading("tanh-limit+sigmoid-nan-pos").outputs["Y_h"].hi).all()


def test_inf_in_initial_c_with_an_open_forget_gate():
    # f = sigmoid(0) = 1/2: C = Inf; H = o·tanh(Inf) = o·1 under tanh-limit
    W = [[[0.0], [0.0], [0.0], [1.0]]]
    result = evaluate("LSTM", {"hidden_size": 1}, X=[[[0.5]]], W=W, R=[[[0.0]] * 4],
                      initial_c=[[[INF]]])
    out = result.reading("tanh-limit").outputs
    assert out["Y_c"].hi[0, 0, 0] == INF and out["Y_c"].bound[0, 0, 0] == 0
    assert out["Y_h"].hi[0, 0, 0] == 0.5 and out["Y_h"].bound[0, 0, 0] > 0
    assert np.isnan(result.reading("tanh-nan-pos").outputs["Y_h"].hi).all()


def test_values_past_sequence_lens_are_never_read():
    X = np.array([[[0.5], [1.0]], [[0.25], [INF]], [[NAN], [-INF]]])
    tensors = {"W": [[[1.0]], [[0.5]]], "R": [[[0.5]], [[0.25]]], "sequence_lens": [2, 1]}
    attrs = {"hidden_size": 1, "direction": "bidirectional"}
    result = evaluate("RNN", attrs, X=X, **tensors)
    clean = evaluate("RNN", attrs, X=np.where(np.isfinite(X), X, 0.0), **tensors)
    assert result.ambiguities == ["sequence_lens"] and names(result) == ["default"]
    for name, e in result.readings[0].outputs.items():
        c = clean.readings[0].outputs[name]
        np.testing.assert_array_equal(e.hi, c.hi)
        np.testing.assert_array_equal(e.unspecified, c.unspecified)
        np.testing.assert_array_equal(e.bound, c.bound)
        assert np.isfinite(e.hi[~e.unspecified]).all()


# -- the points IEEE leaves open: readings ------------------------------------------------------------

NAN_PRE = {"X": [[[INF, 1.0]], [[0.5, 0.5]]], "W": [[[0.0, 1.0]]], "R": [[[0.5]]]}  # 0·Inf: NaN


@pytest.mark.parametrize("activation,alpha,beta,readings", [
    ("Relu", None, None, {"relu-nan": NAN, "relu-zero": 0.0}),
    ("ThresholdedRelu", [0.25], None, {"thr-zero": 0.0, "thr-nan": NAN}),
    ("HardSigmoid", [0.5], [0.25], {"hs-nan": NAN, "hs-zero": 0.0, "hs-one": 1.0}),
])
def test_nan_at_max_min_and_comparisons_is_a_reading(activation, alpha, beta, readings):
    attrs = {"hidden_size": 1, "activations": [activation]}
    if alpha:
        attrs["activation_alpha"] = alpha
    if beta:
        attrs["activation_beta"] = beta
    result = evaluate("RNN", attrs, **NAN_PRE)
    point = {"Relu": "nan_relu", "ThresholdedRelu": "nan_thresholded_relu",
             "HardSigmoid": "nan_hard_sigmoid"}[activation]
    assert result.ambiguities[-1] == point and names(result) == sorted(readings)
    for name, value in readings.items():
        y = result.reading(name).outputs["Y"]
        assert y.hi[0, 0, 0, 0] == value or (np.isnan(value) and np.isnan(y.hi[0, 0, 0, 0]))
        assert not y.unspecified.any()
        assert result.reading(name).choices == {point: name}
    check_nonfinite_bounds(result)


def test_nan_clip_is_a_reading():
    result = evaluate("RNN", {"hidden_size": 1, "clip": 1.0}, **NAN_PRE)
    assert result.ambiguities == ["nan_clip"]
    assert names(result) == ["clip-high", "clip-low", "clip-nan"]
    assert np.isnan(result.reading("clip-nan").outputs["Y"].hi).all()
    for name, c in (("clip-low", -1), ("clip-high", 1)):
        y = result.reading(name).outputs["Y"].hi[:, 0, 0, 0]
        assert list(y) == [d(tanh(c)), d(tanh(0.5 + 0.5 * tanh(c)))]


@pytest.mark.parametrize("activation,at_pos,at_neg,point,others", [
    ("Sigmoid", 1.0, 0.0, "sigmoid_at_infinity", ["sigmoid-nan", "sigmoid-nan-neg",
                                                  "sigmoid-nan-pos"]),
    ("Tanh", 1.0, -1.0, "tanh_at_infinity", ["tanh-nan", "tanh-nan-neg", "tanh-nan-pos"]),
    ("Softsign", 1.0, -1.0, "softsign_at_infinity", ["softsign-nan"]),
])
def test_activations_at_infinity_are_their_limit_or_nan(activation, at_pos, at_neg, point, others):
    # batch 0 meets +Inf, batch 1 -Inf: each sign its limit or NaN, the readings all four
    result = evaluate("RNN", {"hidden_size": 1, "activations": [activation]},
                      X=[[[INF], [-INF]]], W=[[[1.0]]], R=[[[0.5]]])
    assert result.ambiguities == [point]
    limit = point.split("_")[0] + "-limit"
    assert names(result) == sorted([limit] + others)
    np.testing.assert_array_equal(result.reading(limit).outputs["Y"].hi[0, 0, :, 0],
                                  [at_pos, at_neg])
    for name in others:
        y = result.reading(name).outputs["Y"].hi[0, 0, :, 0]
        pos_nan = name.endswith(("-nan", "nan-pos"))
        neg_nan = name.endswith(("-nan", "nan-neg"))
        assert list(np.isnan(y)) == [pos_nan, neg_nan], name


@pytest.mark.parametrize("activation,alpha,beta,expected", [
    ("Relu", None, None, [INF, 0.0]),
    ("LeakyRelu", [0.5], None, [INF, -INF]),
    ("ThresholdedRelu", [0.5], None, [INF, 0.0]),
    ("Elu", [0.5], None, [INF, -0.5]),
    ("Softplus", None, None, [INF, 0.0]),
    ("Affine", [2.0], [1.0], [INF, -INF]),
    ("Affine", [0.0], [1.0], [NAN, NAN]),      # 0 x Inf
    ("HardSigmoid", [0.5], [0.25], [1.0, 0.0]),
    ("ScaledTanh", [2.0], [0.5], [2.0, -2.0]),  # under tanh-limit
])
def test_activation_limits_by_their_formulas(activation, alpha, beta, expected):
    attrs = {"hidden_size": 1, "activations": [activation]}
    if alpha:
        attrs["activation_alpha"] = alpha
    if beta:
        attrs["activation_beta"] = beta
    result = evaluate("RNN", attrs, X=[[[INF], [-INF]]], W=[[[1.0]]], R=[[[0.5]]])
    reading = result.reading("tanh-limit") if activation == "ScaledTanh" else result.readings[0]
    if activation != "ScaledTanh":
        assert names(result) == ["default"]
        assert result.ambiguities in ([], ["thresholded_relu_boundary"])
    np.testing.assert_array_equal(reading.outputs["Y"].hi[0, 0, :, 0], expected)
    check_nonfinite_bounds(result)


def test_gru_update_forms_part_at_an_infinite_candidate():
    # g = Relu: h~ = Relu(+Inf) = Inf; z = sigmoid(-Inf) = 0: (1 - z) Inf + z H = Inf, whereas
    # h~ + z (H - h~) = Inf + z·(-Inf): NaN for z = 0, -Inf or Inf for a z a kernel holds within
    # 4u of 0: unspecified under that reading
    result = evaluate("GRU", {"hidden_size": 1, "activations": ["Sigmoid", "Relu"]},
                      X=[[[INF]]], W=[[[-1.0], [1.0], [1.0]]], R=[[[0.0]] * 3],
                      initial_h=[[[0.5]]])
    assert "gru_update" in result.ambiguities
    convex = result.reading("relu-nan+sigmoid-limit+gru-convex").outputs["Y_h"]
    assert convex.hi[0, 0, 0] == INF and convex.bound[0, 0, 0] == 0
    lerp = result.reading("relu-nan+sigmoid-limit+gru-lerp").outputs["Y_h"]
    assert lerp.unspecified.all() and list(lerp.reasons) == [VANISHING]
    assert "0 x Inf = NaN" in lerp.reasons[VANISHING]


# -- the points IEEE leaves open: unspecified where rounding decides the class -------------------------

def test_forget_gate_at_zero_times_an_infinite_cell_depends_on_rounding():
    # f = sigmoid(-Inf): 0 exactly, but a correct kernel may return anything within 4u of 0
    # (onnxruntime's GRU sigmoid returns -2.4e-7): f·Inf is NaN, -Inf or +Inf
    W = [[[1.0], [1.0], [-1.0], [1.0]]]
    result = evaluate("LSTM", {"hidden_size": 1}, X=[[[INF]]], W=W, R=[[[0.0]] * 4],
                      initial_c=[[[INF]]])
    out = result.reading("sigmoid-limit").outputs
    for e in out.values():
        assert e.unspecified.all() and list(e.reasons) == [VANISHING]
    # an exact zero is certain: f = Relu(-Inf) = 0 exactly, so 0 x Inf = NaN is due
    relu = evaluate("LSTM", {"hidden_size": 1, "activations": ["Relu", "Tanh", "Tanh"]},
                    X=[[[INF]]], W=W, R=[[[0.0]] * 4], initial_c=[[[INF]]])
    for reading in relu.readings:
        y_c = reading.outputs["Y_c"]
        assert np.isnan(y_c.hi).all() and not y_c.unspecified.any(), reading.name


def test_one_minus_a_saturated_gate_times_inf_depends_on_rounding():
    # GRU, g = Relu, Wbh = +Inf: h~ = Inf; z = sigmoid(x·200): 1 - z = e^-200 is positive, so
    # the exact (1 - z)·Inf is Inf, but every dtype rounds z to 1 and 0 x Inf = NaN; the oracle's
    # own 128 and 192 bits round z to 1 too. z = sigmoid(2) leaves 1 - z = 0.12: Inf is due.
    # x = 100: 1 - z = 4e-44 survives 192 bits but not 128: the two precisions disagree on the
    # class, and the element is unspecified for that reason too
    for x, certain in ((200.0, False), (100.0, False), (2.0, True)):
        result = evaluate("GRU", {"hidden_size": 1, "activations": ["Sigmoid", "Relu"]},
                          X=[[[x]]], W=[[[1.0], [1.0], [1.0]]], R=[[[0.0]] * 3],
                          B=[[0.0, 0.0, INF, 0.0, 0.0, 0.0]])
        y = result.readings[0].outputs["Y_h"]
        if certain:
            assert y.hi[0, 0, 0] == INF and not y.unspecified.any()
        else:
            assert y.unspecified.all() and list(y.reasons) == [VANISHING]


def test_a_tainted_state_makes_the_rest_of_its_row_unspecified():
    # t0: f = sigmoid(-Inf) meets C0 = Inf (class open); t1 is finite input, but its state comes
    # from that cell: unspecified too; batch 1 (C0 finite) is unaffected
    W = [[[1.0], [1.0], [-1.0], [1.0]]]
    result = evaluate("LSTM", {"hidden_size": 1}, X=[[[INF], [INF]], [[0.5], [0.5]]], W=W,
                      R=[[[0.5]] * 4], initial_c=[[[INF], [0.25]]])
    out = result.reading("tanh-limit+sigmoid-limit").outputs
    np.testing.assert_array_equal(out["Y"].unspecified[:, 0, :, 0], [[True, False],
                                                                     [True, False]])
    assert np.isfinite(out["Y"].hi[:, 0, 1, 0]).all()


def test_a_product_the_model_underflows_is_unspecified_not_guessed():
    # GRU with f = g = identity (Affine 1, 0), float64: t0 makes z = r = h~ = 1e-200·1e-200 =
    # 1e-400 exactly, so H1 is a positive 1e-400 (hi 0.0), which float64 arithmetic (the model's
    # walk, and a float64 runtime) underflows to 0 with no error charged. t1 = -Inf: the exact r·H1
    # is -Inf, the float64 one -Inf·0 = NaN: the model cannot vouch for the class, the reason says
    identity = {"hidden_size": 1, "activations": ["Affine", "Affine"],
                "activation_alpha": [1.0, 1.0], "activation_beta": [0.0, 0.0]}
    result = evaluate("GRU", identity, X=[[[1e-200]], [[-INF]]], W=[[[1e-200]] * 3],
                      R=[[[1.0]] * 3])
    y = result.readings[0].outputs["Y"]
    assert y.hi[0, 0, 0, 0] == 0.0 and not y.unspecified[0].any()
    assert y.unspecified[1].all() and list(y.reasons) == [DISAGREES]
    exact = oracles.evaluate_mp("GRU", identity, {"X": np.array([[[1e-200]], [[-INF]]]),
                                                  "W": np.array([[[1e-200]] * 3]),
                                                  "R": np.array([[[1.0]] * 3])})["Y"]
    assert 0 < exact[0, 0, 0, 0] < mpmath.mpf(2) ** -1300 and exact[1, 0, 0, 0] == -mpmath.inf


# -- representation: double-double, cache, precisions -------------------------------------------------

def test_to_double_double_of_the_specials():
    from mpmath import libmp

    from oracles.arith import to_double_double
    assert to_double_double(libmp.finf) == (INF, 0.0)
    assert to_double_double(libmp.fninf) == (-INF, 0.0)
    hi, lo = to_double_double(libmp.fnan)
    assert np.isnan(hi) and lo == 0.0


def test_the_cache_round_trips_a_non_finite_result(private_cache):
    tensors = {"X": np.array([[[0.5], [NAN]], [[INF], [0.25]]], np.float32),
               "W": np.array([[[1.0]]], np.float32), "R": np.array([[[-0.5]]], np.float32)}
    attrs = {"hidden_size": 1, "activations": ["Relu"]}
    first = oracles.evaluate("RNN", attrs, tensors)
    second = oracles.evaluate("RNN", attrs, tensors)
    assert not first.from_cache and second.from_cache
    assert second.to_json() == first.to_json()
    for a, b in zip(first.readings, second.readings):
        for name in a.outputs:
            for field in ("hi", "lo", "bound"):
                x, y = getattr(a.outputs[name], field), getattr(b.outputs[name], field)
                assert x.tobytes() == y.tobytes(), (a.name, name, field)   # bit for bit
    hi = first.reading("relu-nan").outputs["Y"].hi
    assert hi[1, 0, 0, 0] == INF and np.isnan(hi[0, 0, 1, 0])


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
def test_both_precisions_agree(op):
    G = {"RNN": 1, "GRU": 3, "LSTM": 4}[op]
    rng = np.random.default_rng(7)
    X = rng.uniform(-1, 1, (4, 3, 2)).astype(np.float32)
    X[1, 0, 0], X[2, 1, 1], X[0, 2, 0] = INF, -INF, NAN
    tensors = {"X": X, "W": rng.uniform(-1, 1, (1, G, 2)).astype(np.float32),
               "R": rng.uniform(-1, 1, (1, G, 1)).astype(np.float32)}
    low = oracles.evaluate(op, {"hidden_size": 1}, tensors, prec=128, cache=False)
    high = oracles.evaluate(op, {"hidden_size": 1}, tensors, prec=256, cache=False)
    assert names(low) == names(high) and low.ambiguities == high.ambiguities
    for a in low.readings:
        b = high.reading(a.name)
        for name in a.outputs:
            x, y = a.outputs[name], b.outputs[name]
            np.testing.assert_array_equal(x.unspecified, y.unspecified)
            np.testing.assert_array_equal(x.hi, y.hi)   # NaN where NaN, the same infinities
    assert low.certificate["agree_bits"] >= 120 and high.certificate["agree_bits"] >= 240
    assert np.isfinite(low.certificate["max_abs_diff"])


def test_evaluate_mp_gives_mpmath_specials():
    out = oracles.evaluate_mp("RNN", {"hidden_size": 1, "activations": ["Relu"]},
                              {"X": np.array([[[INF]], [[NAN]]]), "W": np.array([[[1.0]]]),
                               "R": np.array([[[0.5]]])})
    y = out["Y"][:, 0, 0, 0]
    assert mpmath.isinf(y[0]) and y[0] > 0 and mpmath.isnan(y[1])


def test_layout_1_and_a_finite_problem_is_not_touched():
    X = np.array([[[0.5], [NAN]]])  # layout 1: [batch, seq, input]
    result = evaluate("RNN", {"hidden_size": 1, "layout": 1}, X=X, W=[[[1.0]]], R=[[[0.5]]])
    y = result.readings[0].outputs["Y"]   # [batch, seq, dir, hidden]
    assert y.hi[0, 0, 0, 0] == d(tanh(0.5)) and np.isnan(y.hi[0, 1, 0, 0])
    finite = evaluate("RNN", {"hidden_size": 1}, X=[[[0.5]]], W=[[[1.0]]], R=[[[0.5]]])
    assert finite.ambiguities == [] and "nonfinite" not in finite.precision


# -- against the simulated correct implementations ------------------------------------------------------


