"""OpenVINO's names: which native op each opset has for each op and form, the spec clauses, the
activations it allows, its LSTM gate order, and its input and output names."""

from __future__ import annotations

OPSETS = (1, 5)


#: (opset, op, form) -> the OpenVINO op (spec page name; LSTMCell-4 is v4::LSTMCell, whose page is
#: LSTMCell-1); missing: not in that opset
NATIVE = {
    (5, "RNN", "sequence"): "RNNSequence-5",
    (5, "GRU", "sequence"): "GRUSequence-5",
    (5, "LSTM", "sequence"): "LSTMSequence-5",
    (5, "RNN", "cell"): "RNNCell-3",
    (5, "GRU", "cell"): "GRUCell-3",
    (5, "LSTM", "cell"): "LSTMCell-4",
    (1, "RNN", "cell"): "RNNCell-3",
    (1, "LSTM", "cell"): "LSTMCell-1",
    (1, "LSTM", "sequence"): "LSTMSequence-1",
}


#: the clause each op reports: its spec page, and the class and IR version where they differ
CLAUSES = {
    "RNNSequence-5": "OpenVINO RNNSequence-5",
    "GRUSequence-5": "OpenVINO GRUSequence-5",
    "LSTMSequence-5": "OpenVINO LSTMSequence-5",
    "LSTMSequence-1": "OpenVINO LSTMSequence-1",
    "RNNCell-3": "OpenVINO RNNCell-3 (v0::RNNCell, IR version opset1)",
    "GRUCell-3": "OpenVINO GRUCell-3",
    "LSTMCell-4": "OpenVINO LSTMCell-4 (v4::LSTMCell, IR version opset4; its spec page is LSTMCell-1)",
    "LSTMCell-1": "OpenVINO LSTMCell-1 (v0::LSTMCell, IR version opset1)",
}


#: why opset 1 has no op for the rest
FIRST_OPSET = {
    ("RNN", "sequence"): "RNNSequence first appears in opset 5 (RNNSequence-5)",
    ("GRU", "sequence"): "GRUSequence first appears in opset 5 (GRUSequence-5)",
    ("GRU", "cell"): "GRUCell first appears in opset 3 (GRUCell-3)",
}


#: ops whose spec page makes B optional (the others require it); B is written explicitly either way
B_OPTIONAL = ("GRUCell-3", "LSTMCell-1", "LSTMCell-4")


#: OpenVINO's activation functions (spec: "any combination of relu, sigmoid, tanh")
ACTIVATIONS = ("relu", "sigmoid", "tanh")


#: LSTM gate blocks: OpenVINO f,i,c,o taken from ONNX i,o,f,c (ONNX block index per OpenVINO block)
LSTM_ONNX_TO_OPENVINO = (2, 0, 3, 1)


#: OpenVINO input names (spec pages), for the Parameters
FEED_NAMES = {"X": "X", "initial_h": "initial_hidden_state", "initial_c": "initial_cell_state",
              "sequence_lens": "sequence_lengths"}


#: OpenVINO output names per canonical output (sequence ops: Y, Ho, Co; cells: Ho, Co)
SEQUENCE_OUTPUTS = {"Y": "Y", "Y_h": "Ho", "Y_c": "Co"}


CELL_OUTPUTS = {"Y": "Ho", "Y_h": "Ho", "Y_c": "Co"}


#: file suffix of a written program that its own builder refused (OpenVINO's op validation while the
#: IR was written: ``OpenVINOSpec.write``): the OpenVINO adapters handed that file raise the refusal
#: (this module is a leaf: the adapters read it without the translators' packages)
BUILD_ERROR_SUFFIX = ".build-error.txt"
