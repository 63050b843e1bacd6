"""OpenVINO translator: a canonical case as an OpenVINO IR (xml + bin) holding the opset's native op.

Two specs. ``openvino-opset5``: RNNSequence-5, GRUSequence-5, LSTMSequence-5 for sequences and
RNNCell, GRUCell-3, LSTMCell-4 for cells. ``openvino-opset1``: LSTMSequence-1 and LSTMCell-1 for
LSTM, RNNCell for RNN cells; GRUCell (opset 3) and the RNN/GRU sequences (opset 5) are later.

The op is built with OpenVINO's Python builders: W, R, B are Constants, as a converter writes them;
X, the initial states and sequence_lengths are Parameters fed at run time. The IR is serialized at
full precision (``compress_to_fp16=False``) and a runtime reads it back from the written files.

Only this module knows OpenVINO's side of SPECS.md: batch-major X [B,S,I], states [B,D,H], Y
[B,D,S,H] (cells: X [B,I], states and outputs [B,H]); the LSTM gate order f,i,c,o; one summed bias
B = Wb + Rb ([D,4H] for GRU with linear_before_reset); sequence_lengths, initial states and B
required; one activation set shared by both directions; lowercase activation names. Each lossy or
notable step is recorded in ``Program.notes``.

Findings this translator rests on (OpenVINO 2026.4.1):

- The LSTMCell-1 and LSTMSequence-1 spec pages list neither P nor input_forget. ``v0::LSTMCell``
  has both (and weights_format) and serializes input_forget and weights_format, but the IR
  serializer drops its input 6, P ("WA for LSTMCellv0, peephole input shall not be serialized"), so
  a non-zero P cannot be written for LSTMCell-1. (The C++ header documents the P order as i, o, f;
  the reference implementation and the ONNX frontend use f, i, o.)
- LSTMSequence-1 is in no opset table of this OpenVINO: there is no builder, and its IR reader
  answers "Opset opset1 doesn't contain the operation with type: LSTMSequence". Its spec page
  repeats LSTMSequence-5's inputs and attributes, so it is written by building LSTMSequence-5 and
  labelling the layer ``version="opset1"``; running it is the runtime's verdict.

Decisions:

- ``layout`` is an ONNX-only attribute: the canonical tensors are layout 0 and the OpenVINO op has
  its own batch-major layout, so a layout=1 case is translated as layout 0, with a note.
- activation_alpha/activation_beta next to relu/sigmoid/tanh are written as given
  (activations_alpha/activations_beta have the same meaning and neither spec gives these three a
  parameter), so the activation cases stay expressible; a runtime that used them would fail.
- An invalid case is translated as faithfully as possible. When an OpenVINO builder refuses the op
  (``validate_and_infer_types``, the check the IR reader also runs), the program records the
  refusal and is written as ``{spec}.build-error.txt``; the adapter raises it as the runtime's
  refusal, so the verdict is ``pass`` (and ``rejected`` for a valid case). A violation with no
  OpenVINO form (an ONNX-only attribute, a B that cannot be split into Wb and Rb) is not
  expressible, since writing the case without it would turn it into a valid one.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import numpy as np

from conformance.case.model import Case
from conformance.case.vocabulary import (
    ACTIVATIONS_PER_DIRECTION,
    ATTRIBUTES,
    DEFAULT_ACTIVATIONS,
    DIRECTIONS,
    GATES,
    OUTPUTS,
    canonical_activation,
    num_directions,
)
from conformance.specs.program import NotExpressible, Program

OPSETS = (1, 5)

#: (opset, op, form) -> the OpenVINO op (spec page name; LSTMCell-4 is v4::LSTMCell, whose page is
#: LSTMCell-1); missing: not in that opset
NATIVE = {
    (5, "RNN", "sequence"): "RNNSequence-5",
    (5, "GRU", "sequence"): "GRUSequence-5",
    (5, "LSTM", "sequence"): "LSTMSequence-5",
    (5, "RNN", "cell"): "RNNCell-3",
    (5, "GRU", "cell"): "GRUCell-3",
    (5, "LSTM", "cell"): "LSTMCell-4",
    (1, "RNN", "cell"): "RNNCell-3",
    (1, "LSTM", "cell"): "LSTMCell-1",
    (1, "LSTM", "sequence"): "LSTMSequence-1",
}
#: the clause each op reports: its spec page, and the class and IR version where they differ
CLAUSES = {
    "RNNSequence-5": "OpenVINO RNNSequence-5",
    "GRUSequence-5": "OpenVINO GRUSequence-5",
    "LSTMSequence-5": "OpenVINO LSTMSequence-5",
    "LSTMSequence-1": "OpenVINO LSTMSequence-1",
    "RNNCell-3": "OpenVINO RNNCell-3 (v0::RNNCell, IR version opset1)",
    "GRUCell-3": "OpenVINO GRUCell-3",
    "LSTMCell-4": "OpenVINO LSTMCell-4 (v4::LSTMCell, IR version opset4; its spec page is LSTMCell-1)",
    "LSTMCell-1": "OpenVINO LSTMCell-1 (v0::LSTMCell, IR version opset1)",
}
#: why opset 1 has no op for the rest
FIRST_OPSET = {
    ("RNN", "sequence"): "RNNSequence first appears in opset 5 (RNNSequence-5)",
    ("GRU", "sequence"): "GRUSequence first appears in opset 5 (GRUSequence-5)",
    ("GRU", "cell"): "GRUCell first appears in opset 3 (GRUCell-3)",
}

#: ops whose spec page makes B optional (the others require it); B is written explicitly either way
B_OPTIONAL = ("GRUCell-3", "LSTMCell-1", "LSTMCell-4")

#: OpenVINO's activation functions (spec: "any combination of relu, sigmoid, tanh")
ACTIVATIONS = ("relu", "sigmoid", "tanh")

#: LSTM gate blocks: OpenVINO f,i,c,o taken from ONNX i,o,f,c (ONNX block index per OpenVINO block)
LSTM_ONNX_TO_OPENVINO = (2, 0, 3, 1)

#: OpenVINO input names (spec pages), for the Parameters
FEED_NAMES = {"X": "X", "initial_h": "initial_hidden_state", "initial_c": "initial_cell_state",
              "sequence_lens": "sequence_lengths"}
#: OpenVINO output names per canonical output (sequence ops: Y, Ho, Co; cells: Ho, Co)
SEQUENCE_OUTPUTS = {"Y": "Y", "Y_h": "Ho", "Y_c": "Co"}
CELL_OUTPUTS = {"Y": "Ho", "Y_h": "Ho", "Y_c": "Co"}

#: file suffix of a program whose IR OpenVINO refused to build (see ``OpenVINOSpec.write``)
BUILD_ERROR_SUFFIX = ".build-error.txt"


class BuildError(Exception):
    """OpenVINO's builders (or serializer) refused the op: the spec's own validation speaking."""


class OpenVINOSpec:
    family = "openvino"
    format = "openvino-ir"
    semantics = "openvino"

    def __init__(self, opset: int):
        self.opset = opset
        self.name = f"openvino-opset{opset}"

    def __repr__(self) -> str:
        return f"OpenVINOSpec({self.opset})"

    # -- the spec surface ------------------------------------------------------------------------

    def native_op(self, case: Case) -> str | None:
        return NATIVE.get((self.opset, case.op, case.form))

    def clause(self, case: Case) -> str:
        op = self.native_op(case)
        return CLAUSES[op] if op else f"OpenVINO opset{self.opset} (no {case.op} {case.form} op)"

    def write(self, program: Program, folder) -> None:
        """``{spec}.xml`` + ``{spec}.bin`` (the IR bytes ov.save_model wrote at translation); for a
        program OpenVINO refused to build, ``{spec}.build-error.txt`` holding the refusal."""
        folder = Path(folder)
        if "build_error" in program.extra:
            path = folder / f"{self.name}{BUILD_ERROR_SUFFIX}"
            path.write_text(program.extra["build_error"] + "\n")
            program.files["model"] = str(path)
            return
        xml, weights = folder / f"{self.name}.xml", folder / f"{self.name}.bin"
        xml.write_bytes(program.model)
        weights.write_bytes(program.extra["weights"])
        program.files["model"] = str(xml)
        program.files["weights"] = str(weights)

    def expressible(self, case: Case) -> str | None:
        """The reason this opset cannot express the case, or None."""
        op = self.native_op(case)
        if op is None:
            return f"{FIRST_OPSET[(case.op, case.form)]}; opset {self.opset} has no {case.op} {case.form} op"
        foreign = [k for k in case.attributes if k not in ATTRIBUTES[case.op]]
        if foreign:
            return (f"{op} has no attribute {foreign[0]!r} (nor has ONNX {case.op}), so the case's "
                    f"violation ({case.violates or foreign[0]}) cannot be written")
        if "layout" in case.attributes and case.layout not in (0, 1):
            return (f"layout is an ONNX-only attribute and {op} has a fixed batch-major layout, so "
                    f"layout={case.attributes['layout']!r} cannot be written")
        reason = _peephole_reason(op, case) or _bias_reason(op, case)
        if reason:
            return reason
        if int(case.attributes.get("input_forget", 0)) != 0 and op != "LSTMCell-1":
            return (f"input_forget=1: {op} has no input_forget attribute"
                    + (" (its spec page lists none; only v0::LSTMCell carries it)" if op == "LSTMSequence-1"
                       else " (only LSTMCell-1 has one)"))
        if case.form == "cell":
            if case.attributes.get("direction", "forward") not in DIRECTIONS:
                return (f"{op} has no direction attribute, so direction={case.attributes['direction']!r} "
                        f"cannot be written (the IR would erase the case's violation)")
            if num_directions(case.direction) == 2:
                return (f"{op} computes one direction; a bidirectional cell needs two cell ops and a "
                        f"concatenation, not the cell op")
            lens = case.tensors.get("sequence_lens")
            if lens is not None and (np.any(lens != 1) or lens.shape != (case.shape["batch_size"],)):
                return (f"{op} has no sequence_lengths input, so sequence_lens {lens.tolist()!r} "
                        f"(other than one 1 per batch entry) cannot be written")
        if case.valid:
            return _activation_reason(op, case)
        names = case.attributes.get("activations") or []
        n = ACTIVATIONS_PER_DIRECTION[case.op]
        if len(names) == 2 * n and [str(a).lower() for a in names[:n]] != [str(a).lower() for a in names[n:]]:
            return (f"{op} has one activation set shared by both directions, so the reverse direction's "
                    f"{list(names[n:])!r} cannot be written (the IR would erase the case's violation)")
        return None

    # -- translation -----------------------------------------------------------------------------

    def translate(self, case: Case) -> Program | NotExpressible:
        reason = self.expressible(case)
        if reason:
            return NotExpressible(self.name, reason)
        op = self.native_op(case)
        notes: list[str] = []
        if "layout" in case.attributes:
            notes.append(f"layout={case.layout} is an ONNX-only attribute, not written: the canonical "
                         f"tensors are layout 0 and {op} has its own batch-major layout")
        if op == "RNNCell-3" and self.opset == 1:
            notes.append("RNNCell's spec page is RNNCell-3 and the opset1 list omits it, but the op is "
                         "v0::RNNCell, registered in OpenVINO's opset1 table and written version=\"opset1\"")
        missing = [n for n in ("X", "W", "R") if n not in case.tensors]
        if missing:
            return _refused(self.name, op, f"{op} requires input {missing[0]} (spec: Required); no "
                            f"{op} can be built without it", notes)
        try:
            inputs = _inputs(op, case, notes)
            attrs = _attributes(op, case, notes)
            xml, weights, outputs, transforms = _build(op, case, inputs, attrs)
        except BuildError as exc:
            built_as = " (built as LSTMSequence-5, whose inputs and attributes it repeats)" \
                if op == "LSTMSequence-1" else ""
            return _refused(self.name, op, f"{exc}{built_as}", notes)
        if op == "LSTMSequence-1":
            xml = _label_opset1(xml)
            notes.append("LSTMSequence-1 has no builder in this OpenVINO (no opset table registers it): "
                         "built as LSTMSequence-5, whose inputs and attributes its spec page repeats, "
                         "and written with version=\"opset1\"")
        if op == "LSTMCell-1":
            notes.append("v0::LSTMCell's default zero P appears in the IR as a Const layer with no edge "
                         "(the serializer drops input 6); OpenVINO reads the cell with zero peepholes")
        feeds = {FEED_NAMES[k]: v for k, v in inputs["feeds"].items()}
        return Program(spec=self.name, format=self.format, model=xml, feeds=feeds, outputs=outputs,
                       notes=notes, extra={"weights": weights, "op": op}, transforms=transforms)


def _refused(spec: str, op: str, message: str, notes: list) -> Program:
    return Program(spec=spec, format="openvino-ir", model=b"", feeds={}, outputs=[], notes=list(notes),
                   extra={"build_error": f"OpenVINO refused to build {op}: {message}", "op": op})


# -- what cannot be said ---------------------------------------------------------------------------

def _peephole_reason(op: str, case: Case) -> str | None:
    p = case.tensors.get("P")
    if p is None or not np.any(p.astype(np.float64)):
        return None
    if op == "LSTMCell-1":
        return ("non-zero P: the LSTMCell-1 spec page has no P input, and OpenVINO's IR serializer "
                "drops input 6 (P) of v0::LSTMCell (\"peephole input shall not be serialized\"), so "
                "peepholes cannot be written in IR")
    if op == "LSTMSequence-1":
        return "non-zero P: the LSTMSequence-1 spec page has no P input (7 inputs, X … B)"
    return f"non-zero P: {op} has no peephole input (peepholes exist only in v0::LSTMCell)"


def _bias_reason(op: str, case: Case) -> str | None:
    bias, g = case.tensors.get("B"), GATES[case.op]
    if bias is None or (bias.ndim >= 1 and bias.shape[-1] % (2 * g) == 0):
        return None
    return (f"B of shape {list(bias.shape)} cannot be split into Wb and Rb (ONNX B is [D, {2 * g}·hidden_size]); "
            f"{op}'s B is their sum, so this B has no OpenVINO form")


def _activation_reason(op: str, case: Case) -> str | None:
    names = case.attributes.get("activations")
    if not names:
        return None
    unknown = [a for a in names if str(a).lower() not in ACTIVATIONS]
    if unknown:
        return (f"activations {unknown!r}: {op} allows relu, sigmoid and tanh only "
                f"(\"any combination of relu, sigmoid, tanh\")")
    n = ACTIVATIONS_PER_DIRECTION[case.op]
    if len(names) == 2 * n:
        fwd, rev = [a.lower() for a in names[:n]], [a.lower() for a in names[n:]]
        if fwd != rev:
            return (f"per-direction activations {fwd} (forward) and {rev} (reverse): {op} has one "
                    f"activation set shared by both directions")
    return None


# -- inputs ----------------------------------------------------------------------------------------

def _inputs(op: str, case: Case, notes: list) -> dict:
    """OpenVINO's tensors: ``feeds`` (Parameters, by canonical name) and ``W``, ``R``, ``B``."""
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


# -- attributes ------------------------------------------------------------------------------------

def _attributes(op: str, case: Case, notes: list) -> dict:
    """Every attribute of the op, written explicitly (an IR attribute left out is not defaulted)."""
    attrs = {"hidden_size": case.hidden_size}
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


# -- the graph -------------------------------------------------------------------------------------

def _build(op: str, case: Case, inputs: dict, attrs: dict):
    """The ov.Model of one op, serialized: (xml bytes, bin bytes, outputs, transforms)."""
    import openvino as ov
    from openvino.exceptions import OVError

    element = _element_type(ov, case.dtype)
    params = {}
    for name, arr in inputs["feeds"].items():
        et = ov.Type.i32 if name == "sequence_lens" else element
        p = ov.opset1.parameter(list(arr.shape), et, name=FEED_NAMES[name])
        p.output(0).get_tensor().set_names({FEED_NAMES[name]})
        params[name] = p
    try:
        w, r, b = (_constant(ov, inputs[k], case.dtype) for k in ("W", "R", "B"))
        node = _make_op(ov, op, params, w, r, b, attrs)
    except (RuntimeError, TypeError, ValueError, OVError) as exc:  # OpenVINO's validation or bindings
        raise BuildError(f"{type(exc).__name__}: {_first_line(exc)}") from None

    wanted = case.outputs or OUTPUTS[case.op]
    names = CELL_OUTPUTS if case.form == "cell" else SEQUENCE_OUTPUTS
    ports = {"Y": 0, "Ho": 1 if case.form == "sequence" else 0, "Co": 2 if case.form == "sequence" else 1}
    for ov_name, port in ports.items():
        if port < node.get_output_size():
            node.output(port).get_tensor().set_names({ov_name})
    results, outputs = [], []
    for canonical in OUTPUTS[case.op]:
        if canonical not in wanted:
            continue
        ov_name = names[canonical]
        res = ov.opset1.result(node.output(ports[ov_name]))
        res.set_friendly_name(canonical)
        results.append(res)
        outputs.append((ov_name, canonical))
    model = ov.Model(results, list(params.values()), case.id)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "model.xml"
            ov.save_model(model, str(path), compress_to_fp16=False)
            xml, weights = path.read_bytes(), path.with_suffix(".bin").read_bytes()
    except (RuntimeError, OSError) as exc:
        raise BuildError(f"{type(exc).__name__}: {_first_line(exc)}") from None
    return xml, weights, outputs, _transforms(case, wanted)


def _make_op(ov, op: str, params: dict, w, r, b, attrs: dict):
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
    if op in ("LSTMSequence-5", "LSTMSequence-1"):
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
        args = [p.output(0) for p in (x, h0, params["initial_c"])] + [c.output(0) for c in (w, r, b)]
        return NodeFactory("opset1").create("LSTMCell", args, {
            "hidden_size": hidden, **common, "input_forget": attrs["input_forget"],
            "weights_format": attrs["weights_format"]})
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


def _numpy_dtype(case: Case) -> np.dtype:
    return case.tensors["X"].dtype if "X" in case.tensors else case.tensors["W"].dtype


def _ascontiguous(arr: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(arr)


def _first_line(exc: Exception) -> str:
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    useful = [ln for ln in lines if not ln.startswith(("Exception from", "Check '", "While validating"))]
    return (useful or lines or [type(exc).__name__])[0][:400]


SPECS = {f"openvino-opset{v}": OpenVINOSpec(v) for v in OPSETS}
