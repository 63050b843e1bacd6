"""Ambiguities and readings: which apply, how readings are named, merged and described."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import oracles
from oracles import points, profiles
from tests.unit.oracle.helpers import evaluate, single

f32 = lambda v: float(np.float32(v))  # noqa: E731

RNN_BIDIRECTIONAL = dict(X=[[[-1.0]]], W=[[[1.0]], [[1.0]]], R=[[[0.0]], [[0.0]]])


def test_alpha_consumption_readings_differ():
    # Sigmoid takes no alpha: popped gives 0.25 to LeakyRelu, positional gives it alpha[1]
    # (absent), so the LeakyRelu default 0.01.
    result = evaluate("RNN", {"hidden_size": 1, "direction": "bidirectional",
                              "activations": ["Sigmoid", "LeakyRelu"], "activation_alpha": [0.25]},
                      **RNN_BIDIRECTIONAL)
    assert result.ambiguities == ["alpha_beta_consumption", "activation_defaults"]
    assert [r.name for r in result.readings] == ["ab-pop", "ab-pos"]
    assert result.reading("ab-pop").outputs["Y_h"].hi[1, 0, 0] == -0.25
    assert result.reading("ab-pos").outputs["Y_h"].hi[1, 0, 0] == -f32(0.01)
    assert result.reading("ab-pop").choices == {"alpha_beta_consumption": "ab-pop"}
    for reading in result.readings:
        assert reading.outputs["Y_h"].hi[0, 0, 0] == pytest.approx(0.2689414213699951)


def test_alpha_consumption_not_listed_when_both_readings_agree():
    result = evaluate("RNN", {"hidden_size": 1, "direction": "bidirectional",
                              "activations": ["LeakyRelu", "LeakyRelu"],
                              "activation_alpha": [0.25, 0.5]},
                      **RNN_BIDIRECTIONAL)
    assert result.ambiguities == []
    np.testing.assert_array_equal(single(result)["Y_h"][:, 0, 0], [-0.25, -0.5])


def test_missing_affine_parameters_make_a_reading_unspecified():
    # popped: Affine gets alpha 2, beta 0.5; positional: Affine's own alpha[1]/beta[1] are absent
    result = evaluate("RNN", {"hidden_size": 1, "direction": "bidirectional",
                              "activations": ["Tanh", "Affine"], "activation_alpha": [2.0],
                              "activation_beta": [0.5]},
                      **RNN_BIDIRECTIONAL)
    pop, pos = result.reading("ab-pop"), result.reading("ab-pos")
    assert pop.outputs["Y_h"].hi[1, 0, 0] == -1.5
    assert not pop.outputs["Y"].unspecified.any()
    for name, expected in pos.outputs.items():
        np.testing.assert_array_equal(expected.unspecified[..., 0, :, :] if name == "Y" else
                                      expected.unspecified[0], False)
        np.testing.assert_array_equal(expected.unspecified[..., 1, :, :] if name == "Y" else
                                      expected.unspecified[1], True)
        assert list(expected.reasons) == ["activation_defaults.missing"]
        assert "Affine alpha and beta (reverse direction)" in expected.reasons[
            "activation_defaults.missing"]


def test_scaled_tanh_without_parameters_is_unspecified():
    result = evaluate("RNN", {"hidden_size": 1, "activations": ["ScaledTanh"]},
                      X=[[[0.5]]], W=[[[1.0]]], R=[[[0.0]]])
    assert result.ambiguities == ["activation_defaults"]
    expected = result.readings[0].outputs["Y_h"]
    assert expected.unspecified.all() and np.isnan(expected.hi).all()
    assert "ScaledTanh" in expected.reasons["activation_defaults.missing"]


def test_defaults_are_not_an_ambiguity_when_parameters_are_given():
    result = evaluate("RNN", {"hidden_size": 1, "activations": ["ScaledTanh"],
                              "activation_alpha": [2.0], "activation_beta": [0.5]},
                      X=[[[0.5]]], W=[[[1.0]]], R=[[[0.0]]])
    assert result.ambiguities == []
    assert single(result)["Y_h"][0, 0, 0] == pytest.approx(2 * np.tanh(0.25), rel=1e-15)


def test_two_ambiguities_give_the_cartesian_product_named_by_both():
    rng = np.random.default_rng(0)
    H = 2
    result = evaluate("LSTM", {"hidden_size": H, "input_forget": 1, "clip": 0.25},
                      X=rng.uniform(-1, 1, (2, 1, 2)), W=rng.uniform(-1, 1, (1, 4 * H, 2)),
                      R=rng.uniform(-1, 1, (1, 4 * H, H)), initial_c=[[[3.0, -3.0]]])
    assert result.ambiguities == ["input_forget", "clip_h"]
    assert [r.name for r in result.readings] == [
        "f=1-i+noclip-h", "i=1-f+noclip-h", "f=1-i+clip-h", "i=1-f+clip-h"]
    assert result.readings[3].choices == {"input_forget": "i=1-f", "clip_h": "clip-h"}
    assert "it = 1 - ft" in result.readings[3].description
    values = [b"".join(e.hi.tobytes() for e in r.outputs.values()) for r in result.readings]
    assert len(set(values)) == 4


def test_reading_without_ambiguity_says_so():
    result = evaluate("RNN", {"hidden_size": 1}, X=[[[0.5]]], W=[[[1.0]]], R=[[[0.0]]])
    assert result.readings[0].name == "default"
    assert "no ambiguity applies" in result.readings[0].description


def test_openvino_takes_one_shared_activation_set():
    result = evaluate("RNN", {"hidden_size": 1, "direction": "bidirectional",
                              "activations": ["Relu"]}, profile="openvino", **RNN_BIDIRECTIONAL)
    np.testing.assert_array_equal(single(result)["Y_h"][:, 0, 0], [0.0, 0.0])
    with pytest.raises(oracles.OracleError, match="Consider repeating the list"):
        evaluate("RNN", {"hidden_size": 1, "direction": "bidirectional", "activations": ["Relu"]},
                 **RNN_BIDIRECTIONAL)


def test_rnn_schema_default_pair_for_one_direction():
    result = evaluate("RNN", {"hidden_size": 1, "activations": ["Tanh", "Tanh"]},
                      X=[[[0.5]]], W=[[[1.0]]], R=[[[0.0]]])
    assert single(result)["Y_h"][0, 0, 0] == pytest.approx(np.tanh(0.5), rel=1e-15)
    assert any("['Tanh', 'Tanh']" in note for note in result.notes)


def test_a_profile_is_data(monkeypatch):
    """A spec family that zero-fills Y past a sequence's length is a table edit, not code."""
    zeros = points.Choice("seq-zeros", {"beyond_length": "zeros", "zero_length": "zeros",
                                          "reverse_start": "length-1"}, "zero-filled")
    point = dataclasses.replace(profiles.ONNX.points["sequence_lens"], choices=(zeros,),
                                ambiguous=False)
    custom = dataclasses.replace(profiles.ONNX, name="zero-fill",
                                 points={**profiles.ONNX.points, "sequence_lens": point})
    points._check(custom)
    monkeypatch.setitem(profiles.PROFILES, "zero-fill", custom)
    result = evaluate("RNN", {"hidden_size": 1}, profile="zero-fill",
                      X=[[[1.0], [1.0]], [[1.0], [1.0]]], W=[[[1.0]]], R=[[[0.0]]],
                      sequence_lens=[1, 0])
    out = single(result)
    np.testing.assert_array_equal(out["Y"][:, 0, :, 0], [[np.tanh(1.0), 0.0], [0.0, 0.0]])
    np.testing.assert_array_equal(out["Y_h"][0, :, 0], [np.tanh(1.0), 0.0])
    assert result.ambiguities == []


def test_distinguishing_points_are_those_that_split_outputs():
    from oracles.readings import _distinguishing

    multi = ["A", "B"]
    by_a = {("a1", "b1"): 1, ("a1", "b2"): 1, ("a2", "b1"): 2, ("a2", "b2"): 2}
    assert _distinguishing(multi, by_a) == ["A"]
    corner = {("a1", "b1"): 1, ("a2", "b1"): 2, ("a1", "b2"): 2, ("a2", "b2"): 2}
    assert _distinguishing(multi, corner) == ["A", "B"]
    assert _distinguishing(multi, {k: 0 for k in by_a}) == []


def test_a_shared_activation_set_shares_its_parameters(monkeypatch):
    names = points.Choice("names", ("Relu", "Tanh", "Sigmoid", "LeakyRelu"), "plus LeakyRelu")
    point = dataclasses.replace(profiles.OPENVINO.points["activation_names"], choices=(names,))
    custom = dataclasses.replace(profiles.OPENVINO, name="openvino-leaky",
                                 points={**profiles.OPENVINO.points, "activation_names": point})
    monkeypatch.setitem(profiles.PROFILES, "openvino-leaky", custom)
    result = evaluate("RNN", {"hidden_size": 1, "direction": "bidirectional",
                              "activations": ["LeakyRelu"], "activation_alpha": [0.5]},
                      profile="openvino-leaky", **RNN_BIDIRECTIONAL)
    np.testing.assert_array_equal(single(result)["Y_h"][:, 0, 0], [-0.5, -0.5])
    assert any("shared by both directions" in note for note in result.notes)
