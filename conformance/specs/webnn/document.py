"""WebNN translator: a canonical case as a WebNN graph document, JSON that names the operands, the
operator calls with their options, and the outputs, which any WebNN implementation can replay
(``replay.html`` beside this file does it in a browser; :mod:`conformance.runtimes.webnn` serves
that page to Chromium).

The document (``<spec>.json``)::

    {"schema": "rnn-conformance/webnn-graph/1", "spec": "webnn-cr-20260122",
     "case": <case id>, "source": "cases/gru/basic.yaml:3",
     "operands": {<name>: {"kind": "input" | "constant", "dataType": "float32" | "float16",
                           "shape": [...], "data": <base64 of the little-endian elements>}},
     "operations": [{"op": "gru", "args": ["X", "W", "R", 5, 4],
                     "options": {"bias": "bias", "direction": "both", "layout": "rzn", ...},
                     "outputs": ["gru.Y_h", "gru.Y"]}],
     "outputs": [{"name": "Y", "operand": "gru.Y"}, ...],
     "violations": [...], "notes": [...]}

``args`` are the method's positional arguments: a string names an operand, a number is a scalar.
Option values that name operands are strings too (the keys in vocabulary.OPERAND_OPTIONS);
``activations`` is a list of MLRecurrentNetworkActivation strings. ``violations`` lists, with the
case's file:line, every rule of the operator's method steps the document breaks
(:mod:`conformance.specs.webnn.validate`); an invalid case's document is still written as the case
says, so that the browser's own validation is what is judged.

What the mapping does, by ONNX quantity:

- GRU/LSTM ``form: sequence`` -> ``gru``/``lstm``; ``form: cell`` -> ``gruCell``/``lstmCell`` on X[0]
  with W[0], R[0], the state [B, H] (a cell needs ``hiddenState``/``cellState``: an absent initial
  state is written as a zero constant, noted).
- B = [Wb, Rb] -> ``bias`` = Wb and ``recurrentBias`` = Rb, unsummed (exact).
- Gate layouts: ONNX's GRU z, r, h is ``"zrn"``, LSTM i, o, f, c is ``"iofg"``; the permuted
  layouts ``"rzn"`` and ``"ifgo"`` reorder W, R, bias and recurrentBias block by block (exact;
  peepholeWeight stays i, o, f in every layout, as the spec says). Which layout a case gets is
  the translator's ``gate_layout``: ``"alternate"`` (the default) picks the permuted layout for
  about half the cases, by a stable hash of the case id, so both layouts run on every feature class.
- linear_before_reset -> ``resetAfter`` (WebNN's default is true, ONNX's 0: always written).
- direction forward / reverse / bidirectional -> ``"forward"`` / ``"backward"`` / ``"both"``; the
  sequence output (``returnSequence``, only when Y is requested) is [steps, numDirections, batch,
  hidden], as ONNX's Y, in time order for every direction (since webmachinelearning/webnn#802/#803).
- ONNX's layout 1 (batch-major X, Y and states) -> ``transpose`` operations around the operator.
- sequence_lens all equal to seq_length -> dropped (noted): it means what no lengths mean.
- float32, float16 -> ``"float32"``, ``"float16"``.

What WebNN cannot say is NotExpressible with the reason: RNN (no plain RNN operator), clip,
sequence_lens shorter than seq_length, input_forget = 1, activations other than relu, sigmoid and
tanh, different activations per direction, activation_alpha/beta, float64 and bfloat16, a
bidirectional cell, layouts other than 0 and 1, and, for invalid cases, values WebNN's IDL has no
way to write (an unknown direction, a missing X/W/R, a non-integer hidden_size).
"""

from __future__ import annotations

import base64
import json
import re
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

import conformance.specs.webnn.vocabulary as v
from conformance.case.model import Case
from conformance.case.vocabulary import ATTRIBUTES, OUTPUTS, canonical_activation
from conformance.specs.program import LAYOUT1_TO_CANONICAL, NotExpressible, Program, foreign_attributes
from conformance.specs.webnn.validate import validate_document

GATE_LAYOUTS = ("default", "permuted", "alternate")


class WebNNSpec:
    family = "webnn"
    format = "webnn"

    def __init__(self, version: str, gate_layout: str = "alternate"):
        if version not in v.VERSIONS:
            raise ValueError(f"version={version!r} should be one of {sorted(v.VERSIONS)}")
        if gate_layout not in GATE_LAYOUTS:
            raise ValueError(f"gate_layout={gate_layout!r} should be one of {GATE_LAYOUTS}")
        self.version = version
        self.name = f"webnn-{version}"
        self.semantics = v.PROFILE[version]
        self.gate_layout = gate_layout

    def __repr__(self) -> str:
        return f"WebNNSpec({self.version!r}, gate_layout={self.gate_layout!r})"

    def clause(self, case: Case) -> str:
        op = v.OPS.get((case.op, case.form))
        if op is None:
            return f"WebNN ({v.VERSIONS[self.version][0]}): no {case.op} operator"
        return f"WebNN {op}() ({v.VERSIONS[self.version][0]}, {v.section(op)})"

    # -- what WebNN cannot say ------------------------------------------------------------------

    def expressible(self, case: Case) -> str | None:
        """Why WebNN (this version) cannot express the case (every reason, joined), or None."""
        reasons = []
        attrs = case.attributes
        if case.op == "RNN":
            return ("RNN: WebNN has no plain RNN operator, only gru/gruCell and lstm/lstmCell "
                    f"({v.section('gru')}, {v.section('lstm')})")
        if case.dtype not in v.DATA_TYPES:
            reasons.append(f"{case.dtype}: WebNN's recurrent operators take float32 or float16 only "
                           "(their 'Tensor limits' tables)")
        foreign = [k for k in attrs if k not in ATTRIBUTES[case.op] and k != "layout"]
        if foreign:
            reasons.append(f"{case.op} has no WebNN counterpart of the attribute(s) {foreign!r}")
        if "clip" in attrs:
            reasons.append(f"clip={attrs['clip']!r}: WebNN's gru/lstm have no clip option")
        if case.op == "LSTM" and "input_forget" in attrs:
            try:
                coupled = int(attrs["input_forget"]) != 0
            except (TypeError, ValueError):
                coupled = True
            if coupled:
                reasons.append("input_forget=1: WebNN's lstm has no coupled input and forget gates")
        direction = case.direction
        if direction not in v.DIRECTION:
            reasons.append(f"direction={direction!r}: MLRecurrentNetworkDirection is 'forward', "
                           "'backward' or 'both' only")
        if case.layout not in (0, 1):
            reasons.append(f"layout={attrs.get('layout')!r}: only ONNX's layouts 0 and 1 have a WebNN "
                           "arrangement (1 through transpose operations)")
        hidden = attrs.get("hidden_size")
        if hidden is not None and (not isinstance(hidden, int) or isinstance(hidden, bool)):
            reasons.append(f"hidden_size={hidden!r}: hiddenSize is an unsigned long")
        for name in ("X", "W", "R"):
            if name not in case.tensors:
                reasons.append(f"{name} absent: {name} is a required argument of every WebNN recurrent "
                               "operator, so there is no call without it")
        lens = case.tensors.get("sequence_lens")
        if lens is not None:
            lens = np.asarray(lens)
            full = lens.shape == (case.shape["batch_size"],) and bool(np.all(lens == case.shape["seq_length"]))
            if not full:
                reasons.append(f"sequence_lens {lens.tolist()}: WebNN has no sequence lengths (every "
                               "batch entry runs all steps); only lengths all equal to seq_length can "
                               "be written, by leaving them out")
        if case.form == "cell":
            if direction == "bidirectional":
                reasons.append("bidirectional cell: gruCell/lstmCell compute one direction")
            leading = [f"{n} {list(a.shape)}" for n in ("W", "R", "B", "P", "initial_h", "initial_c")
                       if (a := case.tensors.get(n)) is not None and a.ndim >= 1 and a.shape[0] != 1]
            if leading and direction != "bidirectional":
                reasons.append(f"{', '.join(leading)}: gruCell/lstmCell take no direction axis, so a "
                               "leading axis other than 1 cannot be written")
        reasons += self._activation_reasons(case)
        return "; ".join(reasons) or None

    def _activation_reasons(self, case: Case) -> list[str]:
        attrs, reasons = case.attributes, []
        given = attrs.get("activations")
        k = v.FUNCTIONS[case.op]
        if given is not None:
            names = [canonical_activation(n) for n in given]
            unknown = [g for g, n in zip(given, names) if n is None]
            if unknown:
                reasons.append(f"activations {unknown!r} are not activations WebNN can name")
            else:
                outside = sorted({n for n in names if n is not None and n not in v.ENUM_ACTIVATIONS})
                if outside:
                    reasons.append(f"activations {outside}: MLRecurrentNetworkActivation is 'relu', "
                                   "'sigmoid' or 'tanh' only")
                sets = [tuple(names[i:i + k]) for i in range(0, len(names), k)]
                if len(names) % k == 0 and len(set(sets)) > 1:
                    reasons.append(f"activations {names} differ per direction: WebNN takes one list of "
                                   f"{k} for both directions")
                elif len(names) not in (k, 2 * k) and case.valid:
                    reasons.append(f"{len(names)} activations: WebNN takes a list of {k}")
        for key in ("activation_alpha", "activation_beta"):
            if key in attrs:
                reasons.append(f"{key}: MLRecurrentNetworkActivation (relu, sigmoid, tanh) takes no "
                               "parameters")
        return reasons

    # -- translation ------------------------------------------------------------------------------

    def translate(self, case: Case) -> Program | NotExpressible:
        reason = foreign_attributes(self, case) or self.expressible(case)
        if reason:
            return NotExpressible(self.name, reason)
        return _Translation(self, case).build()

    def write(self, program: Program, folder) -> None:
        """Write the graph document (everything it needs is inside it) into ``folder``."""
        path = Path(folder) / f"{self.name}.json"
        path.write_bytes(program.model)
        program.files["model"] = str(path)

    def gate_layout_of(self, case: Case) -> str:
        """The gate layout this translator writes for ``case``."""
        if self.gate_layout == "default":
            return v.DEFAULT_LAYOUT[case.op]
        permuted = next(name for name in v.LAYOUTS[case.op] if name != v.DEFAULT_LAYOUT[case.op])
        if self.gate_layout == "permuted":
            return permuted
        return permuted if zlib.crc32(case.id.encode()) % 2 else v.DEFAULT_LAYOUT[case.op]


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


SPECS = {spec.name: spec for spec in (WebNNSpec(version) for version in v.VERSIONS)}
