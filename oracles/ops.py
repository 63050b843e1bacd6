"""The three ops as the oracle reads them: each op's gates, activation functions, inputs, outputs and
attributes, its directions and float types (problem.py checks a problem against them)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class OpInfo:
    gates: int  # G: rows of W and R per direction, in units of hidden_size
    functions: int  # activation functions per direction
    default_activations: tuple[str, ...]
    inputs: tuple[str, ...]  # ONNX input order
    outputs: tuple[str, ...]
    attributes: frozenset[str]


_COMMON = frozenset({"hidden_size", "direction", "activations", "activation_alpha",
                     "activation_beta", "clip", "layout",
                     # the framework's own axes (torch.nn): stack.py evaluates num_layers > 1; a
                     # projection (proj_size) is the LSTM cell's; dropout runs in eval mode (the
                     # identity) and unbatched input is a batch of 1
                     "num_layers", "dropout", "unbatched"})
_SEQUENCE_INPUTS = ("X", "W", "R", "B", "sequence_lens", "initial_h")

OPS = {
    "RNN": OpInfo(1, 1, ("Tanh",), _SEQUENCE_INPUTS, ("Y", "Y_h"), _COMMON),
    "GRU": OpInfo(3, 2, ("Sigmoid", "Tanh"), _SEQUENCE_INPUTS, ("Y", "Y_h"),
                  _COMMON | {"linear_before_reset"}),
    "LSTM": OpInfo(4, 3, ("Sigmoid", "Tanh", "Tanh"), _SEQUENCE_INPUTS + ("initial_c", "P", "W_hr"),
                   ("Y", "Y_h", "Y_c"), _COMMON | {"input_forget", "proj_size"}),
}
DIRECTIONS = {"forward": 1, "reverse": 1, "bidirectional": 2}
FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")
