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
    """One attribute of the operators, in ONNX's name: the JSON Schema of its value, the ops and
    forms that own it, the ONNX version that introduced it, the values it may take (checked by
    :mod:`conformance.case.validate`; an invalid case may break them on purpose), its default, and
    what the fuzzer draws for it (:mod:`conformance.fuzz.strategies`: each row with ``values``,
    ``examples`` or a ``span`` is drawn from the row, a new one included)."""

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
    #: the forms that have it: a case of another form may only give its default (validation)
    forms: tuple[str, ...] = FORMS
    #: the value the op takes where a case leaves the attribute out (None: no value means "absent",
    #: as for clip); the fuzzer draws a case without the attribute or with another value
    default: Any = None
    #: the interval (low, high), both included, the fuzzer draws a number from where the values are
    #: not a short list: within the allowed values, and small where the oracle's cost grows with it.
    #: With the default inside it, one draw from it is the value (the default: absent); else the
    #: fuzzer draws whether the attribute is given, then its value
    span: tuple[float, float] | None = None
    #: values the fuzzer draws first (simplest first), or alone where there is no span; else the
    #: fuzzer draws ``values`` but the default. A number (``"type": "number"``) is drawn as float32
    #: (ONNX's FLOAT attributes)
    examples: tuple[Any, ...] = ()


#: every attribute, in the order case files and reproducers write them
ATTRIBUTE_TABLE: tuple[Attribute, ...] = (
    # drawn by the fuzzer's own code (conformance/fuzz/attributes.py OWN_DRAWS): hidden_size with the
    # shapes, the direction (always: the shapes need it), the activations and their parameters per direction
    Attribute("hidden_size", {"type": ["integer", "string"]}),
    Attribute("direction", {"type": "string", "examples": list(DIRECTIONS)}, values=DIRECTIONS, default="forward",
              hint="`expect: invalid` if the case tests a bad direction"),
    Attribute("activations", {"type": "array", "items": {"type": "string",
                                                         "examples": list(ACTIVATION_FUNCTIONS)}}),
    Attribute("activation_alpha", {"type": "array", "items": {"type": "number"}}),
    Attribute("activation_beta", {"type": "array", "items": {"type": "number"}}),
    # drawn from their rows
    Attribute("clip", {"type": "number"}, positive=True, span=(1e-3, 50.0),
              examples=(1.0, 0.5, 2.0, 3.0, 0.25, 10.0, 0.1, 0.7),
              hint="omitting clip to turn clipping off (ONNX has no 'off' value)"),
    # any non-zero value is "linear before reset" (ONNX), so no short list of values
    Attribute("linear_before_reset", {"type": "integer"}, ops=("GRU",), default=0, examples=(1,)),
    Attribute("input_forget", {"type": "integer"}, ops=("LSTM",), values=(0, 1), default=0),
    Attribute("layout", {"type": "integer"}, since=14, values=(0, 1), default=0),
    # the framework's own axes (torch.nn.RNN/GRU/LSTM: docs/framework.md); no single ONNX, OpenVINO,
    # DirectML or WebNN op says them, so only the torch family writes them (a converter then writes
    # the program: conformance/converters/). torch's cells have no stack, projection or dropout
    Attribute("num_layers", {"type": "integer"}, families=("torch",), forms=("sequence",), default=1, span=(1, 3),
              hint="1 for one layer, or a stack of 2 or 3; the layers' weights are W_l1, R_l1, B_l1, ..."),
    Attribute("proj_size", {"type": "integer"}, ops=("LSTM",), families=("torch",), forms=("sequence",), default=0,
              span=(0, 5), hint="0 (no projection) or 0 < proj_size < hidden_size, as torch.nn.LSTM requires"),
    # eval mode makes any probability the identity: the fuzzer draws one
    Attribute("dropout", {"type": "number"}, families=("torch",), forms=("sequence",), default=0.0, examples=(0.25,),
              hint="a probability in [0, 1); the module runs in eval mode, where dropout is the identity"),
    Attribute("unbatched", {"type": "integer"}, values=(0, 1), families=("torch",), default=0,
              hint="1 feeds X without its batch axis (batch_size must be 1)"),
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


#: the inputs each layer of a stack has its own of (``num_layers``): layer l >= 1 names them with the
#: suffix ``_l<l>`` (torch's ``weight_ih_l1``); ``W_hr`` is the LSTM projection's weight (``proj_size``)
LAYER_INPUTS = ("W", "R", "B", "W_hr")
#: the most layers a case may stack
MAX_LAYERS = 8


def layer_input(name: str, layer: int) -> str:
    """The case's name of input ``name`` of layer ``layer``: ``W`` (layer 0), ``W_l1``, ``W_hr_l2``."""
    return name if layer == 0 else f"{name}_l{layer}"


def inputs_of(op: str, attributes: Mapping[str, Any] | None = None) -> tuple[str, ...]:
    """Every input name a case of ``op`` with ``attributes`` may have, in order: ONNX's, then the
    projection's and each further layer's (``num_layers``, ``proj_size``)."""
    attributes = attributes or {}
    layers = attributes.get("num_layers", 1)
    layers = layers if isinstance(layers, int) and not isinstance(layers, bool) and 1 <= layers <= MAX_LAYERS else 1
    proj = op == "LSTM" and isinstance(attributes.get("proj_size"), int) and attributes.get("proj_size", 0) > 0
    names = list(INPUTS[op]) + (["W_hr"] if proj else [])
    for layer in range(1, layers):
        names += [layer_input(n, layer) for n in LAYER_INPUTS if n != "W_hr" or proj]
    return tuple(names)


#: every input name a case file may give (the schema's and a matrix's tensor keys)
ALL_INPUT_NAMES = tuple(sorted({n for op in OPS for n in inputs_of(op, {"num_layers": MAX_LAYERS, "proj_size": 1})}))


def output_size(op: str, hidden_size: int, attributes: Mapping[str, Any] | None = None) -> int:
    """The size of the hidden state the op outputs and feeds back: ``proj_size`` where an LSTM has a
    projection, else hidden_size."""
    proj = (attributes or {}).get("proj_size", 0)
    return proj if op == "LSTM" and isinstance(proj, int) and proj > 0 else hidden_size


def input_shapes(op: str, hidden_size: int, direction: str, shape: Mapping[str, int],
                 attributes: Mapping[str, Any] | None = None) -> dict[str, tuple[int, ...]]:
    """Canonical (ONNX layout 0) shape of every input of `op`; with the framework's ``attributes``
    (``num_layers``, ``proj_size``), of each layer's weights too: layer l >= 1 reads the layer below's
    output, D x the output size wide, and the states hold one [B, H] per layer and direction."""
    d, g, h = num_directions(direction), GATES[op], hidden_size
    s, b, i = shape["seq_length"], shape["batch_size"], shape["input_size"]
    names = inputs_of(op, attributes)
    layers = 1 + sum(1 for n in names if n.startswith("W_l"))
    out = output_size(op, h, attributes)
    shapes = {
        "X": (s, b, i), "W": (d, g * h, i), "R": (d, g * h, out), "B": (d, 2 * g * h),
        "sequence_lens": (b,), "initial_h": (layers * d, b, out),
    }
    if op == "LSTM":
        shapes.update({"initial_c": (layers * d, b, h), "P": (d, 3 * h)})
    if "W_hr" in names:
        shapes["W_hr"] = (d, out, h)
    for layer in range(1, layers):
        shapes[layer_input("W", layer)] = (d, g * h, d * out)
        shapes[layer_input("R", layer)] = (d, g * h, out)
        shapes[layer_input("B", layer)] = (d, 2 * g * h)
        if "W_hr" in names:
            shapes[layer_input("W_hr", layer)] = (d, out, h)
    return shapes


def output_shapes(op: str, hidden_size: int, direction: str, shape: Mapping[str, int],
                  attributes: Mapping[str, Any] | None = None) -> dict[str, tuple[int, ...]]:
    """Canonical (ONNX layout 0) shape of every output of `op`: Y is the last layer's, Y_h and Y_c
    hold every layer's final states (torch's h_n and c_n: [num_layers x D, B, ...])."""
    d, s, b = num_directions(direction), shape["seq_length"], shape["batch_size"]
    layers = 1 + sum(1 for n in inputs_of(op, attributes) if n.startswith("W_l"))
    out = output_size(op, hidden_size, attributes)
    shapes = {"Y": (s, d, b, out), "Y_h": (layers * d, b, out)}
    if op == "LSTM":
        shapes["Y_c"] = (layers * d, b, hidden_size)
    return shapes
