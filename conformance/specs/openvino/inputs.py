"""The case's tensors in OpenVINO's shapes: batch-major X and states, LSTM gates in f,i,c,o order,
ONNX's B folded to one summed bias (rounded once), absent inputs filled as the ops require."""

from __future__ import annotations

import numpy as np

from conformance.case.model import Case
from conformance.case.vocabulary import (
    GATES,
    num_directions,
)
from conformance.specs.openvino.vocabulary import B_OPTIONAL, FEED_NAMES, LSTM_ONNX_TO_OPENVINO


def _inputs(op: str, case: Case, notes: list, peepholes: bool = False) -> dict:
    """OpenVINO's tensors: ``feeds`` (Parameters, by canonical name) and ``W``, ``R``, ``B``; with
    ``peepholes`` (a model built in memory), LSTMCell-1's ``P`` too, in its f,i,o order."""
    cell = case.form == "cell"
    dt = _numpy_dtype(case)
    s, b = case.shape["seq_length"], case.shape["batch_size"]
    d, h = num_directions(case.direction), _state_size(case)
    feeds = {}
    x = case.tensors["X"]
    feeds["X"] = _ascontiguous(x[0] if cell and x.ndim == 3 and x.shape[0] == 1 else
                               (np.transpose(x, (1, 0, 2)) if x.ndim == 3 else x))
    states = ("initial_h", "initial_c") if case.op == "LSTM" else ("initial_h",)
    for name in states:
        arr = case.tensors.get(name)
        if arr is None:
            arr = np.zeros((d, b, h), dtype=dt)
            notes.append(f"{name} absent: {op} requires {FEED_NAMES[name]}; fed zeros (ONNX: an absent "
                         f"{name} is zero)")
        feeds[name] = _ascontiguous(arr[0] if cell and arr.ndim == 3 and arr.shape[0] == 1 else
                                    (np.transpose(arr, (1, 0, 2)) if arr.ndim == 3 else arr))
    if not cell:
        lens = case.tensors.get("sequence_lens")
        if lens is None:
            lens = np.full((b,), s, dtype=np.int32)
            notes.append(f"sequence_lens absent: {op} requires sequence_lengths; fed seq_length={s} for "
                         f"every batch element")
        feeds["sequence_lens"] = _ascontiguous(lens)
    elif "sequence_lens" in case.tensors:
        notes.append(f"sequence_lens all 1 dropped: {op} is one step and has no sequence_lengths input")

    w, r = case.tensors["W"], case.tensors["R"]
    bias = case.tensors.get("B")
    if bias is None:
        g = GATES[case.op] + (1 if _linear_before_reset(case) else 0)
        bias = np.zeros((d, g * h), dtype=dt)
        required = "takes B as optional; written explicitly" if op in B_OPTIONAL else "requires B"
        notes.append(f"B absent: written as zeros [{d}, {g * h}] ({op} {required}; ONNX: an absent B is zero)")
    else:
        bias = fold_bias(bias, case, notes)
    if case.op == "LSTM":
        w, r, bias = reorder_lstm_gates(w, -2), reorder_lstm_gates(r, -2), reorder_lstm_gates(bias, -1)
        notes.append("LSTM gates reordered from ONNX i,o,f,c to OpenVINO f,i,c,o in W, R and B")
    if cell:
        w, r, bias = (t[0] if t.ndim >= 2 and t.shape[0] == 1 else t for t in (w, r, bias))
    if "P" in case.tensors and peepholes and op == "LSTMCell-1":
        p = reorder_peepholes(case.tensors["P"])
        notes.append("P reordered from ONNX i,o,f to v0::LSTMCell's f,i,o (its weights_format fico; OpenVINO's "
                     "ONNX frontend converts P the same way) and given as input 6")
        return {"feeds": feeds, "W": w, "R": r, "B": bias, "P": p[0] if p.ndim == 2 and p.shape[0] == 1 else p}
    if "P" in case.tensors:
        notes.append(f"P is all zeros: not written ({op} has no peephole input in IR; zero peepholes add "
                     f"nothing)")
    return {"feeds": feeds, "W": w, "R": r, "B": bias}


def _state_size(case: Case) -> int:
    """The hidden size of filled-in states and biases: R's last dimension (R is [D, G·H, H]), so a
    fill never adds a shape error of its own to an invalid case; hidden_size where R says nothing."""
    r = case.tensors["R"]
    return int(r.shape[-1]) if r.ndim == 3 else max(case.hidden_size, 0)


def reorder_lstm_gates(arr: np.ndarray, axis: int) -> np.ndarray:
    """ONNX i,o,f,c gate blocks along ``axis`` (W, R: -2; B: -1) in OpenVINO's order f,i,c,o."""
    if arr.ndim < -axis or arr.shape[axis] % 4 != 0:
        return arr  # a malformed tensor (an invalid case) goes through as given
    blocks = np.split(arr, 4, axis=axis)
    return np.ascontiguousarray(np.concatenate([blocks[i] for i in LSTM_ONNX_TO_OPENVINO], axis=axis))


def reorder_peepholes(arr: np.ndarray) -> np.ndarray:
    """ONNX P's i,o,f blocks (last axis) in v0::LSTMCell's order f,i,o."""
    if arr.ndim < 1 or arr.shape[-1] % 3 != 0:
        return arr  # a malformed tensor (an invalid case) goes through as given
    i, o, f = np.split(arr, 3, axis=-1)
    return np.ascontiguousarray(np.concatenate([f, i, o], axis=-1))


def fold_bias(bias: np.ndarray, case: Case, notes: list) -> np.ndarray:
    """ONNX B [D, 2·G·H] = [Wb, Rb] as OpenVINO's B [D, G·H] = Wb + Rb; for GRU with
    linear_before_reset, [D, 4H] = [Wbz+Rbz, Wbr+Rbr, Wbh, Rbh]. H is read from B itself, so an
    invalid case's B keeps its own (wrong) size.

    The sum is exact in float64 and rounded once to the case dtype (the correctly rounded sum);
    where that rounds, the op adds a bias up to half an ulp from the formula's Wb + Rb.
    """
    g = GATES[case.op]
    h = bias.shape[-1] // (2 * g)
    wb, rb = bias[..., :g * h].astype(np.float64), bias[..., g * h:].astype(np.float64)
    exact = wb + rb
    folded = round_once(exact, bias.dtype)
    if _linear_before_reset(case):
        folded = np.concatenate([folded[..., :2 * h], bias[..., 2 * h:g * h], bias[..., (g + 2) * h:]], axis=-1)
        exact = np.concatenate([exact[..., :2 * h], wb[..., 2 * h:], rb[..., 2 * h:]], axis=-1)
        layout = "[Wbz+Rbz, Wbr+Rbr, Wbh, Rbh]"
    else:
        layout = "Wb + Rb"
    rounded = int(np.count_nonzero(folded.astype(np.float64) != exact))
    if rounded:
        notes.append(f"B folded to {layout}: summed exactly in float64 and rounded once to {case.dtype}; "
                     f"{rounded} of {exact.size} elements rounded (by at most half an ulp), a bias the "
                     f"formula's unsummed Wb + Rb does not have")
    else:
        notes.append(f"B folded to {layout}: summed in float64, exact in {case.dtype} (no element rounded)")
    return np.ascontiguousarray(folded)


def round_once(exact: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """float64 values rounded once (to nearest, ties to even) to ``dtype``.

    numpy rounds float64 to float32/float16 directly; ml_dtypes' bfloat16 goes through float32, so
    for bfloat16 the float32 step rounds to odd (truncate, then set the last bit if inexact), which
    makes the second rounding exact (float32 has 16 more bits than bfloat16).
    """
    dtype = np.dtype(dtype)
    if dtype.itemsize != 2 or dtype == np.float16:
        return exact.astype(dtype)
    f32 = exact.astype(np.float32)
    toward_zero = np.where(np.abs(f32.astype(np.float64)) > np.abs(exact),
                           np.nextafter(f32, np.float32(0)), f32).astype(np.float32)
    bits = toward_zero.view(np.uint32).copy()
    inexact = toward_zero.astype(np.float64) != exact
    bits[inexact] |= np.uint32(1)
    return bits.view(np.float32).astype(dtype)


def _linear_before_reset(case: Case) -> bool:
    return case.op == "GRU" and int(case.attributes.get("linear_before_reset", 0)) != 0


def _numpy_dtype(case: Case) -> np.dtype:
    return case.tensors["X"].dtype if "X" in case.tensors else case.tensors["W"].dtype


def _ascontiguous(arr: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(arr)
