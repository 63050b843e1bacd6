"""The ONNX vocabulary of the three operators: attribute names, gate counts, activations.

These are the canonical names every case uses (docs/specs.md: attribute names are ONNX's). Per-spec
names live only inside that spec's translator.
"""

import dataclasses
from collections.abc import Mapping
from typing import Any

OPS = ("RNN", "GRU", "LSTM")
#: the spec families, in the report's order (conformance/specs/: one translator package each)
SPEC_FAMILIES = ("onnx", "openvino", "directml", "torch", "webnn")
FORMS = ("sequence", "cell")
DIRECTIONS = ("forward", "reverse", "bidirectional")
DTYPES = ("float32", "float16", "float64", "bfloat16")

#: number of gates G per op (W is [D, G*H, I])
GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}

#: activation functions per direction (f; f, g; f, g, h)
ACTIVATIONS_PER_DIRECTION = {"RNN": 1, "GRU": 2, "LSTM": 3}

DEFAULT_ACTIVATIONS = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}

#: the eleven activation functions of the ONNX RNN/GRU/LSTM docs, canonical spelling
ACTIVATION_FUNCTIONS = (
    "Relu", "Tanh", "Sigmoid", "Affine", "LeakyRelu", "ThresholdedRelu", "ScaledTanh",
    "HardSigmoid", "Elu", "Softsign", "Softplus",
)


@dataclasses.dataclass(frozen=True)
class Attribute:
    """One attribute of the operators, in ONNX's name: the JSON Schema of its value, the ops that
    own it, the ONNX version that introduced it, and the values it may take (checked by
    :mod:`conformance.case.validate`; an invalid case may break them on purpose)."""

    name: str
    schema: dict[str, Any]
    ops: tuple[str, ...] = OPS
    since: int = 7                          # the ONNX operator version that has it
    values: tuple[Any, ...] | None = None   # the allowed values, where they are a short list
    positive: bool = False                  # the value must be > 0
    hint: str = ""                          # how to fix a bad value, for the validation's message
    #: the spec families whose translators know the attribute (write it, or refuse it with their
    #: own reason); any other family gets not-expressible from ``conformance.specs.translate``
    families: tuple[str, ...] = SPEC_FAMILIES


#: every attribute, in the order case files and reproducers write them
ATTRIBUTE_TABLE: tuple[Attribute, ...] = (
    Attribute("hidden_size", {"type": ["integer", "string"]}),
    Attribute("direction", {"type": "string", "examples": list(DIRECTIONS)}, values=DIRECTIONS,
              hint="`expect: invalid` if the case tests a bad direction"),
    Attribute("activations", {"type": "array", "items": {"type": "string",
                                                         "examples": list(ACTIVATION_FUNCTIONS)}}),
    Attribute("activation_alpha", {"type": "array", "items": {"type": "number"}}),
    Attribute("activation_beta", {"type": "array", "items": {"type": "number"}}),
    Attribute("clip", {"type": "number"}, positive=True,
              hint="omitting clip to turn clipping off (ONNX has no 'off' value)"),
    Attribute("linear_before_reset", {"type": "integer"}, ops=("GRU",)),
    Attribute("input_forget", {"type": "integer"}, ops=("LSTM",), values=(0, 1)),
    Attribute("layout", {"type": "integer"}, since=14, values=(0, 1)),
)
ATTRIBUTE = {a.name: a for a in ATTRIBUTE_TABLE}

#: attributes each op accepts (ONNX names)
ATTRIBUTES = {op: tuple(a.name for a in ATTRIBUTE_TABLE if op in a.ops) for op in OPS}

#: input names in ONNX order; `P` is LSTM only, `initial_c` LSTM only
INPUTS = {
    "RNN": ("X", "W", "R", "B", "sequence_lens", "initial_h"),
    "GRU": ("X", "W", "R", "B", "sequence_lens", "initial_h"),
    "LSTM": ("X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"),
}
REQUIRED_INPUTS = ("X", "W", "R")

OUTPUTS = {"RNN": ("Y", "Y_h"), "GRU": ("Y", "Y_h"), "LSTM": ("Y", "Y_h", "Y_c")}


def num_directions(direction: str) -> int:
    return 2 if direction == "bidirectional" else 1


def canonical_activation(name: str) -> str | None:
    """The canonical spelling of an activation name, matched case-insensitively; None if unknown."""
    for known in ACTIVATION_FUNCTIONS:
        if known.lower() == str(name).lower():
            return known
    return None


def input_shapes(op: str, hidden_size: int, direction: str, shape: Mapping[str, int]) -> dict[str, tuple[int, ...]]:
    """Canonical (ONNX layout 0) shape of every input of `op`."""
    d, g, h = num_directions(direction), GATES[op], hidden_size
    s, b, i = shape["seq_length"], shape["batch_size"], shape["input_size"]
    shapes = {
        "X": (s, b, i), "W": (d, g * h, i), "R": (d, g * h, h), "B": (d, 2 * g * h),
        "sequence_lens": (b,), "initial_h": (d, b, h),
    }
    if op == "LSTM":
        shapes.update({"initial_c": (d, b, h), "P": (d, 3 * h)})
    return shapes


def output_shapes(op: str, hidden_size: int, direction: str, shape: Mapping[str, int]) -> dict[str, tuple[int, ...]]:
    """Canonical (ONNX layout 0) shape of every output of `op`."""
    d, s, b = num_directions(direction), shape["seq_length"], shape["batch_size"]
    shapes = {"Y": (s, d, b, hidden_size), "Y_h": (d, b, hidden_size)}
    if op == "LSTM":
        shapes["Y_c"] = (d, b, hidden_size)
    return shapes
