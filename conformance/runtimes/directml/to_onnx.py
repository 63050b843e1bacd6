"""A DirectML recurrent descriptor as the ONNX model that computes the same: what onnxruntime's
DirectML execution provider is given (its ONNX-to-DirectML lowering is the only way to reach
DirectML from Python). Spec knowledge: DirectML's activations, directions and gate orders in ONNX's
words."""

from __future__ import annotations

from typing import Any

import numpy as np

import conformance.specs.directml.vocabulary as v
from conformance.runtimes.base import RuntimeRejected
from conformance.runtimes.directml.loaded import Loaded

ONNX_OF_ACTIVATION = {
    "DML_OPERATOR_ACTIVATION_RELU": ("Relu", ()),
    "DML_OPERATOR_ACTIVATION_TANH": ("Tanh", ()),
    "DML_OPERATOR_ACTIVATION_SIGMOID": ("Sigmoid", ()),
    "DML_OPERATOR_ACTIVATION_LINEAR": ("Affine", ("Alpha", "Beta")),
    "DML_OPERATOR_ACTIVATION_LEAKY_RELU": ("LeakyRelu", ("Alpha",)),
    "DML_OPERATOR_ACTIVATION_THRESHOLDED_RELU": ("ThresholdedRelu", ("Alpha",)),
    "DML_OPERATOR_ACTIVATION_SCALED_TANH": ("ScaledTanh", ("Alpha", "Beta")),
    "DML_OPERATOR_ACTIVATION_HARD_SIGMOID": ("HardSigmoid", ("Alpha", "Beta")),
    "DML_OPERATOR_ACTIVATION_ELU": ("Elu", ("Alpha",)),
    "DML_OPERATOR_ACTIVATION_SOFTSIGN": ("Softsign", ()),
}


ONNX_DIRECTION = {"DML_RECURRENT_NETWORK_DIRECTION_FORWARD": "forward",
                  "DML_RECURRENT_NETWORK_DIRECTION_BACKWARD": "reverse",
                  "DML_RECURRENT_NETWORK_DIRECTION_BIDIRECTIONAL": "bidirectional"}


def _onnx_activations(descs) -> tuple[list, list, list]:
    """ONNX names and the activation_alpha / activation_beta lists that give each its own
    parameters when consumed 'popped' (each parameterised activation takes the next value), which is
    how onnxruntime reads them."""
    names, alphas, betas = [], [], []
    for index, act in enumerate(descs):
        kind, params = act["Type"], act["Desc"]
        if kind == "DML_OPERATOR_ACTIVATION_SOFTPLUS" and params["Steepness"] == 1:
            names.append("Softplus")
            continue
        if kind == "DML_OPERATOR_ACTIVATION_IDENTITY":
            names.append("Affine")
            alphas.append(1.0)
            betas.append(0.0)
            continue
        if kind not in ONNX_OF_ACTIVATION:
            raise RuntimeRejected(f"ActivationDescs[{index}] = {kind} has no ONNX RNN activation, so "
                                  "the onnxruntime bridge cannot run it")
        name, fields = ONNX_OF_ACTIVATION[kind]
        names.append(name)
        if "Alpha" in fields:
            alphas.append(float(params["Alpha"]))
        if "Beta" in fields:
            betas.append(float(params["Beta"]))
    return names, alphas, betas


def to_onnx(p: Loaded):
    """The ONNX model (opset 14, layout 0) equivalent to a loaded descriptor, and its feeds."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    desc, t = p.desc, p.tensors
    elem = TensorProto.FLOAT16 if p.dtype == np.float16 else TensorProto.FLOAT
    S, B, _ = t["InputTensor"].shape[1:]
    H = t["RecurrenceTensor"].shape[3]
    feeds, inputs, initializers, node_inputs = {}, [], [], []
    squeeze = {"InputTensor": 1, "WeightTensor": 1, "RecurrenceTensor": 1, "BiasTensor": 2,
               "HiddenInitTensor": 1, "CellMemInitTensor": 1, "SequenceLengthsTensor": 3,
               "PeepholeTensor": 2}
    onnx_order = ["InputTensor", "WeightTensor", "RecurrenceTensor", "BiasTensor",
                  "SequenceLengthsTensor", "HiddenInitTensor"]
    if p.op == "LSTM":
        onnx_order += ["CellMemInitTensor", "PeepholeTensor"]
    for field in onnx_order:
        if field not in t:
            node_inputs.append("")
            continue
        name = v.CANONICAL_OF_FIELD[field]
        array = t[field].reshape(t[field].shape[squeeze[field]:])
        node_inputs.append(name)
        if field == "SequenceLengthsTensor":
            if (array > np.iinfo(np.int32).max).any():
                raise RuntimeRejected("SequenceLengthsTensor holds values past int32, which ONNX's "
                                      "sequence_lens cannot carry")
            array = array.astype(np.int32)
        if field in ("InputTensor", "SequenceLengthsTensor", "HiddenInitTensor", "CellMemInitTensor"):
            feeds[name] = np.ascontiguousarray(array)
            inputs.append(helper.make_tensor_value_info(
                name, TensorProto.INT32 if array.dtype == np.int32 else elem, list(array.shape)))
        else:
            initializers.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
    while node_inputs and node_inputs[-1] == "":
        node_inputs.pop()
    names, alphas, betas = _onnx_activations(desc["ActivationDescs"])
    attrs: dict[str, Any] = {"hidden_size": int(H), "direction": ONNX_DIRECTION[desc["Direction"]],
                             "activations": names}
    if alphas:
        attrs["activation_alpha"] = alphas
    if betas:
        attrs["activation_beta"] = betas
    if p.op == "GRU":
        attrs["linear_before_reset"] = int(desc["LinearBeforeReset"])
    if p.op == "LSTM":
        attrs["input_forget"] = int(desc["CoupleInputForget"])
        if desc["UseClipThreshold"]:
            attrs["clip"] = float(desc["ClipThreshold"])
    canonical = {"OutputSequenceTensor": "Y", "OutputSingleTensor": "Y_h", "OutputCellSingleTensor": "Y_c"}
    node_outputs = [canonical[f] if desc[f] is not None else "" for f in v.OUTPUT_FIELDS[p.op]]
    while node_outputs and node_outputs[-1] == "":
        node_outputs.pop()
    shapes = {"Y": [S, p.num_directions, B, H], "Y_h": [p.num_directions, B, H],
              "Y_c": [p.num_directions, B, H]}
    outputs = [helper.make_tensor_value_info(n, elem, shapes[n]) for n in node_outputs if n]
    node = helper.make_node(p.op, node_inputs, node_outputs, **attrs)
    graph = helper.make_graph([node], "directml-descriptor", inputs, outputs, initializer=initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)],
                              producer_name="rnn-conformance directml bridge")
    model.ir_version = 7
    onnx.checker.check_model(model)
    return model.SerializeToString(), feeds
