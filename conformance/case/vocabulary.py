"""The ONNX vocabulary of the three operators: attribute names, gate counts, activations.

These are the canonical names every case uses (DESIGN.md: attribute names are ONNX's). Per-spec
names live only inside that spec's translator.
"""

OPS = ("RNN", "GRU", "LSTM")
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

#: attributes each op accepts (ONNX names; `layout` exists from opset 14)
COMMON_ATTRIBUTES = ("hidden_size", "direction", "activations", "activation_alpha",
                     "activation_beta", "clip", "layout")
ATTRIBUTES = {
    "RNN": COMMON_ATTRIBUTES,
    "GRU": COMMON_ATTRIBUTES + ("linear_before_reset",),
    "LSTM": COMMON_ATTRIBUTES + ("input_forget",),
}

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


def input_shapes(op: str, hidden_size: int, direction: str, shape: dict) -> dict[str, tuple[int, ...]]:
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


def output_shapes(op: str, hidden_size: int, direction: str, shape: dict) -> dict[str, tuple[int, ...]]:
    """Canonical (ONNX layout 0) shape of every output of `op`."""
    d, s, b = num_directions(direction), shape["seq_length"], shape["batch_size"]
    shapes = {"Y": (s, d, b, hidden_size), "Y_h": (d, b, hidden_size)}
    if op == "LSTM":
        shapes["Y_c"] = (d, b, hidden_size)
    return shapes
