"""The op built with OpenVINO's Python builders and serialized as IR at full precision: its
attributes written explicitly, its outputs and their way back to the canonical layout."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from conformance.case.model import Case
from conformance.case.vocabulary import (
    ACTIVATIONS_PER_DIRECTION,
    DEFAULT_ACTIVATIONS,
    OUTPUTS,
    canonical_activation,
)
from conformance.specs.openvino.inputs import _linear_before_reset
from conformance.specs.openvino.vocabulary import ACTIVATIONS, CELL_OUTPUTS, FEED_NAMES, SEQUENCE_OUTPUTS
from conformance.specs.program import Program


class BuildError(Exception):
    """OpenVINO's builders (or serializer) refused the op: the spec's own validation speaking."""


def _refused(spec: str, op: str, message: str, notes: list, format: str = "openvino-ir") -> Program:
    return Program(spec=spec, format=format, model=b"", feeds={}, outputs=[], notes=list(notes),
                   extra={"build_error": f"OpenVINO refused to build {op}: {message}", "op": op})


def _attributes(op: str, case: Case, notes: list) -> dict:
    """Every attribute of the op, written explicitly (an IR attribute left out is not defaulted)."""
    attrs: dict[str, Any] = {"hidden_size": case.hidden_size}
    if case.form == "sequence":
        attrs["direction"] = case.direction
    names = list(case.attributes.get("activations") or [])
    alpha = [float(np.float32(a)) for a in case.attributes.get("activation_alpha", [])]
    beta = [float(np.float32(v)) for v in case.attributes.get("activation_beta", [])]
    if not names:
        names = [a.lower() for a in DEFAULT_ACTIVATIONS[case.op]]
    n = ACTIVATIONS_PER_DIRECTION[case.op]
    if len(names) == 2 * n and [a.lower() for a in names[:n]] == [a.lower() for a in names[n:]]:
        names = names[:n]
        alpha, beta = _shared_half(alpha), _shared_half(beta)
        notes.append(f"bidirectional activations equal in both directions: one shared set written "
                     f"{[a.lower() for a in names]}")
    lowered = [str(a).lower() if canonical_activation(a) else str(a) for a in names]
    if [str(a) for a in names] != lowered:
        notes.append(f"activation names written in OpenVINO's lowercase spelling {lowered}")
    attrs["activations"] = lowered
    attrs["activations_alpha"] = alpha
    attrs["activations_beta"] = beta
    if (alpha or beta) and all(a in ACTIVATIONS for a in lowered):
        notes.append("activations_alpha/activations_beta written as given; relu, sigmoid and tanh take "
                     "no parameter in ONNX or OpenVINO, so they should change nothing")
    if "clip" in case.attributes:
        attrs["clip"] = float(np.float32(case.attributes["clip"]))
        if attrs["clip"] == 0.0:
            notes.append("clip=0 written: OpenVINO reads clip 0 as \"not applied\"")
    else:
        attrs["clip"] = 0.0
        notes.append("clip absent: written as clip=0, which OpenVINO reads as \"not applied\"")
    if case.op == "GRU":
        attrs["linear_before_reset"] = _linear_before_reset(case)
    if op == "LSTMCell-1":
        attrs["input_forget"] = int(case.attributes.get("input_forget", 0)) != 0
        attrs["weights_format"] = "fico"
        if attrs["input_forget"]:
            notes.append("input_forget=1 written as v0::LSTMCell's input_forget attribute, which the "
                         "LSTMCell-1 spec page does not list (the reference implementation: it = 1 - ft)")
    return attrs


def _shared_half(values: list) -> list:
    half = len(values) // 2
    if values and len(values) % 2 == 0 and values[:half] == values[half:]:
        return values[:half]
    return values


def _build(op: str, case: Case, inputs: dict, attrs: dict, form: dict | None = None):
    """The ov.Model of one op, serialized: (xml bytes, bin bytes, outputs, transforms). ``form``: the
    program form (conformance/runtimes/forms.py): ``shape=dynamic`` writes the batch and sequence
    dimensions as -1, ``weights=inputs`` makes W, R and B Parameters (fed, in ``inputs["feeds"]``)."""
    import openvino as ov

    form = form or {}
    wanted = case.outputs or OUTPUTS[case.op]
    constants = {k: inputs[k] for k in ("W", "R", "B") if k in inputs}
    model, outputs = build_model(op, case.op, case.form, case.dtype, wanted, inputs["feeds"], constants, attrs,
                                 case.id, dynamic=dynamic_sizes(case) if form.get("shape") == "dynamic" else None)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "model.xml"
            ov.save_model(model, str(path), compress_to_fp16=False)
            xml, weights = path.read_bytes(), path.with_suffix(".bin").read_bytes()
    except (RuntimeError, OSError) as exc:
        raise BuildError(f"{type(exc).__name__}: {_first_line(exc)}") from None
    return xml, weights, outputs, _transforms(case, wanted)


def dynamic_sizes(case: Case) -> dict[str, int]:
    """The sizes ``shape=dynamic`` writes as -1: {"S": seq_length, "B": batch_size}."""
    return {"S": case.shape["seq_length"], "B": case.shape["batch_size"]}


def partial_shape(feed: str, shape: tuple, form: str, sizes: dict[str, int] | None) -> list[int]:
    """A Parameter's shape, with its batch and sequence axes -1 under ``shape=dynamic`` (``sizes``):
    OpenVINO's layout is batch-major (X [B,S,I], a cell's X [B,I], states [B,...], lengths [B]); an
    axis is made dynamic only where the case's own size stands there (an invalid case keeps its
    deliberately wrong dimension)."""
    dims = list(shape)
    if sizes is None:
        return dims
    axes = {0: "B"} if feed != "X" or form == "cell" else {0: "B", 1: "S"}
    if feed in WEIGHT_FEEDS:
        axes = {}
    return [-1 if i in axes and d == sizes[axes[i]] else d for i, d in enumerate(dims)]


#: the inputs ``weights=inputs`` feeds (Parameters named as OpenVINO's spec pages name the inputs)
WEIGHT_FEEDS = ("W", "R", "B", "P")


def build_model(op: str, case_op: str, form: str, dtype: str, wanted, feeds: dict, constants: dict, attrs: dict,
                name: str, native: bool = False, dynamic: dict[str, int] | None = None):
    """The ov.Model holding one ``op`` (OpenVINO's op name, ``LSTMCell-1``), and its outputs
    [(OpenVINO output name, canonical name)]: the ``feeds`` (by canonical name) as Parameters of their
    own shapes (with ``dynamic``'s batch and sequence sizes as -1), ``constants`` (W, R, B and, for
    LSTMCell-1 only, P) as Constants; a weight in ``feeds`` instead is a Parameter (``weights=inputs``).
    ``native``: see :func:`_make_op`. Raises :class:`BuildError` with OpenVINO's own message where
    its builders refuse the op."""
    import openvino as ov
    from openvino.exceptions import OVError

    element = _element_type(ov, dtype)
    params = {}
    for feed, arr in feeds.items():
        et = ov.Type.i32 if feed == "sequence_lens" else element
        fed = FEED_NAMES.get(feed, feed)
        shape = tuple(getattr(arr, "shape", arr))  # an array, or its shape (a recipe's)
        p = ov.opset1.parameter(ov.PartialShape(partial_shape(feed, shape, form, dynamic)), et, name=fed)
        p.output(0).get_tensor().set_names({fed})
        params[feed] = p
    try:
        w, r, b = (params[k] if k in params else _constant(ov, constants[k], dtype) for k in ("W", "R", "B"))
        p = params["P"] if "P" in params else _constant(ov, constants["P"], dtype) if "P" in constants else None
        node = _make_op(ov, op, params, w, r, b, attrs, p, native)
    except (RuntimeError, TypeError, ValueError, OVError) as exc:  # OpenVINO's validation or bindings
        raise BuildError(f"{type(exc).__name__}: {_first_line(exc)}") from None

    names = CELL_OUTPUTS if form == "cell" else SEQUENCE_OUTPUTS
    ports = {"Y": 0, "Ho": 1 if form == "sequence" else 0, "Co": 2 if form == "sequence" else 1}
    for ov_name, port in ports.items():
        if port < node.get_output_size():
            node.output(port).get_tensor().set_names({ov_name})
    results, outputs = [], []
    for canonical in OUTPUTS[case_op]:
        if canonical not in wanted:
            continue
        ov_name = names[canonical]
        res = ov.opset1.result(node.output(ports[ov_name]))
        res.set_friendly_name(canonical)
        results.append(res)
        outputs.append((ov_name, canonical))
    return ov.Model(results, [v for k, v in params.items() if k not in WEIGHT_FEEDS]
                    + [params[k] for k in WEIGHT_FEEDS if k in params], name), outputs


def _make_op(ov, op: str, params: dict, w, r, b, attrs: dict, p=None, native: bool = False):
    """The op from OpenVINO's builders. ``native``: LSTMSequence-1 from opset1's own table (in
    memory), not built as LSTMSequence-5 (for the IR, which is then relabelled opset1)."""
    x, h0 = params["X"], params["initial_h"]
    common = {"activations": attrs["activations"], "activations_alpha": attrs["activations_alpha"],
              "activations_beta": attrs["activations_beta"], "clip": attrs["clip"]}
    hidden = attrs["hidden_size"]
    if op == "RNNSequence-5":
        return ov.opset5.rnn_sequence(x, h0, params["sequence_lens"], w, r, b, hidden, attrs["direction"],
                                      **common)
    if op == "GRUSequence-5":
        return ov.opset5.gru_sequence(x, h0, params["sequence_lens"], w, r, b, hidden, attrs["direction"],
                                      linear_before_reset=attrs["linear_before_reset"], **common)
    if op == "LSTMSequence-5" or (op == "LSTMSequence-1" and not native):
        return ov.opset5.lstm_sequence(x, h0, params["initial_c"], params["sequence_lens"], w, r, b, hidden,
                                       attrs["direction"], **common)
    if op == "RNNCell-3":
        return ov.opset3.rnn_cell(x, h0, w, r, b, hidden, **common)
    if op == "GRUCell-3":
        return ov.opset3.gru_cell(x, h0, w, r, b, hidden, linear_before_reset=attrs["linear_before_reset"],
                                  **common)
    if op == "LSTMCell-4":
        return ov.opset4.lstm_cell(x, h0, params["initial_c"], w, r, b, hidden, **common)
    if op == "LSTMCell-1":
        # ov.opset1.lstm_cell fixes input_forget to false; the node factory sets every attribute.
        from openvino.utils.node_factory import NodeFactory
        # P (input 6, peepholes f,i,o) is given only in memory: the IR serializer drops it
        args = [n.output(0) for n in (x, h0, params["initial_c"])] + [c.output(0) for c in (w, r, b)]
        args += [p.output(0)] if p is not None else []
        return NodeFactory("opset1").create("LSTMCell", args, {
            "hidden_size": hidden, **common, "input_forget": attrs["input_forget"],
            "weights_format": attrs["weights_format"]})
    if op == "LSTMSequence-1":  # native: asked of opset1's table, as a user building the model would
        from openvino.utils.node_factory import NodeFactory
        args = [n.output(0) for n in (x, h0, params["initial_c"], params["sequence_lens"])]
        return NodeFactory("opset1").create("LSTMSequence", args + [c.output(0) for c in (w, r, b)], {
            "hidden_size": hidden, "direction": attrs["direction"], **common})
    raise ValueError(f"no OpenVINO builder for {op!r}")


def _transforms(case: Case, wanted) -> dict:
    """OpenVINO outputs back to canonical layout 0."""
    if case.form == "cell":
        b, h = case.shape["batch_size"], case.hidden_size
        return {n: {"reshape": (1, 1, b, h) if n == "Y" else (1, b, h)} for n in wanted}
    return {n: {"transpose": (2, 1, 0, 3) if n == "Y" else (1, 0, 2)} for n in wanted}


def _label_opset1(xml: bytes) -> bytes:
    text, count = re.subn(r'type="LSTMSequence" version="opset5"', 'type="LSTMSequence" version="opset1"',
                          xml.decode())
    if count != 1:
        raise ValueError(f"expected one LSTMSequence layer in the IR, found {count}")
    return text.encode()


def _constant(ov, arr: np.ndarray, dtype: str):
    if dtype == "bfloat16" and arr.dtype.itemsize == 2 and arr.dtype != np.float16:
        tensor = ov.Tensor(ov.Type.bf16, list(arr.shape))
        tensor.data.view(np.uint16)[...] = np.ascontiguousarray(arr).view(np.uint16)
        return ov.op.Constant(tensor, shared_memory=False)
    return ov.op.Constant(np.ascontiguousarray(arr), shared_memory=False)


def _element_type(ov, dtype: str):
    return {"float32": ov.Type.f32, "float16": ov.Type.f16, "float64": ov.Type.f64,
            "bfloat16": ov.Type.bf16}[dtype]


def _first_line(exc: Exception) -> str:
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    useful = [ln for ln in lines if not ln.startswith(("Exception from", "Check '", "While validating"))]
    return (useful or lines or [type(exc).__name__])[0][:400]
