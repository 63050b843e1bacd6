"""DirectML's own names for the three operators: struct fields, enums, activation descriptors.

Everything here is read off ``DirectML.h`` and the ``DML_*_OPERATOR_DESC`` pages (feature level
1.0). Only this package uses these names; the rest of the suite speaks ONNX (docs/specs.md#canonical-form).
"""

from __future__ import annotations

import numpy as np

FEATURE_LEVEL = "DML_FEATURE_LEVEL_1_0"
SCHEMA = "rnn-conformance/directml-descriptor/1"

OPERATOR_TYPE = {"RNN": "DML_OPERATOR_RNN", "GRU": "DML_OPERATOR_GRU", "LSTM": "DML_OPERATOR_LSTM"}
OP_OF_TYPE = {v: k for k, v in OPERATOR_TYPE.items()}
STRUCT = {op: f"DML_{op}_OPERATOR_DESC" for op in OPERATOR_TYPE}

#: input tensor fields in struct order, which is also the operator's input binding order
INPUT_FIELDS = {
    "RNN": ("InputTensor", "WeightTensor", "RecurrenceTensor", "BiasTensor", "HiddenInitTensor",
            "SequenceLengthsTensor"),
    "GRU": ("InputTensor", "WeightTensor", "RecurrenceTensor", "BiasTensor", "HiddenInitTensor",
            "SequenceLengthsTensor"),
    "LSTM": ("InputTensor", "WeightTensor", "RecurrenceTensor", "BiasTensor", "HiddenInitTensor",
             "CellMemInitTensor", "SequenceLengthsTensor", "PeepholeTensor"),
}
#: output tensor fields in struct order (the output binding order)
OUTPUT_FIELDS = {
    "RNN": ("OutputSequenceTensor", "OutputSingleTensor"),
    "GRU": ("OutputSequenceTensor", "OutputSingleTensor"),
    "LSTM": ("OutputSequenceTensor", "OutputSingleTensor", "OutputCellSingleTensor"),
}
#: the scalar fields after the tensors, in struct order
SCALAR_FIELDS = {
    "RNN": ("ActivationDescCount", "ActivationDescs", "Direction"),
    "GRU": ("ActivationDescCount", "ActivationDescs", "Direction", "LinearBeforeReset"),
    "LSTM": ("ActivationDescCount", "ActivationDescs", "Direction", "ClipThreshold",
             "UseClipThreshold", "CoupleInputForget"),
}


def struct_fields(op: str) -> tuple[str, ...]:
    """Every field of DML_<op>_OPERATOR_DESC, in declaration order."""
    return INPUT_FIELDS[op] + OUTPUT_FIELDS[op] + SCALAR_FIELDS[op]


REQUIRED_FIELDS = ("InputTensor", "WeightTensor", "RecurrenceTensor")
BOOL_FIELDS = ("LinearBeforeReset", "UseClipThreshold", "CoupleInputForget")

#: canonical (ONNX) tensor name <-> DirectML field
FIELD_OF_INPUT = {"X": "InputTensor", "W": "WeightTensor", "R": "RecurrenceTensor", "B": "BiasTensor",
                  "initial_h": "HiddenInitTensor", "initial_c": "CellMemInitTensor",
                  "sequence_lens": "SequenceLengthsTensor", "P": "PeepholeTensor"}
FIELD_OF_OUTPUT = {"Y": "OutputSequenceTensor", "Y_h": "OutputSingleTensor",
                   "Y_c": "OutputCellSingleTensor"}
CANONICAL_OF_FIELD = {v: k for k, v in {**FIELD_OF_INPUT, **FIELD_OF_OUTPUT}.items()}

#: the leading 1s that make an ONNX tensor the 4-D DirectML one (X [S,B,I] -> {1,S,B,I}, ...)
LEADING_ONES = {"X": 1, "W": 1, "R": 1, "B": 2, "initial_h": 1, "initial_c": 1,
                "sequence_lens": 3, "P": 2}

DIRECTION = {"forward": "DML_RECURRENT_NETWORK_DIRECTION_FORWARD",
             "reverse": "DML_RECURRENT_NETWORK_DIRECTION_BACKWARD",
             "bidirectional": "DML_RECURRENT_NETWORK_DIRECTION_BIDIRECTIONAL"}
NUM_DIRECTIONS = {"DML_RECURRENT_NETWORK_DIRECTION_FORWARD": 1,
                  "DML_RECURRENT_NETWORK_DIRECTION_BACKWARD": 1,
                  "DML_RECURRENT_NETWORK_DIRECTION_BIDIRECTIONAL": 2}

TENSOR_TYPE_BUFFER = "DML_TENSOR_TYPE_BUFFER"
FLAG_NONE = "DML_TENSOR_FLAG_NONE"
FLAG_OWNED_BY_DML = "DML_TENSOR_FLAG_OWNED_BY_DML"
TENSOR_FLAGS = (FLAG_NONE, FLAG_OWNED_BY_DML)
BUFFER_DESC_FIELDS = ("DataType", "Flags", "DimensionCount", "Sizes", "Strides",
                      "TotalTensorSizeInBytes", "GuaranteedBaseOffsetAlignment")

FLOAT32 = "DML_TENSOR_DATA_TYPE_FLOAT32"
FLOAT16 = "DML_TENSOR_DATA_TYPE_FLOAT16"
UINT32 = "DML_TENSOR_DATA_TYPE_UINT32"
#: DML_TENSOR_DATA_TYPE -> element size in bytes (DMLCalcBufferTensorSize's table)
ELEMENT_SIZE = {
    FLOAT32: 4, UINT32: 4, "DML_TENSOR_DATA_TYPE_INT32": 4,
    FLOAT16: 2, "DML_TENSOR_DATA_TYPE_UINT16": 2, "DML_TENSOR_DATA_TYPE_INT16": 2,
    "DML_TENSOR_DATA_TYPE_UINT8": 1, "DML_TENSOR_DATA_TYPE_INT8": 1,
    "DML_TENSOR_DATA_TYPE_FLOAT64": 8, "DML_TENSOR_DATA_TYPE_UINT64": 8,
    "DML_TENSOR_DATA_TYPE_INT64": 8,
}
#: little-endian numpy element type of each data type these operators bind
NUMPY_TYPE: dict[str, np.dtype] = {FLOAT32: np.dtype("<f4"), FLOAT16: np.dtype("<f2"), UINT32: np.dtype("<u4")}
#: case dtype -> DML_TENSOR_DATA_TYPE, for the dtypes the operators take ("Tensor support" tables)
DATA_TYPE = {"float32": FLOAT32, "float16": FLOAT16}
FLOAT_TYPES = (FLOAT32, FLOAT16)

#: the activations DirectML 1.0 can fuse as a unary element-wise function (DML_ACTIVATION_*), each
#: with its parameter fields (after InputTensor and OutputTensor, which are NULL when fused)
ACTIVATION_PARAMETERS = {
    "DML_OPERATOR_ACTIVATION_ELU": ("Alpha",),
    "DML_OPERATOR_ACTIVATION_HARD_SIGMOID": ("Alpha", "Beta"),
    "DML_OPERATOR_ACTIVATION_IDENTITY": (),
    "DML_OPERATOR_ACTIVATION_LEAKY_RELU": ("Alpha",),
    "DML_OPERATOR_ACTIVATION_LINEAR": ("Alpha", "Beta"),
    "DML_OPERATOR_ACTIVATION_PARAMETRIC_SOFTPLUS": ("Alpha", "Beta"),
    "DML_OPERATOR_ACTIVATION_RELU": (),
    "DML_OPERATOR_ACTIVATION_SCALED_ELU": ("Alpha", "Gamma"),
    "DML_OPERATOR_ACTIVATION_SCALED_TANH": ("Alpha", "Beta"),
    "DML_OPERATOR_ACTIVATION_SIGMOID": (),
    "DML_OPERATOR_ACTIVATION_SOFTPLUS": ("Steepness",),
    "DML_OPERATOR_ACTIVATION_SOFTSIGN": (),
    "DML_OPERATOR_ACTIVATION_TANH": (),
    "DML_OPERATOR_ACTIVATION_THRESHOLDED_RELU": ("Alpha",),
}
OPERATOR_INVALID = "DML_OPERATOR_INVALID"

#: ONNX activation -> (DML activation, {DML parameter: ONNX parameter or a fixed value})
ONNX_ACTIVATION: dict[str, tuple[str, dict[str, str | float]]] = {
    "Relu": ("DML_OPERATOR_ACTIVATION_RELU", {}),
    "Tanh": ("DML_OPERATOR_ACTIVATION_TANH", {}),
    "Sigmoid": ("DML_OPERATOR_ACTIVATION_SIGMOID", {}),
    "Affine": ("DML_OPERATOR_ACTIVATION_LINEAR", {"Alpha": "alpha", "Beta": "beta"}),
    "LeakyRelu": ("DML_OPERATOR_ACTIVATION_LEAKY_RELU", {"Alpha": "alpha"}),
    "ThresholdedRelu": ("DML_OPERATOR_ACTIVATION_THRESHOLDED_RELU", {"Alpha": "alpha"}),
    "ScaledTanh": ("DML_OPERATOR_ACTIVATION_SCALED_TANH", {"Alpha": "alpha", "Beta": "beta"}),
    "HardSigmoid": ("DML_OPERATOR_ACTIVATION_HARD_SIGMOID", {"Alpha": "alpha", "Beta": "beta"}),
    "Elu": ("DML_OPERATOR_ACTIVATION_ELU", {"Alpha": "alpha"}),
    "Softsign": ("DML_OPERATOR_ACTIVATION_SOFTSIGN", {}),
    # ONNX Softplus(x) = log(1 + e^x); DML SOFTPLUS(x) = ln(1 + exp(Steepness*x)) / Steepness
    "Softplus": ("DML_OPERATOR_ACTIVATION_SOFTPLUS", {"Steepness": 1.0}),
}

SCALED_TANH_DEFAULT = ("DML_ACTIVATION_SCALED_TANH_OPERATOR_DESC's typical default; ONNX has no "
                       "ScaledTanh operator, so the oracle calls the outputs unspecified")
#: parameter defaults: the standalone ONNX operator's (what the ONNX RNN docs point to), else the
#: "typical default" a DML_ACTIVATION_* page gives; (value, source)
PARAMETER_DEFAULTS = {
    ("LeakyRelu", "alpha"): (0.01, "the ONNX LeakyRelu operator's default (also DML's typical default)"),
    ("ThresholdedRelu", "alpha"): (1.0, "the ONNX ThresholdedRelu operator's default (also DML's typical default)"),
    ("HardSigmoid", "alpha"): (0.2, "the ONNX HardSigmoid operator's default (also DML's typical default)"),
    ("HardSigmoid", "beta"): (0.5, "the ONNX HardSigmoid operator's default (also DML's typical default)"),
    ("Elu", "alpha"): (1.0, "the ONNX Elu operator's default (also DML's typical default)"),
    ("ScaledTanh", "alpha"): (1.0, SCALED_TANH_DEFAULT),
    ("ScaledTanh", "beta"): (0.5, SCALED_TANH_DEFAULT),
}

#: ONNX parameter use per activation (alpha, beta), as in the ONNX RNN docs
USES = {"Affine": (True, True), "LeakyRelu": (True, False), "ThresholdedRelu": (True, False),
        "ScaledTanh": (True, True), "HardSigmoid": (True, True), "Elu": (True, False)}


def gates(op: str) -> int:
    return {"RNN": 1, "GRU": 3, "LSTM": 4}[op]


def functions_per_direction(op: str) -> int:
    return {"RNN": 1, "GRU": 2, "LSTM": 3}[op]
