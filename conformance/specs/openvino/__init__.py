"""OpenVINO translator: a canonical case as an OpenVINO IR (xml + bin) holding the opset's native op.

Two specs. ``openvino-opset5``: RNNSequence-5, GRUSequence-5, LSTMSequence-5 for sequences and
RNNCell, GRUCell-3, LSTMCell-4 for cells. ``openvino-opset1``: LSTMSequence-1 and LSTMCell-1 for
LSTM, RNNCell for RNN cells; GRUCell (opset 3) and the RNN/GRU sequences (opset 5) are later.

The op is built with OpenVINO's Python builders (:mod:`.build`): W, R, B are Constants, as a
converter writes them; X, the initial states and sequence_lengths are Parameters fed at run time.
The IR is serialized at full precision (``compress_to_fp16=False``) and a runtime reads it back
from the written files.

Only this package knows OpenVINO's side of the specs (docs/specs.md#openvino): batch-major X [B,S,I],
states [B,D,H], Y [B,D,S,H] (cells: X [B,I], states and outputs [B,H]); the LSTM gate order f,i,c,o;
one summed bias B = Wb + Rb ([D,4H] for GRU with linear_before_reset); sequence_lengths, initial
states and B required; one activation set shared by both directions; lowercase activation names
(:mod:`.vocabulary`, :mod:`.inputs`). Each lossy or notable step is recorded in ``Program.notes``;
what cannot be written is :mod:`.expressible`'s. What the translator rests on (OpenVINO's own
behaviour where its spec pages are silent or wrong) and its decisions: docs/openvino.md.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from conformance.case.model import Case
from conformance.case.vocabulary import (
    ACTIVATIONS_PER_DIRECTION,
    ATTRIBUTES,
    DIRECTIONS,
    num_directions,
)
from conformance.specs.openvino.build import BuildError, _attributes, _build, _label_opset1, _refused
from conformance.specs.openvino.expressible import _activation_reason, _bias_reason, _peephole_reason
from conformance.specs.openvino.inputs import _inputs
from conformance.specs.openvino.vocabulary import BUILD_ERROR_SUFFIX, CLAUSES, FEED_NAMES, FIRST_OPSET, NATIVE, OPSETS
from conformance.specs.program import NotExpressible, Program, foreign_attributes


def fed_weights(inputs: dict, form: dict | None, notes: list) -> dict:
    """``inputs`` (:func:`_inputs`) with W, R, B (and P) moved into the feeds under ``weights=inputs``:
    Parameters fed at run time instead of Constants."""
    if (form or {}).get("weights") != "inputs":
        return inputs
    moved = [k for k in ("W", "R", "B", "P") if k in inputs]
    inputs = dict(inputs, feeds=dict(inputs["feeds"]))
    for k in moved:
        inputs["feeds"][k] = inputs.pop(k)
    notes.append(f"weights=inputs: {', '.join(moved)} written as Parameters fed at run time, not Constants")
    return inputs


def write_refusal(name: str, program: Program, folder: Path) -> bool:
    """A program OpenVINO refused to build, written as ``{spec}.build-error.txt`` holding the
    refusal (the runtimes raise it as the verdict's message); False for a program that built."""
    if "build_error" not in program.extra:
        return False
    path = folder / f"{name}{BUILD_ERROR_SUFFIX}"
    path.write_text(program.extra["build_error"] + "\n")
    program.files["model"] = str(path)
    return True


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
        if write_refusal(self.name, program, folder):
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
        reason = self.peephole_reason(op, case) or _bias_reason(op, case)
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

    def peephole_reason(self, op: str, case: Case) -> str | None:
        """Why a non-zero P cannot be written for ``op`` (in IR, for no op), or None."""
        return _peephole_reason(op, case)

    # -- translation -----------------------------------------------------------------------------

    def _start(self, case: Case) -> tuple[str, list[str], Program | None] | NotExpressible:
        """What every OpenVINO translation starts with: the op, its first notes, and the refusal
        where an input the op requires is missing."""
        reason = foreign_attributes(self, case) or self.expressible(case)
        if reason:
            return NotExpressible(self.name, reason)
        op = self.native_op(case)
        assert op is not None  # expressible() gave a reason where there is no op
        notes: list[str] = []
        if "layout" in case.attributes:
            notes.append(f"layout={case.layout} is an ONNX-only attribute, not written: the canonical "
                         f"tensors are layout 0 and {op} has its own batch-major layout")
        if op == "RNNCell-3" and self.opset == 1:
            notes.append("RNNCell's spec page is RNNCell-3 and the opset1 list omits it, but the op is "
                         "v0::RNNCell, registered in OpenVINO's opset1 table and written version=\"opset1\"")
        missing = [n for n in ("X", "W", "R") if n not in case.tensors]
        refused = _refused(self.name, op, f"{op} requires input {missing[0]} (spec: Required); no {op} can be "
                           f"built without it", notes, self.format) if missing else None
        return op, notes, refused

    #: the program forms this family writes (conformance/runtimes/forms.py)
    forms = {"shape": ("dynamic",), "weights": ("inputs",)}

    def translate(self, case: Case, form: dict | None = None) -> Program | NotExpressible:
        started = self._start(case)
        if isinstance(started, NotExpressible):
            return started
        op, notes, refused = started
        if refused is not None:
            return refused
        try:
            inputs = fed_weights(_inputs(op, case, notes), form, notes)
            attrs = _attributes(op, case, notes)
            xml, weights, outputs, transforms = _build(op, case, inputs, attrs, form)
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
        if (form or {}).get("shape") == "dynamic":
            notes.append("shape=dynamic: the batch and sequence dimensions of the Parameters written as -1")
        feeds = {FEED_NAMES.get(k, k): v for k, v in inputs["feeds"].items()}
        return Program(spec=self.name, format=self.format, model=xml, feeds=feeds, outputs=outputs,
                       notes=notes, extra={"weights": weights, "op": op}, transforms=transforms)


SPECS = {f"openvino-opset{v}": OpenVINOSpec(v) for v in OPSETS}

# the same ops built in memory (no IR file): a spec each, since the carrier changes what can be said
from conformance.specs.openvino.memory import SPECS as _IN_MEMORY  # noqa: E402 - it builds on OpenVINOSpec

SPECS.update(_IN_MEMORY)

