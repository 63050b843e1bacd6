"""Invalid problems raise OracleError: it quotes the bad value, states the constraint, hints."""

from __future__ import annotations

import numpy as np
import pytest

import oracles


def _rnn(**overrides):
    tensors = {"X": np.zeros((2, 3, 4), np.float32), "W": np.zeros((1, 5, 4), np.float32),
               "R": np.zeros((1, 5, 5), np.float32)}
    tensors.update(overrides)
    return {k: v for k, v in tensors.items() if v is not None}


CASES = [
    ("RNN", {"hidden_size": 5}, _rnn(W=np.zeros((1, 6, 4), np.float32)),
     r"W\.shape=\(1, 6, 4\), but should be \(1, 5, 4\) = "
     r"\[num_directions, hidden_size, input_size\]"),
    ("GRU", {"hidden_size": 5}, _rnn(),
     r"W\.shape=\(1, 5, 4\), but should be \(1, 15, 4\) = \[num_directions, 3\*hidden_size"),
    ("RNN", {"hidden_size": 5, "direction": "bidirectional"}, _rnn(),
     r"W\.shape=\(1, 5, 4\), but should be \(2, 5, 4\).*Consider direction='forward'"),
    ("RNN", {"hidden_size": 5}, _rnn(B=np.zeros((1, 5), np.float32)),
     r"B\.shape=\(1, 5\), but should be \(1, 10\) = "
     r"\[num_directions, 2\*hidden_size\] = \[Wb, Rb\]"),
    ("RNN", {"hidden_size": 5}, _rnn(initial_h=np.zeros((1, 2, 5), np.float32)),
     r"initial_h\.shape=\(1, 2, 5\), but should be \(1, 3, 5\)"),
    ("RNN", {"hidden_size": 5, "layout": 1}, _rnn(initial_h=np.zeros((1, 2, 5), np.float32)),
     r"initial_h\.shape=\(1, 2, 5\), but should be \(2, 1, 5\) = \[batch_size, num_directions, "
     r"hidden_size\] \(layout=1\)"),
    ("RNN", {"hidden_size": 5}, _rnn(sequence_lens=np.array([2, 3, 0], np.int32)),
     r"sequence_lens\[1\]=3, but it should satisfy 0 <= sequence_lens\[1\] <= seq_length=2"),
    ("RNN", {"hidden_size": 5}, _rnn(sequence_lens=np.array([2, -1, 0], np.int32)),
     r"sequence_lens\[1\]=-1"),
    ("RNN", {"hidden_size": 5}, _rnn(sequence_lens=np.array([2.0, 1.0, 0.0])),
     r"sequence_lens\.dtype='float64' should be an integer type"),
    ("RNN", {"hidden_size": 5, "activations": ["Tahn"]}, _rnn(),
     r"activations\[0\]='Tahn' is not an activation function of RNN.*Consider 'Tanh'"),
    ("RNN", {"hidden_size": 5, "activations": ["Relu", "Tanh"]}, _rnn(),
     r"has 2 names, but RNN with direction='forward' takes exactly 1.*"
     r"Consider direction='bidirectional'"),
    ("LSTM", {"hidden_size": 5, "direction": "bidirectional",
              "activations": ["Sigmoid", "Tanh", "Tanh"]},
     _rnn(W=np.zeros((2, 20, 4), np.float32), R=np.zeros((2, 20, 5), np.float32)),
     r"has 3 names, but LSTM with direction='bidirectional' takes exactly 6 \(3 per direction, "
     r"forward first\)\. Consider repeating the list for the reverse direction"),
    ("RNN", {"hiden_size": 5}, _rnn(),
     r"attribute 'hiden_size' is not an attribute of RNN.*Consider 'hidden_size'"),
    ("RNN", {"hidden_size": 5, "linear_before_reset": 1}, _rnn(),
     r"attribute 'linear_before_reset' is not an attribute of RNN"),
    ("GRU", {"hidden_size": 5}, _rnn(P=np.zeros((1, 15), np.float32)),
     r"input 'P' is not an input of GRU"),
    ("RNN", {"hidden_size": 5}, _rnn(X=None), r"input 'X' is required by RNN"),
    ("RNN", {"hidden_size": 5, "direction": "Forward"}, _rnn(),
     r"direction='Forward' should be one of \['forward', 'reverse', 'bidirectional'\]\. "
     r"Consider 'forward'"),
    ("RNN", {"hidden_size": 5, "layout": 2}, _rnn(), r"layout=2 should be 0 or 1"),
    ("RNN", {"hidden_size": 0}, _rnn(), r"hidden_size=0 should satisfy hidden_size >= 1"),
    ("RNN", {"hidden_size": 5, "clip": -1.0}, _rnn(), r"clip=-1\.0 should satisfy clip >= 0"),
    ("RNN", {"hidden_size": 5, "clip": float("nan")}, _rnn(), r"clip=nan is not finite"),
    ("RNN", {"hidden_size": 5, "activation_alpha": 0.5}, _rnn(),
     r"activation_alpha=0\.5 should be a list of floats, e\.g\. \[0\.5\]"),
    ("LSTM", {"hidden_size": 5, "input_forget": 2},
     _rnn(W=np.zeros((1, 20, 4), np.float32), R=np.zeros((1, 20, 5), np.float32)),
     r"input_forget=2 should be 0 or 1"),
    ("RNN", {"hidden_size": 5}, _rnn(W=np.zeros((1, 5, 4), np.float64)),
     r"W\.dtype='float64', but X\.dtype='float32'.*Consider casting W to float32"),
    # non-finite tensors are valid (test_nonfinite.py); non-finite FLOAT attributes are refused
    ("RNN", {"hidden_size": 5, "clip": float("inf")}, _rnn(), r"clip=inf is not finite"),
    ("RNN", {"hidden_size": 5, "activations": ["LeakyRelu"], "activation_alpha": [float("-inf")]},
     _rnn(), r"activation_alpha\[0\]=-inf is not finite"),
    ("RNN", {"hidden_size": 5, "activations": ["Affine"], "activation_alpha": [1.0],
             "activation_beta": [1e39]}, _rnn(),
     r"activation_beta\[0\]=1e\+39 rounds to inf as a FLOAT \(float32\)"),
    ("RNN", {"hidden_size": 5}, _rnn(X=np.zeros((2, 3, 4), np.int32)),
     r"X\.dtype='int32' is not a floating type"),
    ("TRNN", {}, _rnn(), r"op='TRNN' is not one of \['RNN', 'GRU', 'LSTM'\]"),
]


@pytest.mark.parametrize("op,attributes,tensors,message", CASES,
                         ids=[f"{i}-{c[0]}" for i, c in enumerate(CASES)])
def test_invalid_problem(op, attributes, tensors, message):
    with pytest.raises(oracles.OracleError, match=message):
        oracles.evaluate(op, attributes, tensors, cache=False)


def test_profile_constraints():
    with pytest.raises(oracles.OracleError, match=r"profile='coreml' is not a known semantics "
                                                  r"profile; it should be one of"):
        oracles.evaluate("RNN", {"hidden_size": 5}, _rnn(), profile="coreml", cache=False)
    with pytest.raises(oracles.OracleError, match=r"clip=1\.0 is given, but the directml profile "
                                                  r"has no clip for GRU.*Consider removing clip"):
        oracles.evaluate("GRU", {"hidden_size": 5, "clip": 1.0},
                         _rnn(W=np.zeros((1, 15, 4), np.float32),
                              R=np.zeros((1, 15, 5), np.float32)),
                         profile="directml", cache=False)
    with pytest.raises(oracles.OracleError, match=r"activations\[0\]='Softsign' is not allowed by "
                                                  r"the openvino profile"):
        oracles.evaluate("RNN", {"hidden_size": 5, "activations": ["Softsign"]}, _rnn(),
                         profile="openvino", cache=False)


def test_precision_constraints():
    with pytest.raises(oracles.OracleError, match=r"prec=32 should be an integer >= 64"):
        oracles.evaluate("RNN", {"hidden_size": 5}, _rnn(), prec=32, cache=False)
    with pytest.raises(oracles.OracleError, match=r"check_prec=128 should be an integer > "
                                                  r"prec=128\. Consider check_prec=192"):
        oracles.evaluate("RNN", {"hidden_size": 5}, _rnn(), check_prec=128, cache=False)


def test_evaluate_mp_choices_are_checked():
    with pytest.raises(oracles.OracleError, match=r"choices\['input_forget'\]='f=i' is not a "
                                                  r"reading of the 'onnx' profile; it admits"):
        oracles.evaluate_mp("RNN", {"hidden_size": 5}, _rnn(), choices={"input_forget": "f=i"})


def test_hidden_size_may_be_left_out():
    result = oracles.evaluate("RNN", {}, _rnn(), cache=False)
    assert result.readings[0].outputs["Y"].shape == (2, 1, 3, 5)
    assert any("hidden_size not given" in note for note in result.notes)
