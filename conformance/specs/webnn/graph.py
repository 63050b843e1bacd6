"""One case as a WebNN graph document (conformance/specs/webnn/document.py describes the document and
the mapping): its operands, its operator calls with their options, its outputs, and the violations
of the method steps it breaks (conformance/specs/webnn/validate.py)."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

import conformance.specs.webnn.vocabulary as v
from conformance.case.model import Case
from conformance.case.vocabulary import OUTPUTS, canonical_activation
from conformance.specs.program import LAYOUT1_TO_CANONICAL, Program
from conformance.specs.webnn.validate import validate_document

if TYPE_CHECKING:
    from conformance.specs.webnn.document import WebNNSpec


class _Translation:
    def __init__(self, spec: WebNNSpec, case: Case):
        self.spec, self.case = spec, case
        self.notes: list[str] = []
        self.operands: dict = {}
        self.operations: list = []
        self.dtype = v.DATA_TYPES[case.dtype]

    def operand(self, name: str, kind: str, array: np.ndarray) -> str:
        array = np.ascontiguousarray(np.asarray(array).astype(np.dtype(self.case.dtype).newbyteorder("<")))
        self.operands[name] = {"kind": kind, "dataType": self.dtype, "shape": [int(s) for s in array.shape],
                               "data": base64.b64encode(array.tobytes()).decode()}
        return name

    def build(self) -> Program:
        case, spec = self.case, self.spec
        op = v.OPS[(case.op, case.form)]
        t = dict(case.tensors)
        hidden = self.hidden_size()
        layout = spec.gate_layout_of(case)
        order = v.LAYOUTS[case.op][layout]
        g = v.GATES[case.op]
        if "sequence_lens" in t:
            self.notes.append(f"sequence_lens {np.asarray(t.pop('sequence_lens')).tolist()} all equal "
                              "seq_length: left out (WebNN has no lengths; every entry runs all steps)")
        if layout != v.DEFAULT_LAYOUT[case.op]:
            self.notes.append(f"layout {layout!r}: W, R, bias and recurrentBias gate blocks reordered from "
                              f"ONNX's {v.DEFAULT_LAYOUT[case.op]!r} order (exact)")
        cell = case.form == "cell"
        if cell:
            self.notes.append(f"cell form: {op} on X[0] [batch, input] with W[0], R[0] and the states [batch, hidden]")
        W, R = (_reorder(t[n], g, hidden, order, axis=-2) for n in ("W", "R"))
        if cell:
            W, R = _drop_direction(W, 2), _drop_direction(R, 2)
        options: dict = {}
        B = t.get("B")
        if B is not None:
            halves = _split_bias(B, g, hidden)
            if halves is None:  # an invalid B: halves of it, so that WebNN sees the wrong shapes
                B = np.asarray(B)
                cut = (B.shape[-1] + 1) // 2 if B.ndim else 0
                self.notes.append(f"B {list(B.shape)} is not [directions, 2*{g}*hidden]: its last axis "
                                  f"split at {cut} into bias and recurrentBias as it is (neither can be "
                                  f"[directions, {g}*hidden] unless B was)")
                wb, rb = (B[..., :cut], B[..., cut:]) if B.ndim else (B, B)
                if cell:
                    wb, rb = _drop_direction(wb, 1), _drop_direction(rb, 1)
                options["bias"] = self.operand("bias", "constant", wb)
                options["recurrentBias"] = self.operand("recurrentBias", "constant", rb)
            else:
                wb, rb = (_reorder(x, g, hidden, order, axis=-1) for x in halves)
                if cell:
                    wb, rb = _drop_direction(wb, 1), _drop_direction(rb, 1)
                options["bias"] = self.operand("bias", "constant", wb)
                options["recurrentBias"] = self.operand("recurrentBias", "constant", rb)
                self.notes.append("B = [Wb, Rb] -> bias = Wb, recurrentBias = Rb (unsummed)")
        if case.op == "LSTM" and t.get("P") is not None:
            P = t["P"]
            options["peepholeWeight"] = self.operand("peepholeWeight", "constant",
                                                     _drop_direction(P, 1) if cell else P)
        if case.op == "GRU":
            lbr = case.attributes.get("linear_before_reset", 0)
            options["resetAfter"] = bool(int(lbr) != 0)
            self.notes.append(f"linear_before_reset={lbr} -> resetAfter {str(options['resetAfter']).lower()}")
        activations = self.activations()
        if activations is not None:
            options["activations"] = activations
        options["layout"] = layout
        wanted = case.outputs or OUTPUTS[case.op]
        x = t["X"]
        batch_major = case.layout == 1 and not cell
        if case.layout == 1 and cell:
            self.notes.append("layout=1: a cell has no time axis; X [batch, input] and the states "
                              "[batch, hidden] either way")
        if cell:
            args: list[str | int] = [self.operand("X", "input", _drop_direction(x, 2)),
                                     self.operand("W", "constant", W), self.operand("R", "constant", R)]
            b = case.shape["batch_size"]
            for name, arg in (("initial_h", "hiddenState"), ("initial_c", "cellState")):
                if name == "initial_c" and case.op != "LSTM":
                    continue
                state = t.get(name)
                if state is None:
                    self.notes.append(f"{name} absent: {op}'s {arg} is required, written as a zero "
                                      f"constant [{b}, {hidden}] (ONNX: zeros)")
                    args.append(self.operand(name, "constant", np.zeros((b, hidden), case.dtype)))
                else:
                    args.append(self.operand(name, "input", _drop_direction(state, 2)))
            args.append(hidden)
        else:
            x_name = self.input_maybe_batch_major("X", x, batch_major, (1, 0, 2))
            args = [x_name, self.operand("W", "constant", W), self.operand("R", "constant", R),
                    int(case.shape["seq_length"]), hidden]
            for name, key in (("initial_h", "initialHiddenState"), ("initial_c", "initialCellState")):
                if t.get(name) is not None:
                    options[key] = self.input_maybe_batch_major(name, t[name], batch_major, (1, 0, 2))
            options["direction"] = v.DIRECTION[case.direction]
            options["returnSequence"] = "Y" in wanted
        returned = list(v.RETURNS[op])
        if not cell and options.get("returnSequence"):
            returned.append("Y")
        call_outputs = [f"{op}.{r}" for r in returned]
        self.operations.append({"op": op, "args": args, "options": _ordered(options, v.OPTIONS[op]),
                                "outputs": call_outputs})
        produced = dict(zip(returned, call_outputs))
        outputs = []
        transforms: dict[str, Mapping[str, Sequence[int]]] = {}
        for name in OUTPUTS[case.op]:
            if name not in wanted:
                continue
            if cell:
                operand = produced["Y_h" if name == "Y" else name]
                transforms[name] = {"reshape": [1, 1, case.shape["batch_size"], hidden] if name == "Y"
                                    else [1, case.shape["batch_size"], hidden]}
            elif batch_major:
                operand = f"{name}.batch_major"
                perm = (2, 0, 1, 3) if name == "Y" else (1, 0, 2)
                self.operations.append({"op": "transpose", "args": [produced[name]],
                                        "options": {"permutation": list(perm)}, "outputs": [operand]})
                transforms[name] = LAYOUT1_TO_CANONICAL[name]
            else:
                operand = produced[name]
            outputs.append({"name": name, "operand": operand})
        if cell and "Y" in wanted and "Y_h" in wanted:
            self.notes.append("cell form: Y and Y_h are the same operand (the new hidden state)")
        if batch_major:
            self.notes.append("layout=1: X and the initial states are graph inputs in batch-major "
                              "order, transposed to WebNN's [steps, batch, ...] / [directions, batch, "
                              "hidden] before the call; the outputs are transposed back to batch-major")
        source = f"{case.source.file}:{case.source.line}" if case.source else ""
        document = {"schema": v.SCHEMA, "spec": spec.name, "case": case.id, "source": source,
                    "operands": self.operands, "operations": self.operations, "outputs": outputs}
        where = f"{source}: " if source else ""
        document["violations"] = [f"{where}{x}" for x in validate_document(document)]
        document["notes"] = self.notes
        model = _dumps(document).encode()
        return Program(spec=spec.name, format=spec.format, model=model, feeds={},
                       outputs=[(o["name"], o["name"]) for o in outputs], notes=list(self.notes),
                       transforms=transforms)

    def input_maybe_batch_major(self, name: str, array, batch_major: bool, perm) -> str:
        if not batch_major:
            return self.operand(name, "input", array)
        self.operand(f"{name}.batch_major", "input", np.transpose(array, perm))
        self.operations.append({"op": "transpose", "args": [f"{name}.batch_major"],
                                "options": {"permutation": list(perm)}, "outputs": [name]})
        return name

    def hidden_size(self) -> int:
        if "hidden_size" in self.case.attributes:
            return int(self.case.attributes["hidden_size"])
        r = self.case.tensors["R"]
        hidden = int(r.shape[-1]) if r.ndim else 0
        self.notes.append(f"hidden_size not given: hiddenSize = {hidden}, R's last axis")
        return hidden

    def activations(self):
        """The activations option (None: the operator's default), one list for both directions."""
        case = self.case
        given = case.attributes.get("activations")
        if given is None:
            return None
        k = v.FUNCTIONS[case.op]
        names = [canonical_activation(n) for n in given]
        if len(names) == 2 * k:
            self.notes.append(f"activations {names}: the same set for both directions, written once "
                              "(WebNN takes one list for both)")
            names = names[:k]
        return [v.ENUM_ACTIVATIONS[n] for n in names]


def _ordered(options: dict, order) -> dict:
    return {k: options[k] for k in order if k in options}


def _drop_direction(array, rank: int) -> np.ndarray:
    """A cell's tensor: the case's [1, ...] without its direction axis (anything else as given, for
    the operator to refuse)."""
    array = np.asarray(array)
    return array[0] if array.ndim == rank + 1 and array.shape[0] == 1 else array


def _reorder(array, gates: int, hidden: int, order, axis: int) -> np.ndarray:
    """Gate blocks along ``axis`` in ``order`` (indices of ONNX's blocks); an axis that is not
    gates*hidden (an invalid case) is left as given."""
    array = np.asarray(array)
    if array.ndim == 0 or array.shape[axis] != gates * hidden or list(order) == list(range(gates)):
        return array
    blocks = np.split(array, gates, axis=axis)
    return np.concatenate([blocks[k] for k in order], axis=axis)


def _split_bias(B, gates: int, hidden: int):
    B = np.asarray(B)
    if B.ndim != 2 or B.shape[1] != 2 * gates * hidden:
        return None
    return B[:, :gates * hidden], B[:, gates * hidden:]


def _dumps(document: dict) -> str:
    """Indented JSON with each list of numbers on one line."""
    text = json.dumps(document, indent=1)
    return re.sub(r"\[\s+([-+0-9.eE,\s]+?)\s+\]",
                  lambda m: "[" + ", ".join(x.strip() for x in m.group(1).split(",")) + "]", text) + "\n"
