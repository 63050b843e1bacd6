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

import zlib
from pathlib import Path

import numpy as np

import conformance.specs.webnn.vocabulary as v
from conformance.case.model import Case
from conformance.case.vocabulary import ATTRIBUTES, canonical_activation
from conformance.specs.program import NotExpressible, Program, foreign_attributes
from conformance.specs.webnn.graph import _Translation

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


SPECS = {spec.name: spec for spec in (WebNNSpec(version) for version in v.VERSIONS)}
