"""The torch translator's weights (conformance/specs/torch.py): the case's W, R, B and W_hr as a torch
``state_dict``, each gate block in torch's order and each tensor under torch's parameter name
(``weight_ih_l<layer>[_reverse]``), the reverse-only mapping's zero forward direction included."""

from __future__ import annotations

import numpy as np

from conformance.case.model import Case
from conformance.case.tensors import numpy_dtype
from conformance.case.vocabulary import GATES, layer_input, output_size

#: torch's gate blocks as indices of ONNX's: torch block k is ONNX block ORDER[op][k]
GATE_ORDER = {"RNN": (0,), "GRU": (1, 0, 2), "LSTM": (0, 2, 3, 1)}

#: what the ``.npz`` holds for bfloat16 (numpy has no bfloat16 of its own): the raw bits
BF16_BITS = np.uint16


def _reorder(arr: np.ndarray, op: str, hidden: int, axis: int) -> np.ndarray:
    """ONNX gate blocks along `axis` in torch's order; a tensor whose axis is not G*H (an invalid
    case) is left as given for torch to refuse."""
    g = GATES[op]
    if arr.ndim <= axis or arr.shape[axis] != g * hidden or g == 1:
        return arr
    blocks = np.split(arr, g, axis=axis)
    return np.concatenate([blocks[k] for k in GATE_ORDER[op]], axis=axis)


def _suffix(index: int) -> str:
    """torch's parameter-name suffix of direction `index` (0 forward, 1 ``_reverse``); a further
    index is a name torch does not know, written so that torch refuses it."""
    return "" if index == 0 else "_reverse" if index == 1 else f"_reverse{index}"


def _state_dict(case: Case, shift: int, cell: bool) -> dict:
    """torch parameter name -> array. `shift` 1 writes ONNX direction d as torch direction d+1
    (the reverse-only mapping), with torch's forward direction zero in every layer; a layer above
    the first then reads [forward half (zeros), reverse half], so its input weights get zero columns
    for the forward half."""
    op, hidden = case.op, case.hidden_size
    out = {}
    layers = _layers(case)
    size = output_size(op, max(hidden, 0), case.attributes)

    def put(base: str, layer: int, d: int, arr: np.ndarray) -> None:
        name = base if cell else f"{base}_l{layer}{_suffix(d)}"
        out[name] = np.ascontiguousarray(arr)

    for layer in range(layers):
        for onnx_name, base in (("W", "weight_ih"), ("R", "weight_hh")):
            arr = case.tensors.get(layer_input(onnx_name, layer))
            if arr is None:  # an invalid case: torch refuses the missing parameter
                continue
            for d, w in enumerate(arr):
                w = _reorder(w, op, hidden, 0)
                if shift and layer and onnx_name == "W" and w.ndim == 2:
                    w = np.concatenate([np.zeros((w.shape[0], size), w.dtype), w], axis=1)
                put(base, layer, d + shift, w)
        bias = case.tensors.get(layer_input("B", layer))
        if bias is not None:
            for d, b in enumerate(bias):
                half = b.shape[0] // 2  # Wb, Rb; an odd length (an invalid case) leaves a half torch refuses
                put("bias_ih", layer, d + shift, _reorder(b[:half], op, hidden, 0))
                put("bias_hh", layer, d + shift, _reorder(b[half:], op, hidden, 0))
        projection = case.tensors.get(layer_input("W_hr", layer))
        if projection is not None:
            for d, w in enumerate(projection):
                put("weight_hr", layer, d + shift, w)
        if shift:
            g, dt = GATES[op], numpy_dtype(case.dtype)
            width = case.shape["input_size"] if layer == 0 else 2 * size
            put("weight_ih", layer, 0, np.zeros((g * hidden, width), dt))
            put("weight_hh", layer, 0, np.zeros((g * hidden, size), dt))
            if bias is not None:
                put("bias_ih", layer, 0, np.zeros((g * hidden,), dt))
                put("bias_hh", layer, 0, np.zeros((g * hidden,), dt))
            if projection is not None:
                put("weight_hr", layer, 0, np.zeros((size, hidden), dt))
    return {k: _storable(v, case.dtype) for k, v in out.items()}


def _layers(case: Case) -> int:
    layers = case.attributes.get("num_layers", 1)
    return layers if isinstance(layers, int) and layers >= 1 else 1


def _storable(arr: np.ndarray, dtype: str) -> np.ndarray:
    return arr.view(BF16_BITS) if dtype == "bfloat16" else arr
