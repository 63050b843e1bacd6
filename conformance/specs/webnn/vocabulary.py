"""WebNN's own names for gru, gruCell, lstm and lstmCell, and the published versions.

Read off the WebNN specification (https://www.w3.org/TR/webnn/, sections 7.9.x "gru", "gruCell",
"lstm", "lstmCell"; the Editor's Draft is https://webmachinelearning.github.io/webnn/). Only this
package and :mod:`conformance.runtimes.webnn` use these names; the rest of the suite speaks ONNX.

**Versions** (docs/webnn.md has the full table). The published versions in which the recurrent
operators changed, and the Editor's Draft:

- ``cr-20240411`` (Candidate Recommendation Snapshot, 11 April 2024): ``activations`` is a sequence
  of ``MLActivation`` objects (``builder.relu()``, ``builder.elu({alpha})``, ...); the emulation of
  gru/lstm builds the sequence output in *processing* order (the backward direction's rows
  reversed in time) while the prose says "every output from each time step"; lstm's validation
  steps ask ``peepholeWeight.shape[1] == 4 * hiddenSize`` while its member text and emulation use
  3 * hiddenSize. **Profiled, not run**: no shipping browser builds MLActivation for recurrent
  operators any more (Chromium removed it with webmachinelearning/webnn#718), and its backward
  sequence order is ambiguous (docs/webnn.md).
- ``cr-20260122`` (Candidate Recommendation Snapshot, 22 January 2026): ``activations`` is a
  sequence of ``MLRecurrentNetworkActivation`` (``"relu"``, ``"sigmoid"``, ``"tanh"``; #718, July
  2024); the emulation's backward sequence is in time order (#802, #803, January 2025); validation
  of hiddenSize (#644) and of every operand's shape (#659).
- ``ed-20260626``: the Editor's Draft at webmachinelearning/webnn c515210 (26 June 2026): the
  recurrent operators as in cr-20260122 (only the tensor-limit tables gained "required" columns,
  #910).
"""

from __future__ import annotations

SCHEMA = "rnn-conformance/webnn-graph/1"

#: version -> (title, URL); the versions the suite translates to and runs
VERSIONS = {
    "cr-20260122": ("W3C Candidate Recommendation Snapshot, 22 January 2026",
                    "https://www.w3.org/TR/2026/CR-webnn-20260122/"),
    "ed-20260626": ("Editor's Draft, webmachinelearning/webnn c515210 (26 June 2026)",
                    "https://webmachinelearning.github.io/webnn/"),
}
#: versions profiled in docs/webnn.md but not translated: version -> (title, URL, why not)
PROFILED_ONLY = {
    "cr-20240411": ("W3C Candidate Recommendation Snapshot, 11 April 2024",
                    "https://www.w3.org/TR/2024/CR-webnn-20240411/",
                    "its activations are MLActivation objects, which no shipping browser builds for "
                    "recurrent operators since webmachinelearning/webnn#718; its backward sequence "
                    "order is ambiguous (prose: time order; emulation: processing order)"),
}
#: the oracle profile that judges each version (oracles/profiles.py)
PROFILE = {"cr-20260122": "webnn", "ed-20260626": "webnn"}

OPS = {("GRU", "sequence"): "gru", ("GRU", "cell"): "gruCell",
       ("LSTM", "sequence"): "lstm", ("LSTM", "cell"): "lstmCell"}
SEQUENCE_OPS = ("gru", "lstm")
CELL_OPS = ("gruCell", "lstmCell")
OP_OF = {op: onnx for (onnx, _), op in OPS.items()}
DATA_TYPES = {"float32": "float32", "float16": "float16"}
#: little-endian numpy element type of each data type
NUMPY = {"float32": "<f4", "float16": "<f2"}
DIRECTION = {"forward": "forward", "reverse": "backward", "bidirectional": "both"}
DIRECTIONS = ("forward", "backward", "both")

#: gate layouts: layout name -> the ONNX gate blocks in that order (ONNX GRU z, r, h; LSTM i, o, f, c)
GRU_LAYOUTS: dict[str, tuple[int, ...]] = {"zrn": (0, 1, 2), "rzn": (1, 0, 2)}
LSTM_LAYOUTS: dict[str, tuple[int, ...]] = {"iofg": (0, 1, 2, 3), "ifgo": (0, 2, 3, 1)}
LAYOUTS = {"GRU": GRU_LAYOUTS, "LSTM": LSTM_LAYOUTS}
DEFAULT_LAYOUT = {"GRU": "zrn", "LSTM": "iofg"}
GATES = {"GRU": 3, "LSTM": 4}
#: activation functions per operator (MLGruOptions: 2; MLLstmOptions: 3)
FUNCTIONS = {"GRU": 2, "LSTM": 3}

#: MLRecurrentNetworkActivation: ONNX name -> WebNN enum value
ENUM_ACTIVATIONS = {"Relu": "relu", "Sigmoid": "sigmoid", "Tanh": "tanh"}

#: the operations a document may call besides the four, to express ONNX's layout 1
HELPERS = ("transpose",)

#: the positional arguments of each operator (operand names or numbers)
ARGUMENTS = {
    "gru": ("input", "weight", "recurrentWeight", "steps", "hiddenSize"),
    "gruCell": ("input", "weight", "recurrentWeight", "hiddenState", "hiddenSize"),
    "lstm": ("input", "weight", "recurrentWeight", "steps", "hiddenSize"),
    "lstmCell": ("input", "weight", "recurrentWeight", "hiddenState", "cellState", "hiddenSize"),
}
#: the dictionary members of each operator's options, in IDL order
OPTIONS = {
    "gru": ("bias", "recurrentBias", "initialHiddenState", "resetAfter", "returnSequence", "direction",
            "layout", "activations"),
    "gruCell": ("bias", "recurrentBias", "resetAfter", "layout", "activations"),
    "lstm": ("bias", "recurrentBias", "peepholeWeight", "initialHiddenState", "initialCellState",
             "returnSequence", "direction", "layout", "activations"),
    "lstmCell": ("bias", "recurrentBias", "peepholeWeight", "layout", "activations"),
}
#: the options that name operands (the others are booleans, enums or the activation list)
OPERAND_OPTIONS = ("bias", "recurrentBias", "peepholeWeight", "initialHiddenState", "initialCellState")

#: what each operator returns, in order, as canonical names (returnSequence appends "Y")
RETURNS = {"gru": ("Y_h",), "gruCell": ("Y_h",), "lstm": ("Y_h", "Y_c"), "lstmCell": ("Y_h", "Y_c")}

#: section anchors in the TR and the Editor's Draft
SECTION = {"gru": "#api-mlgraphbuilder-gru", "gruCell": "#api-mlgraphbuilder-grucell",
           "lstm": "#api-mlgraphbuilder-lstm", "lstmCell": "#api-mlgraphbuilder-lstmcell"}
TR = "https://www.w3.org/TR/webnn/"


def section(op: str) -> str:
    """The spec section of an operator, as a URL of the TR."""
    return TR + SECTION[op]
